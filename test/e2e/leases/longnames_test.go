package leases

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

// longNodeName is a valid node name of 253 characters, the most there may
// be, that ends with end.
func longNodeName(end string) string {
	label := strings.Repeat("l", 63)
	name := strings.Join([]string{label, label, label, label}, ".")
	return name[:validation.DNS1123SubdomainMaxLength-len(end)] + end
}

// leaseOwnedBy is the lease that a node owns, or nil.
func leaseOwnedBy(t *testing.T, node string) *coordinationv1.Lease {
	list, err := env.Kube.CoordinationV1().Leases(leaseNamespace).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	for i := range list.Items {
		for _, ref := range list.Items[i].OwnerReferences {
			if ref.Kind == "Node" && ref.Name == node {
				return &list.Items[i]
			}
		}
	}
	return nil
}

// TestLongNodeNamesAreRemediatedWithLeases: two nodes whose names have 253
// characters and share the first 252. "node-<name>" is too long for a
// lease, and "<name>-<hash>" for a remediation resource of a template that
// allows several per node: each is shortened, with a hash of the whole
// node name, so that each node gets its own lease and its own resource.
func TestLongNodeNamesAreRemediatedWithLeases(t *testing.T) {
	t.Parallel()
	const scenario = "long-names"
	env.CreateTemplate(t, scenario, map[string]string{v1alpha1.MultipleTemplatesSupportAnnotation: "true"})
	nodes := []string{longNodeName("a"), longNodeName("b")}
	for _, node := range nodes {
		env.CreateNode(t, scenario, node)
	}
	env.CreateNodes(t, scenario, 1)
	env.CreateNHC(t, scenario, nil)
	env.Fail(t, time.Hour, nodes...)
	framework.Eventually(t, 10*time.Second, "each node remediated under its own lease", func() bool {
		remediations := env.Remediations(t, scenario)
		for _, node := range nodes {
			l := leaseOwnedBy(t, node)
			if len(remediations[node]) != 1 || l == nil || ptr.Deref(l.Spec.HolderIdentity, "") != "NodeHealthCheck-"+scenario {
				return false
			}
		}
		return true
	})
	assert.NotEqual(t, leaseOwnedBy(t, nodes[0]).Name, leaseOwnedBy(t, nodes[1]).Name)

	env.Recover(t, nodes...)
	framework.Eventually(t, 10*time.Second, "the resources deleted and the leases released", func() bool {
		return len(env.Remediations(t, scenario)) == 0 && leaseOwnedBy(t, nodes[0]) == nil && leaseOwnedBy(t, nodes[1]) == nil
	})
}
