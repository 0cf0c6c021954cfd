package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

// confirmed tells whether a node carries the manual confirmation.
func confirmed(t *testing.T, node string) bool {
	n, err := env.Kube.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	require.NoError(t, err)
	_, ok := n.Annotations[v1alpha1.ManuallyConfirmedHealthyAnnotation]
	return ok
}

// confirm annotates a node as manually confirmed healthy, as an admin would.
func confirm(t *testing.T, node string) {
	env.UpdateNode(t, node, func(n *corev1.Node) {
		if n.Annotations == nil {
			n.Annotations = map[string]string{}
		}
		n.Annotations[v1alpha1.ManuallyConfirmedHealthyAnnotation] = "by @admin"
	})
}

// healthyDelayed tells whether the status shows a node's remediation held
// by healthyDelay.
func healthyDelayed(t *testing.T, nhc, node string) bool {
	e := entryOf(statusOf(t, nhc), node)
	return e != nil && e.HealthyDelayed != nil && *e.HealthyDelayed
}

// TestAConfirmationConfirmsOneRecovery: with a negative healthyDelay "NHC
// will never consider the node healthy, and manual intervention is
// expected". A confirmation releases the recovery it was given for; a
// remediator's finalizer that holds that recovery's resource past a relapse
// does not let it release the next incident's remediation too.
func TestAConfirmationConfirmsOneRecovery(t *testing.T) {
	t.Parallel()
	const scenario = "confirm-once"
	env.CreateTemplate(t, scenario, nil)
	nodes := env.CreateNodes(t, scenario, 2)
	env.CreateNHC(t, scenario, func(s *v1alpha1.NodeHealthCheckSpec) { s.HealthyDelay = &metav1.Duration{Duration: -time.Second} })
	node := nodes[0]
	only := func() *unstructured.Unstructured {
		r := env.Remediations(t, scenario)[node]
		if len(r) != 1 {
			return nil
		}
		return &r[0]
	}

	env.Fail(t, time.Hour, node)
	framework.Eventually(t, 10*time.Second, "a remediation", func() bool { return only() != nil })
	first := only()
	// The remediator holds its resource until it cleaned up.
	env.SetFinalizers(t, first.GetName(), "test.medik8s.io/cleanup")

	env.Recover(t, node)
	framework.Eventually(t, 5*time.Second, "healthyDelayed in the status", func() bool { return healthyDelayed(t, scenario, node) })

	// "Once the node meets all other healthy criteria, NHC will delete the
	// remediation.medik8s.io/manually-confirmed-healthy annotation from the
	// Node, and proceed with deleting the remediation CR for that node."
	confirm(t, node)
	framework.Eventually(t, 5*time.Second, "the confirmed recovery's remediation deleted (held by the finalizer)", func() bool {
		r := only()
		return r != nil && r.GetUID() == first.GetUID() && r.GetDeletionTimestamp() != nil
	})
	framework.Eventually(t, 5*time.Second, "the confirmation removed from the Node while the finalizer holds the resource", func() bool {
		return !confirmed(t, node)
	})

	// The node fails again before the remediator lets its resource go; the
	// new incident's resource (of the same name) waits for it to be gone.
	env.Fail(t, time.Hour, node)
	framework.Eventually(t, 5*time.Second, "the relapse to wait for the held resource", func() bool {
		return strings.Contains(statusOf(t, scenario).Reason, "for their remediation's deletion")
	})
	env.SetFinalizers(t, first.GetName())
	framework.Eventually(t, 10*time.Second, "the new incident's remediation, once the old one is gone", func() bool {
		r := only()
		return r != nil && r.GetUID() != first.GetUID() && r.GetDeletionTimestamp() == nil
	})
	second := only()

	// "A negative value for healthyDelay ... tells NHC to never
	// automatically consider the node healthy and to never automatically
	// delete the remediation": the first confirmation was consumed.
	env.Recover(t, node)
	framework.Eventually(t, 5*time.Second, "healthyDelayed in the status again", func() bool { return healthyDelayed(t, scenario, node) })
	framework.Consistently(t, 4*time.Second, "the new remediation kept without a confirmation of its own", func() bool {
		r := only()
		return r != nil && r.GetUID() == second.GetUID() && r.GetDeletionTimestamp() == nil && !confirmed(t, node)
	})

	confirm(t, node)
	framework.Eventually(t, 5*time.Second, "the new remediation deleted on its own confirmation", func() bool { return only() == nil })
	framework.Eventually(t, 5*time.Second, "the confirmation removed", func() bool { return !confirmed(t, node) })
	framework.Eventually(t, 5*time.Second, "a clean status", func() bool { return len(statusOf(t, scenario).UnhealthyNodes) == 0 })
}
