package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

// A selector the CRD accepts but too long for a request that lists nodes
// (an In list of 20,000 names, about 1.3 MB) disables its NodeHealthCheck
// with a reason that says so, on the first sync, instead of failing every
// list for ever with no status.
func TestASelectorTooLongToListNodesWithIsReported(t *testing.T) {
	env := newRemediationEnv(t)
	fw.CreateTemplate(t, "hugeselector", nil)
	names := make([]string, 20000)
	for i := range names {
		names[i] = fmt.Sprintf("worker-%05d.%s", i, strings.Repeat("x", 50))
	}
	nhc := fw.CreateNHC(t, "hugeselector", func(s *v1alpha1.NodeHealthCheckSpec) {
		s.Selector = metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "kubernetes.io/hostname", Operator: metav1.LabelSelectorOpIn, Values: names},
		}}
	})
	framework.Eventually(t, 30*time.Second, "the controller's cache to show the NodeHealthCheck", func() bool {
		cached, err := env.nhcLister.Get(nhc.Name)
		return err == nil && cached.UID == nhc.UID
	})
	ctx, cancel := context.WithTimeout(env.ctx, time.Minute)
	defer cancel()
	_, err := env.ctrl.Sync(ctx, nhc.Name)
	require.NoError(t, err)
	status := fw.GetNHC(t, nhc.Name).Status
	assert.Equal(t, v1alpha1.PhaseDisabled, status.Phase)
	assert.Contains(t, status.Reason, "more than the 262144 a list of nodes may carry")
}
