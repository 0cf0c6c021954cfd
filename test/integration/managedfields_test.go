package integration

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

// The controller keeps no NodeHealthCheck's managedFields, and writes its
// statuses without them: the API server keeps those it stored, this
// controller's status writes among them, as a user's kubectl shows.
func TestStatusWritesKeepTheStoredManagedFields(t *testing.T) {
	env := newRemediationEnv(t)
	fw.CreateTemplate(t, "fields", nil)
	nhc := fw.CreateNHC(t, "fields", func(s *v1alpha1.NodeHealthCheckSpec) {
		s.RemediationTemplate = ptr.To(framework.TemplateRef("fields"))
	})
	node := unhealthyNode(t, "fields", "fields-worker", corev1.ConditionFalse)

	out := env.sync(t, nhc.Name, time.Now())
	require.Len(t, out.NHC.Status.UnhealthyNodes, 1, "the status was written")
	cached, err := env.nhcLister.Get(nhc.Name)
	require.NoError(t, err)
	assert.Nil(t, cached.ManagedFields, "the cache keeps none")

	managers := func() map[string]bool {
		stored := fw.GetNHC(t, nhc.Name)
		found := map[string]bool{}
		for _, entry := range stored.ManagedFields {
			found[entry.Manager+"/"+entry.Subresource+"/"+string(entry.Operation)] = true
		}
		return found
	}
	before := managers()
	assert.True(t, before[v1alpha1.FieldManager+"/status/"+string(metav1.ManagedFieldsOperationUpdate)], "the status write is recorded: %v", before)
	assert.Greater(t, len(before), 1, "the creator's entry is there too: %v", before)

	written := out.NHC.ResourceVersion
	fw.Recover(t, node)
	env.sync(t, nhc.Name, time.Now())
	// The resource's deletion seen, the entry goes.
	out = env.sync(t, nhc.Name, time.Now())
	require.NotEqual(t, written, out.NHC.ResourceVersion, "the status was written again")
	assert.Equal(t, before, managers(), "a status write without managedFields keeps those stored")
}
