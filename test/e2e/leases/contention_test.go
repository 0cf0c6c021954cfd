package leases

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

// contender takes and releases a node's lease over and over, as another
// operator with its own holder identity would (upstream's protocol: create,
// or take over an ended lease, each write guarded by the resourceVersion).
// While it holds the lease, no remediation of the node may exist or appear.
type contender struct {
	node, nhc string
	hold      time.Duration

	mu         sync.Mutex
	held       int
	refused    int
	violations []string
}

func (c *contender) run(t *testing.T, ctx context.Context) {
	leases := env.Kube.CoordinationV1().Leases(leaseNamespace)
	for ctx.Err() == nil {
		l, err := c.acquire(ctx)
		if err != nil || l == nil {
			c.count(&c.refused)
			// The other operator's pace: it polls for the lease.
			time.Sleep(100 * time.Millisecond)
			continue
		}
		c.count(&c.held)
		c.check(t, "a remediation existed when the lease was taken")
		// The other operator's work on the node, for as long as it holds the lease.
		time.Sleep(c.hold)
		c.check(t, "a remediation appeared while the lease was held")
		_ = leases.Delete(context.Background(), l.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &l.ResourceVersion}})
		// A gap between its leases, in which the controller may take the node.
		time.Sleep(150 * time.Millisecond)
	}
}

// acquire takes the lease, or returns nil when someone else holds it.
func (c *contender) acquire(ctx context.Context) (*coordinationv1.Lease, error) {
	leases := env.Kube.CoordinationV1().Leases(leaseNamespace)
	now := metav1.NewMicroTime(time.Now())
	spec := coordinationv1.LeaseSpec{HolderIdentity: ptr.To(maintenance), LeaseDurationSeconds: ptr.To[int32](2), AcquireTime: &now, RenewTime: &now}
	l, err := leases.Get(ctx, "node-"+c.node, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "node-" + c.node, Namespace: leaseNamespace}, Spec: spec}, metav1.CreateOptions{})
	}
	if err != nil {
		return nil, err
	}
	if l.Spec.RenewTime != nil && l.Spec.LeaseDurationSeconds != nil &&
		time.Now().Before(l.Spec.RenewTime.Add(time.Duration(*l.Spec.LeaseDurationSeconds)*time.Second)) {
		return nil, nil
	}
	l.Spec = spec
	return leases.Update(ctx, l, metav1.UpdateOptions{})
}

func (c *contender) check(t *testing.T, violation string) {
	if n := len(env.Remediations(t, c.nhc)[c.node]); n > 0 {
		c.mu.Lock()
		c.violations = append(c.violations, fmt.Sprintf("%s: %d", violation, n))
		c.mu.Unlock()
	}
}

func (c *contender) count(n *int) {
	c.mu.Lock()
	*n++
	c.mu.Unlock()
}

func TestAnotherHolderAndTheControllerNeverBothHoldTheNode(t *testing.T) {
	t.Parallel()
	const scenario = "contention"
	env.CreateTemplate(t, scenario, nil)
	nodes := env.CreateNodes(t, scenario, 3)
	ensureLeaseNamespace(t)
	t.Cleanup(func() { releaseLease(nodes[0]) })
	// An escalation step of 5 minutes: the lease is not overdue during the test.
	env.CreateNHC(t, scenario, func(s *v1alpha1.NodeHealthCheckSpec) {
		s.RemediationTemplate = nil
		s.EscalatingRemediations = []v1alpha1.EscalatingRemediation{{RemediationTemplate: framework.TemplateRef(scenario), Timeout: metav1.Duration{Duration: 5 * time.Minute}}}
	})
	c := &contender{node: nodes[0], nhc: scenario, hold: time.Second}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); c.run(t, ctx) }()
	// A failed wait ends the test early: the other holder stops with it.
	t.Cleanup(func() { stop(); <-done })
	// The node fails while the other holder has its lease.
	framework.Eventually(t, 30*time.Second, "the other holder to take the lease", func() bool { return holder(t, nodes[0]) == maintenance })
	env.Fail(t, time.Hour, nodes[0])

	framework.Eventually(t, 30*time.Second, "remediated in a gap between the other holder's leases", func() bool {
		return len(env.Remediations(t, scenario)[nodes[0]]) == 1
	})
	// From now on our lease is renewed: the other holder never gets it.
	c.mu.Lock()
	heldBefore := c.held
	c.mu.Unlock()
	framework.Consistently(t, 6*time.Second, "the lease kept by the controller", func() bool {
		c.mu.Lock()
		held := c.held
		c.mu.Unlock()
		return held == heldBefore && holder(t, nodes[0]) == "NodeHealthCheck-"+scenario
	})
	stop()
	<-done

	c.mu.Lock()
	defer c.mu.Unlock()
	assert.Empty(t, c.violations)
	assert.Positive(t, heldBefore, "the other holder had the lease before")
	assert.Equal(t, heldBefore, c.held, "and never again once the controller took it")
	require.Positive(t, c.refused)
	assert.Equal(t, "NodeHealthCheck-"+scenario, holder(t, nodes[0]))
	assert.Len(t, env.Remediations(t, scenario)[nodes[0]], 1)
}
