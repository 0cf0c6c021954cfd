package integration

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/nodehealthcheck/nhc-controller/pkg/election"
	"github.com/nodehealthcheck/nhc-controller/pkg/kubeclient"
)

// The timings of both electors in the mixed fleet: short, so that many
// hand-overs fit in the test. A leader cut off gives up a retry period and
// a renew deadline after its last renewal began (client-go's: after that
// renewal's answer), 1.5 s before a standby that saw the renewal can take
// the lease: that margin is all that keeps two leaders apart, for either
// elector, and it must outlast the stalls of a loaded 2-core machine
// running the other packages' API servers beside this test.
const (
	mixedLeaseDuration = 5 * time.Second
	mixedRenewDeadline = 3 * time.Second
	mixedRetryPeriod   = 500 * time.Millisecond
)

// terms records every candidate's terms as leader, from its work's start
// to its work's context ending, and every start while another candidate's
// work context had not ended: both leading at once. The check is causal,
// not by the clock: a context's end is set by the elector itself, however
// late a goroutine notices it.
type terms struct {
	mu sync.Mutex
	// open are the terms under way, by candidate: their work's contexts.
	open map[string]context.Context
	// led counts the terms of each kind; overlaps says each start while
	// another led.
	led      map[string]int
	overlaps []string
	// last is the candidate that led last, for the hand-overs between the
	// kinds.
	last      string
	handovers map[string]int
}

func newTerms() *terms {
	return &terms{open: map[string]context.Context{}, led: map[string]int{}, handovers: map[string]int{}}
}

func (t *terms) lead(leading context.Context, who string) {
	t.mu.Lock()
	for other, ctx := range t.open {
		if ctx.Err() == nil {
			t.overlaps = append(t.overlaps, fmt.Sprintf("%s started leading at %s while %s led", who, time.Now().Format(time.StampMilli), other))
		}
	}
	t.open[who] = leading
	t.led[kindOf(who)]++
	if t.last != "" && kindOf(t.last) != kindOf(who) {
		t.handovers[kindOf(t.last)+" → "+kindOf(who)]++
	}
	t.last = who
	t.mu.Unlock()
	<-leading.Done()
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.open, who)
}

// leading says whether a candidate leads now.
func (t *terms) leading(who string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	ctx, ok := t.open[who]
	return ok && ctx.Err() == nil
}

// cut makes a candidate's requests fail while it is set: a partition
// between it and the API server.
type cut struct{ on atomic.Bool }

func (c *cut) wrap(config *rest.Config) *rest.Config {
	config = rest.CopyConfig(config)
	config.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			if c.on.Load() {
				return nil, errors.New("partitioned")
			}
			return rt.RoundTrip(req)
		})
	})
	return config
}

// candidate is one replica of either elector, running until stopped.
type candidate struct {
	name string
	cut  *cut
	stop context.CancelFunc
	done chan struct{}
}

func startOurs(t *testing.T, ctx context.Context, name, lease string, rec *terms) *candidate {
	c := &candidate{name: name, cut: &cut{}, done: make(chan struct{})}
	clients, err := kubeclient.New(c.cut.wrap(cluster.Config))
	require.NoError(t, err)
	e, err := election.New(election.Config{
		Leases: clients.Leases("default"), Namespace: "default", Name: lease, Identity: name,
		LeaseDuration: mixedLeaseDuration, RenewDeadline: mixedRenewDeadline, RetryPeriod: mixedRetryPeriod, ReleaseOnCancel: true,
		Callbacks: election.Callbacks{OnStartedLeading: func(leading context.Context) { rec.lead(leading, name) }, OnStoppedLeading: func() {}},
	})
	require.NoError(t, err)
	ctx, c.stop = context.WithCancel(ctx)
	go func() { defer close(c.done); e.Run(ctx) }()
	return c
}

func startClientGos(t *testing.T, ctx context.Context, name, lease string, rec *terms) *candidate {
	c := &candidate{name: name, cut: &cut{}, done: make(chan struct{})}
	kube, err := kubernetes.NewForConfig(c.cut.wrap(cluster.Config))
	require.NoError(t, err)
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{
			LeaseMeta: metav1.ObjectMeta{Namespace: "default", Name: lease}, Client: kube.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: name},
		},
		LeaseDuration: mixedLeaseDuration, RenewDeadline: mixedRenewDeadline, RetryPeriod: mixedRetryPeriod, ReleaseOnCancel: true,
		Callbacks: leaderelection.LeaderCallbacks{OnStartedLeading: func(leading context.Context) { rec.lead(leading, name) }, OnStoppedLeading: func() {}},
	})
	require.NoError(t, err)
	ctx, c.stop = context.WithCancel(ctx)
	go func() { defer close(c.done); le.Run(ctx) }()
	return c
}

// Our elector and client-go's, on one Lease (a rolling update from a
// release that used client-go's, or a mixed fleet), never both lead: for a
// minute, the leader of the day, of either kind, is stopped (it releases
// the lease) or cut off from the API server (its lease lapses) and
// replaced by a new candidate, and no two terms overlap. Both kinds take
// the lease from the other.
func TestOurElectorAndClientGosNeverBothLead(t *testing.T) {
	if testing.Short() {
		t.Skip("a minute of hand-overs")
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	rec := newTerms()
	const lease = "mixed-fleet"
	starts := []func(*testing.T, context.Context, string, string, *terms) *candidate{startOurs, startClientGos}
	var fleet []*candidate
	for i := range 4 {
		fleet = append(fleet, starts[i%2](t, ctx, fmt.Sprintf("%s-%d", []string{"ours", "client-go"}[i%2], i), lease, rec))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	deadline := time.Now().Add(time.Minute)
	for n := len(fleet); time.Now().Before(deadline); n++ {
		time.Sleep(time.Duration(500+rng.IntN(2000)) * time.Millisecond)
		i := slices.IndexFunc(fleet, func(c *candidate) bool { return rec.leading(c.name) })
		if i < 0 {
			continue
		}
		c := fleet[i]
		if rng.IntN(2) == 0 {
			// The leader stopped: it releases the lease.
			c.stop()
			<-c.done
		} else {
			// The leader cut off: it stops leading after its renew
			// deadline, its lease lapses, and its process restarts.
			c.cut.on.Store(true)
			select {
			case <-c.done:
			case <-time.After(2 * mixedLeaseDuration):
				t.Errorf("%s still runs %v after it was cut off", c.name, 2*mixedLeaseDuration)
			}
			c.stop()
		}
		fleet[i] = starts[n%2](t, ctx, fmt.Sprintf("%s-%d", []string{"ours", "client-go"}[n%2], n), lease, rec)
	}
	for _, c := range fleet {
		c.stop()
		<-c.done
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	t.Logf("terms: %v; hand-overs between the kinds: %v", rec.led, rec.handovers)
	assert.Empty(t, rec.overlaps, "two candidates led at once")
	assert.Positive(t, rec.handovers["ours → client-go"], "client-go's took the lease from ours")
	assert.Positive(t, rec.handovers["client-go → ours"], "ours took the lease from client-go's")
}

func kindOf(who string) string {
	if len(who) >= 4 && who[:4] == "ours" {
		return "ours"
	}
	return "client-go"
}
