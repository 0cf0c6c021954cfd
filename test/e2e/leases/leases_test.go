package leases

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

const (
	leaseNamespace = "medik8s-leases"
	maintenance    = "node-maintenance-operator"
)

// lease reads a node's lease, or nil.
func lease(t *testing.T, node string) *coordinationv1.Lease {
	t.Helper()
	l, err := env.Kube.CoordinationV1().Leases(leaseNamespace).Get(context.Background(), "node-"+node, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	require.NoError(t, err)
	return l
}

func holder(t *testing.T, node string) string {
	if l := lease(t, node); l != nil {
		return ptr.Deref(l.Spec.HolderIdentity, "")
	}
	return ""
}

// ensureLeaseNamespace creates the lease namespace, as the manifests do.
func ensureLeaseNamespace(t *testing.T) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: leaseNamespace}}
	_, err := env.Kube.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
}

// takeLease takes a node's lease for another operator, as
// node-maintenance-operator does before it drains a node.
func takeLease(t *testing.T, node, holder string, duration time.Duration) {
	t.Helper()
	ensureLeaseNamespace(t)
	now := metav1.NewMicroTime(time.Now())
	_, err := env.Kube.CoordinationV1().Leases(leaseNamespace).Create(context.Background(), &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "node-" + node, Namespace: leaseNamespace},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity: ptr.To(holder), LeaseDurationSeconds: ptr.To(int32(duration / time.Second)),
			AcquireTime: &now, RenewTime: &now, LeaseTransitions: ptr.To[int32](0),
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { releaseLease(node) })
}

func releaseLease(node string) {
	_ = env.Kube.CoordinationV1().Leases(leaseNamespace).Delete(context.Background(), "node-"+node, metav1.DeleteOptions{})
}

// retryUpdate changes a node's lease, as its holder would.
func retryUpdate(node string, change func(*coordinationv1.Lease)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		l, err := env.Kube.CoordinationV1().Leases(leaseNamespace).Get(context.Background(), "node-"+node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		change(l)
		_, err = env.Kube.CoordinationV1().Leases(leaseNamespace).Update(context.Background(), l, metav1.UpdateOptions{})
		return err
	})
}

func skippedForLease(t *testing.T, nhc, node string) int {
	n := 0
	for _, e := range env.Events(t, nhc) {
		if e.Reason == "RemediationSkipped" && strings.HasSuffix(e.Message, "Skipped remediation of node: "+node+", because node lease is already taken") {
			n++
		}
	}
	return n
}

func TestLeaseHeldByMaintenanceBlocksUntilItExpires(t *testing.T) {
	t.Parallel()
	const scenario = "held-expires"
	env.CreateTemplate(t, scenario, nil)
	nodes := env.CreateNodes(t, scenario, 3)
	takeLease(t, nodes[0], maintenance, 8*time.Second)
	env.CreateNHC(t, scenario, nil)
	env.Fail(t, time.Hour, nodes[0])

	framework.Eventually(t, 10*time.Second, "the NodeHealthCheck says the node waits for its lease", func() bool {
		s := env.GetNHC(t, scenario).Status
		return strings.Contains(s.Reason, "1 for their node lease") && s.Phase == v1alpha1.PhaseEnabled && skippedForLease(t, scenario, nodes[0]) == 1
	})
	require.Empty(t, env.Remediations(t, scenario), "no remediation while node-maintenance-operator holds the node")
	require.Equal(t, maintenance, holder(t, nodes[0]))

	framework.Eventually(t, 15*time.Second, "remediated once the lease expired", func() bool { return len(env.Remediations(t, scenario)[nodes[0]]) == 1 })
	l := lease(t, nodes[0])
	require.NotNil(t, l)
	assert.Equal(t, "NodeHealthCheck-"+scenario, ptr.Deref(l.Spec.HolderIdentity, ""), "taken over")
	assert.Equal(t, int32(1), ptr.Deref(l.Spec.LeaseTransitions, 0))
	assert.Equal(t, int32(4), ptr.Deref(l.Spec.LeaseDurationSeconds, 0), "3s + 1s")
	remediation := env.Remediations(t, scenario)[nodes[0]][0]
	assert.False(t, remediation.GetCreationTimestamp().Time.Before(l.Spec.AcquireTime.Truncate(time.Second)), "created after the lease was taken")
	assert.Equal(t, 1, skippedForLease(t, scenario, nodes[0]), "one event while the lease was held")
}

