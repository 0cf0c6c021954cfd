package election_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/nodehealthcheck/nhc-controller/pkg/election"
)

// kind is which elector a candidate runs.
type kind string

const (
	ours      kind = "ours"
	clientGos kind = "client-go"
)

func (k kind) other() kind {
	if k == ours {
		return clientGos
	}
	return ours
}

// term is one candidate's time as leader, from OnStartedLeading to its
// context's end (zero while it leads), on the bubble's clock.
type term struct {
	who        *candidate
	start, end time.Time
}

// terms records every candidate's terms, and every start while another's
// term had not ended: two leaders at once. It is test/integration's, of
// TestOurElectorAndClientGosNeverBothLead, keeping each term's start and
// end for the bounds too. The check is causal, not by the clock: a
// context's end is set by the elector itself, however late a goroutine
// notices it.
type terms struct {
	mu       sync.Mutex
	all      []*term
	open     map[*candidate]context.Context
	overlaps []string
	// started is closed, and replaced, when a term starts.
	started chan struct{}
}

func newTerms() *terms {
	return &terms{open: map[*candidate]context.Context{}, started: make(chan struct{})}
}

// lead is both electors' OnStartedLeading: it records the term until its
// context ends.
func (r *terms) lead(leading context.Context, who *candidate) {
	r.mu.Lock()
	for other, ctx := range r.open {
		if ctx.Err() == nil {
			r.overlaps = append(r.overlaps, fmt.Sprintf("%s started leading at %s while %s led",
				who, time.Now().Format(time.TimeOnly+".000"), other))
		}
	}
	t := &term{who: who, start: time.Now()}
	r.all = append(r.all, t)
	r.open[who] = leading
	close(r.started)
	r.started = make(chan struct{})
	r.mu.Unlock()
	<-leading.Done()
	r.mu.Lock()
	defer r.mu.Unlock()
	t.end = time.Now()
	delete(r.open, who)
}

// leader is the term under way, nil between terms.
func (r *terms) leader() *term {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, t := range slices.Backward(r.all) {
		if ctx, ok := r.open[t.who]; ok && ctx.Err() == nil {
			return t
		}
	}
	return nil
}

// next waits for the first term that starts at or after since, until
// deadline; nil if none did.
func (r *terms) next(since, deadline time.Time) *term {
	for {
		r.mu.Lock()
		for _, t := range r.all {
			if !t.start.Before(since) {
				r.mu.Unlock()
				return t
			}
		}
		started := r.started
		r.mu.Unlock()
		select {
		case <-started:
		case <-time.After(time.Until(deadline)):
			return nil
		}
	}
}

// ended is when a term ended; zero if it has not.
func (r *terms) ended(t *term) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return t.end
}

func (r *terms) snapshot() (all []term, overlaps []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, t := range r.all {
		all = append(all, *t)
	}
	return all, slices.Clone(r.overlaps)
}

// candidate is one replica of either elector, running until stopped.
type candidate struct {
	name string
	kind kind
	link *link
	stop context.CancelFunc
	done chan struct{}
}

func (c *candidate) String() string { return c.name }

// fleet is the candidates of both kinds on one Lease, with the same
// timings, in one synctest bubble.
type fleet struct {
	t      *testing.T
	server *leaseServer
	terms  *terms
	// releasing are the kinds whose stopped leader releases the lease
	// (ReleaseOnCancel) rather than let it lapse.
	releasing map[kind]bool
	// skewed sets ours' clocks a minute ahead or behind, in turn.
	skewed     bool
	candidates []*candidate
	started    int
}

const interopLease = "interop"

func newFleet(t *testing.T, releasing map[kind]bool, skewed bool) *fleet {
	return &fleet{t: t, server: newLeaseServer(), terms: newTerms(), releasing: releasing, skewed: skewed}
}

// start runs a new candidate of kind k.
func (f *fleet) start(k kind) *candidate {
	f.started++
	c := &candidate{name: fmt.Sprintf("%s-%d", k, f.started), kind: k,
		link: f.server.link(metav1.NamespaceDefault), done: make(chan struct{})}
	run := f.oursRun
	if k == clientGos {
		run = f.clientGosRun
	}
	elect := run(c)
	// Both electors log through their context's logger: the faults would
	// fill the test's output.
	ctx, stop := context.WithCancel(klog.NewContext(context.Background(), logr.Discard()))
	c.stop = stop
	go func() {
		defer close(c.done)
		elect(ctx)
	}()
	f.candidates = append(f.candidates, c)
	return c
}

// skew is ours' clocks' error when the fleet is skewed. Neither elector
// trusts the record's timestamps, written on another clock: each measures
// the lease from when it saw the record change, on its own clock, which
// client-go's package documentation says tolerates any clock skew (though
// not any skew rate: a clock that runs slow or fast, which this does not
// test). A minute is four leases: an elector that compared the record's
// renewTime with its own clock would take a held lease at once when a
// minute ahead, and a lapsed one a minute late when a minute behind.
const skew = time.Minute

func (f *fleet) oursRun(c *candidate) func(context.Context) {
	var clk clock.WithDelayedExecution = clock.RealClock{}
	if f.skewed {
		offset := skew
		if f.started%2 == 0 {
			offset = -skew
		}
		clk = skewedClock{offset: offset}
	}
	e, err := election.New(election.Config{
		Leases: c.link, Namespace: metav1.NamespaceDefault, Name: interopLease, Identity: c.name,
		LeaseDuration: leaseDuration, RenewDeadline: renewDeadline, RetryPeriod: retryPeriod,
		ReleaseOnCancel: f.releasing[ours], Clock: clk,
		Callbacks: election.Callbacks{
			OnStartedLeading: func(leading context.Context) { f.terms.lead(leading, c) },
			OnStoppedLeading: func() {},
		},
	})
	require.NoError(f.t, err)
	return e.Run
}

func (f *fleet) clientGosRun(c *candidate) func(context.Context) {
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: interopLease},
			Client:     c.link,
			LockConfig: resourcelock.ResourceLockConfig{Identity: c.name},
		},
		LeaseDuration: leaseDuration, RenewDeadline: renewDeadline, RetryPeriod: retryPeriod,
		ReleaseOnCancel: f.releasing[clientGos], Name: interopLease,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(leading context.Context) { f.terms.lead(leading, c) },
			OnStoppedLeading: func() {},
		},
	})
	require.NoError(f.t, err)
	return le.Run
}

// count is how many candidates of kind k run.
func (f *fleet) count(k kind) int {
	n := 0
	for _, c := range f.candidates {
		if c.kind == k {
			n++
		}
	}
	return n
}

// fill starts candidates of kind k until perKind run.
func (f *fleet) fill(k kind) {
	for f.count(k) < perKind {
		f.start(k)
	}
}

// remove stops a candidate and waits for its Run to return.
func (f *fleet) remove(c *candidate) {
	c.stop()
	<-c.done
	f.candidates = slices.DeleteFunc(f.candidates, func(o *candidate) bool { return o == c })
}

// stopAll stops every candidate, all at once: a standby stopped after the
// leader would take the lease it released. The bubble ends with no
// goroutine left.
func (f *fleet) stopAll() {
	for _, c := range f.candidates {
		c.stop()
	}
	for _, c := range f.candidates {
		<-c.done
	}
	f.candidates = nil
	// The terms' ends are recorded.
	synctest.Wait()
}
