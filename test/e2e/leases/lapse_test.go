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
	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

// maintenanceHolder and maintenanceDuration are how node-maintenance-operator
// requests a node's lease.
const (
	maintenanceHolder   = "node-maintenance"
	maintenanceDuration = 3600
)

// takeOverAsMaintenance requests a node's lease as node-maintenance-operator
// does: it gets a lease that is missing or has ended, and never one in force.
func takeOverAsMaintenance(node string) bool {
	leases := env.Kube.CoordinationV1().Leases(leaseNamespace)
	now := metav1.NewMicroTime(time.Now())
	spec := coordinationv1.LeaseSpec{HolderIdentity: ptr.To(maintenanceHolder), LeaseDurationSeconds: ptr.To[int32](maintenanceDuration), AcquireTime: &now, RenewTime: &now}
	l, err := leases.Get(context.Background(), "node-"+node, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = leases.Create(context.Background(), &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "node-" + node, Namespace: leaseNamespace}, Spec: spec}, metav1.CreateOptions{})
		return err == nil
	}
	if err != nil || (l.Spec.RenewTime != nil && l.Spec.LeaseDurationSeconds != nil &&
		time.Now().Before(l.Spec.RenewTime.Add(time.Duration(*l.Spec.LeaseDurationSeconds)*time.Second))) {
		return false
	}
	l.Spec = spec
	_, err = leases.Update(context.Background(), l, metav1.UpdateOptions{})
	return err == nil
}

// remediatedWithLease creates a scenario of three nodes and its
// NodeHealthCheck, fails the first node, and waits for its remediation and
// lease; it returns the nodes.
func remediatedWithLease(t *testing.T, scenario string) []string {
	t.Helper()
	env.CreateTemplate(t, scenario, nil)
	nodes := env.CreateNodes(t, scenario, 3)
	env.CreateNHC(t, scenario, nil)
	env.Fail(t, time.Hour, nodes[0])
	framework.Eventually(t, 10*time.Second, "remediated with the lease taken", func() bool {
		return len(env.Remediations(t, scenario)[nodes[0]]) == 1 && holder(t, nodes[0]) == "NodeHealthCheck-"+scenario
	})
	return nodes
}

// hasEvent tells whether a NodeHealthCheck has an event of a type and reason
// whose message contains a text.
func hasEvent(t *testing.T, nhc, eventType, reason, text string) bool {
	for _, e := range env.Events(t, nhc) {
		if e.Type == eventType && e.Reason == reason && strings.Contains(e.Message, text) {
			return true
		}
	}
	return false
}

// TestARunningRemediationsLeaseIsRenewed: upstream's lease-extension check,
// black-box. Nothing but time passes after the create: the lease is renewed
// before it ends (3s + 1s here), while the remediation runs.
func TestARunningRemediationsLeaseIsRenewed(t *testing.T) {
	t.Parallel()
	const scenario = "renewed-running"
	nodes := remediatedWithLease(t, scenario)
	taken := lease(t, nodes[0])
	framework.Eventually(t, 4*time.Second, "the lease renewed before it ends", func() bool {
		l := lease(t, nodes[0])
		return l != nil && l.Spec.RenewTime.After(taken.Spec.AcquireTime.Time) && ptr.Deref(l.Spec.HolderIdentity, "") == "NodeHealthCheck-"+scenario
	})
}

// lapsesForMaintenance asserts that node maintenance gets a node's lease
// once ours lapses, within the time given, that we never take it back, and
// that the remediation resource stays until the node is healthy.
func lapsesForMaintenance(t *testing.T, scenario, node string, within time.Duration) {
	t.Helper()
	t.Cleanup(func() { releaseLease(node) })
	framework.Eventually(t, within, "node maintenance to get the lease once ours lapses", func() bool { return takeOverAsMaintenance(node) })
	framework.Consistently(t, 3*time.Second, "the lease is never taken back", func() bool {
		return holder(t, node) == maintenanceHolder && len(env.Remediations(t, scenario)[node]) == 1
	})
	assert.True(t, hasEvent(t, scenario, corev1.EventTypeNormal, "NodeLeaseLapsing", ""), "a NodeLeaseLapsing event says why")
}

