package controller

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/resource"
)

// A control-plane node that another NodeHealthCheck's status records a
// remediation of, of a kind that cannot be read (forbidden since a
// restart), is under remediation: no second control-plane node starts.
func TestARecordedControlPlaneRemediationHoldsTheOthers(t *testing.T) {
	controlPlane := func(n *corev1.Node) *corev1.Node {
		n.Labels[v1alpha1.ControlPlaneRoleLabel] = ""
		return n
	}
	for _, tt := range []struct {
		name     string
		recorded map[string][]resource.Owner
		created  bool
	}{
		{"nothing recorded", nil, true},
		{"a control-plane node recorded", map[string][]resource.Owner{"cp-0": {{Name: "other", UID: "uid-other"}}}, false},
		{"a node that is gone recorded", map[string][]resource.Owner{"cp-gone": {{Name: "other", UID: "uid-other"}}}, false},
		{"a worker recorded", map[string][]resource.Owner{"worker-2": {{Name: "other", UID: "uid-other"}}}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newSyncFixture(t, workersNHC(), controlPlane(healthyNode("cp-0")), controlPlane(notReady("cp-1", longAgo)), healthyNode("worker-2"))
			f.remediations.recorded = tt.recorded
			_, err := f.sync()
			require.NoError(t, err)
			require.Len(t, f.remediations.applied, 1)
			assert.Equal(t, tt.created, len(f.remediations.applied[0].Create) == 1)
		})
	}
}