func TestLeaseReleasedByMaintenanceUnblocksAtOnce(t *testing.T) {
	t.Parallel()
	const scenario = "held-released"
	env.CreateTemplate(t, scenario, nil)
	nodes := env.CreateNodes(t, scenario, 3)
	takeLease(t, nodes[0], maintenance, time.Hour)
	env.CreateNHC(t, scenario, nil)
	env.Fail(t, time.Hour, nodes[0])
	framework.Eventually(t, 10*time.Second, "waiting for the lease", func() bool {
		return strings.Contains(env.GetNHC(t, scenario).Status.Reason, "for their node lease")
	})
	framework.Consistently(t, 3*time.Second, "no remediation while the lease is held", func() bool { return len(env.Remediations(t, scenario)) == 0 })

	// Maintenance ends: the lease goes, and the event brings the remediation.
	releaseLease(nodes[0])
	framework.Eventually(t, 5*time.Second, "remediated after the release", func() bool { return len(env.Remediations(t, scenario)[nodes[0]]) == 1 })
	assert.Equal(t, "NodeHealthCheck-"+scenario, holder(t, nodes[0]))
}

func TestLeaseRenewedWhileRemediatingAndReleasedAfter(t *testing.T) {
	t.Parallel()
	const scenario = "renew-release"
	env.CreateTemplate(t, scenario, nil)
	nodes := env.CreateNodes(t, scenario, 3)
	env.CreateNHC(t, scenario, func(s *v1alpha1.NodeHealthCheckSpec) {
		// An escalation step holds the lease for its timeout + 1s; a
		// classic remediation would be overdue after 3 × 3s here.
		s.RemediationTemplate = nil
		s.EscalatingRemediations = []v1alpha1.EscalatingRemediation{{RemediationTemplate: framework.TemplateRef(scenario), Order: 0, Timeout: metav1.Duration{Duration: 5 * time.Minute}}}
	})
	env.Fail(t, time.Hour, nodes[0])
	framework.Eventually(t, 10*time.Second, "remediated with the lease taken", func() bool {
		return len(env.Remediations(t, scenario)[nodes[0]]) == 1 && holder(t, nodes[0]) == "NodeHealthCheck-"+scenario
	})
	taken := lease(t, nodes[0])
	assert.Equal(t, int32(301), ptr.Deref(taken.Spec.LeaseDurationSeconds, 0), "the step's timeout + 1s")

	// Recovery: the resource goes, then the lease.
	env.Recover(t, nodes[0])
	framework.Eventually(t, 10*time.Second, "resource deleted and lease released", func() bool {
		return len(env.Remediations(t, scenario)) == 0 && lease(t, nodes[0]) == nil
	})
}

func TestLeaseRenewal(t *testing.T) {
	t.Parallel()
	const scenario = "renewal"
	env.CreateTemplate(t, scenario, nil)
	nodes := env.CreateNodes(t, scenario, 3)
	env.CreateNHC(t, scenario, nil)
	env.Fail(t, time.Hour, nodes[0])
	framework.Eventually(t, 10*time.Second, "remediated", func() bool { return len(env.Remediations(t, scenario)[nodes[0]]) == 1 })
	// The node stays unhealthy: its step runs, and its lease is renewed
	// every 2s (half of 3s + 1s), past the end of its first 4s, before it
	// is overdue (9s after it was taken). A node that recovered is not
	// renewed (lapse_test.go).
	first := lease(t, nodes[0])
	require.NotNil(t, first)
	firstEnd := first.Spec.RenewTime.Add(time.Duration(*first.Spec.LeaseDurationSeconds) * time.Second)
	// A lease gone ends the wait too: the checks below say so.
	framework.Eventually(t, 30*time.Second, "the lease renewed after its first term ended", func() bool {
		l := lease(t, nodes[0])
		return l == nil || l.Spec.RenewTime.After(firstEnd)
	})
	l := lease(t, nodes[0])
	require.NotNil(t, l, "still held")
	assert.Equal(t, "NodeHealthCheck-"+scenario, ptr.Deref(l.Spec.HolderIdentity, ""))
	assert.True(t, l.Spec.RenewTime.After(first.Spec.RenewTime.Time), "renewed")
	assert.Equal(t, first.Spec.AcquireTime.Time, l.Spec.AcquireTime.Time, "acquire time kept")
	assert.True(t, time.Now().Before(l.Spec.RenewTime.Add(time.Duration(*l.Spec.LeaseDurationSeconds)*time.Second)), "in force")
	assert.Len(t, env.Remediations(t, scenario)[nodes[0]], 1)
}