// TestAnExcludedNodesLeaseLapses: node-maintenance-operator labels a node
// under remediation to exclude it: we no longer act on the node (the gate
// also holds back the overdue time-out), so its lease is no longer renewed,
// and maintenance takes the node when it ends.
func TestAnExcludedNodesLeaseLapses(t *testing.T) {
	t.Parallel()
	const scenario = "lapse-excluded"
	nodes := remediatedWithLease(t, scenario)
	require.False(t, takeOverAsMaintenance(nodes[0]), "our lease is in force")
	env.UpdateNode(t, nodes[0], func(n *corev1.Node) { n.Labels[v1alpha1.ExcludeFromRemediationLabel] = "true" })
	lapsesForMaintenance(t, scenario, nodes[0], 15*time.Second)
}

// TestAnExhaustedEscalationsLeaseLapses: the remediator of the only
// escalation step reports it failed, so no step runs and none is left (the
// node waits NoTemplateLeft until it recovers): its lease is no longer
// renewed, and maintenance takes the node when it ends (a step's lease
// lasts its timeout, at least 60s, and the buffer), while the failed
// resource stays.
func TestAnExhaustedEscalationsLeaseLapses(t *testing.T) {
	t.Parallel()
	const scenario = "lapse-exhausted"
	env.CreateTemplate(t, scenario, nil)
	nodes := env.CreateNodes(t, scenario, 3)
	env.CreateNHC(t, scenario, func(s *v1alpha1.NodeHealthCheckSpec) {
		s.RemediationTemplate = nil
		s.EscalatingRemediations = []v1alpha1.EscalatingRemediation{{RemediationTemplate: framework.TemplateRef(scenario), Order: 0, Timeout: metav1.Duration{Duration: time.Minute}}}
	})
	env.Fail(t, time.Hour, nodes[0])
	framework.Eventually(t, 10*time.Second, "remediated with the lease taken", func() bool {
		return len(env.Remediations(t, scenario)[nodes[0]]) == 1 && holder(t, nodes[0]) == "NodeHealthCheck-"+scenario
	})
	require.False(t, takeOverAsMaintenance(nodes[0]), "our lease is in force")
	env.SetRemediationCondition(t, env.Remediations(t, scenario)[nodes[0]][0].GetName(), v1alpha1.SucceededCondition, "False")
	lapsesForMaintenance(t, scenario, nodes[0], 75*time.Second)
	assert.True(t, hasEvent(t, scenario, corev1.EventTypeNormal, "NodeLeaseLapsing", "escalation exhausted"))
}

// TestARecoveredNodesLeaseLapsesWhileItsRemediationWaits: the node
// recovers, and its remediation waits for a manual confirmation (a negative
// healthyDelay): no step runs on a Ready node, so its lease is no longer
// renewed, and node maintenance gets the node when the lease ends, while
// the remediation resource stays until someone confirms.
func TestARecoveredNodesLeaseLapsesWhileItsRemediationWaits(t *testing.T) {
	t.Parallel()
	const scenario = "lapse-recovered"
	env.CreateTemplate(t, scenario, nil)
	nodes := env.CreateNodes(t, scenario, 3)
	env.CreateNHC(t, scenario, func(s *v1alpha1.NodeHealthCheckSpec) { s.HealthyDelay = &metav1.Duration{Duration: -time.Second} })
	env.Fail(t, time.Hour, nodes[0])
	framework.Eventually(t, 10*time.Second, "remediated with the lease taken", func() bool {
		return len(env.Remediations(t, scenario)[nodes[0]]) == 1 && holder(t, nodes[0]) == "NodeHealthCheck-"+scenario
	})
	require.False(t, takeOverAsMaintenance(nodes[0]), "our lease is in force")
	env.Recover(t, nodes[0])
	framework.Eventually(t, 10*time.Second, "the remediation waits for a confirmation", func() bool {
		entry := env.GetNHC(t, scenario).Status.UnhealthyNodes
		return len(entry) == 1 && ptr.Deref(entry[0].HealthyDelayed, false)
	})
	lapsesForMaintenance(t, scenario, nodes[0], 15*time.Second)
	assert.True(t, hasEvent(t, scenario, corev1.EventTypeNormal, "NodeLeaseLapsing", "node healthy, its remediation waits for healthyDelay or a manual confirmation"))
}