func TestOverdueLeaseEndsClassicRemediation(t *testing.T) {
	t.Parallel()
	const scenario = "overdue"
	env.CreateTemplate(t, scenario, nil)
	nodes := env.CreateNodes(t, scenario, 3)
	env.CreateNHC(t, scenario, nil)
	env.Fail(t, time.Hour, nodes[0])
	framework.Eventually(t, 10*time.Second, "remediated", func() bool { return len(env.Remediations(t, scenario)[nodes[0]]) == 1 })
	acquired := lease(t, nodes[0]).Spec.AcquireTime.Time

	// 3 × 3s after the lease was taken: timed out, lease deleted.
	framework.Eventually(t, 20*time.Second, "timed out for the overdue lease", func() bool {
		resources := env.Remediations(t, scenario)[nodes[0]]
		if len(resources) != 1 || lease(t, nodes[0]) != nil {
			return false
		}
		_, annotated := resources[0].GetAnnotations()[v1alpha1.TimedOutAnnotation]
		entries := env.GetNHC(t, scenario).Status.UnhealthyNodes
		return annotated && len(entries) == 1 && len(entries[0].Remediations) == 1 && entries[0].Remediations[0].TimedOut != nil
	})
	timedOut := env.GetNHC(t, scenario).Status.UnhealthyNodes[0].Remediations[0].TimedOut.Time
	assert.False(t, timedOut.Before(acquired.Add(9*time.Second).Truncate(time.Second)), "not before 3 × 3s")
	// Nothing else happens: no lease taken again, no other resource.
	framework.Consistently(t, 4*time.Second, "the lease is not taken again", func() bool {
		return lease(t, nodes[0]) == nil && len(env.Remediations(t, scenario)[nodes[0]]) == 1
	})
	assert.True(t, hasEvent(t, scenario, corev1.EventTypeWarning, "RemediationTimedOut", "its node lease is overdue"), "a RemediationTimedOut event says why")
}

func TestLeaseOfAnotherHolderIsNotReleased(t *testing.T) {
	t.Parallel()
	const scenario = "not-ours"
	env.CreateTemplate(t, scenario, nil)
	nodes := env.CreateNodes(t, scenario, 3)
	env.CreateNHC(t, scenario, func(s *v1alpha1.NodeHealthCheckSpec) { s.HealthyDelay = &metav1.Duration{Duration: -time.Second} })
	env.Fail(t, time.Hour, nodes[0])
	framework.Eventually(t, 10*time.Second, "remediated", func() bool { return len(env.Remediations(t, scenario)[nodes[0]]) == 1 })
	// Someone else's lease now (upstream's "lease not ours" scenario).
	require.NoError(t, retryUpdate(nodes[0], func(l *coordinationv1.Lease) { l.Spec.HolderIdentity = ptr.To("someone-else") }))
	env.Recover(t, nodes[0])
	env.UpdateNode(t, nodes[0], func(n *corev1.Node) {
		n.Annotations = map[string]string{v1alpha1.ManuallyConfirmedHealthyAnnotation: ""}
	})
	framework.Eventually(t, 10*time.Second, "resource deleted, status cleared", func() bool {
		return len(env.Remediations(t, scenario)) == 0 && len(env.GetNHC(t, scenario).Status.UnhealthyNodes) == 0
	})
	framework.Consistently(t, 2*time.Second, "someone else's lease stays", func() bool { return holder(t, nodes[0]) == "someone-else" })
}
