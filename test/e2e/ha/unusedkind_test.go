package ha

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

// A remediation kind that no NodeHealthCheck uses and the controller may
// not list (ClusterRemediation, served beside its template kind, whose
// remediator's role is not aggregated to the controller) is looked at for
// leftovers once, and tried again while a deleted NodeHealthCheck's lease
// waits for every kind to be read. Its retries, failing as the first try
// did, wake none of the NodeHealthChecks: only the first failure, which
// they waited for, does.
func TestAnUnusedKindThatCannotBeReadWakesNoNodeHealthCheck(t *testing.T) {
	const user, namespace, nhcs, window = "unused-kind-controller", "unused-kind-leases", 100, time.Minute
	grant(t, user, "unused-kind-controller-base", append(controllerRules(),
		rbacv1.PolicyRule{APIGroups: []string{"test.medik8s.io"}, Resources: []string{"testremediationtemplates"}, Verbs: []string{"get", "list", "watch"}},
		rbacv1.PolicyRule{APIGroups: []string{"test.medik8s.io"}, Resources: []string{"testremediations"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}})...)
	kubeconfig, err := env.Cluster.UserKubeconfig(user, "system:authenticated")
	require.NoError(t, err)
	_, err = env.Kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = env.Kube.CoreV1().Namespaces().Delete(t.Context(), namespace, metav1.DeleteOptions{}) })
	// The lease of a NodeHealthCheck deleted while the controller was away.
	now := metav1.NewMicroTime(time.Now())
	_, err = env.Kube.CoordinationV1().Leases(namespace).Create(t.Context(), &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: health.LeaseName("unused-kind-node")},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(health.LeaseHolder("unused-kind-gone")), LeaseDurationSeconds: ptr.To[int32](600),
			AcquireTime: &now, RenewTime: &now},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	env.CreateTemplate(t, "unused-kind", nil)
	for i := range nhcs {
		env.CreateNHC(t, fmt.Sprintf("unused-kind-%d", i), func(s *v1alpha1.NodeHealthCheckSpec) {
			s.RemediationTemplate = ptr.To(framework.TemplateRef("unused-kind"))
		})
	}
	c, err := env.StartControllerWithKubeconfig("unused-kind", kubeconfig, "--leader-elect=false", "--lease-namespace="+namespace, "--v=2")
	require.NoError(t, err)
	dumpOnFailure(t, c)
	defer func() { assert.NoError(t, c.Stop()) }()
	const stopped = `"Stopped informer, no NodeHealthCheck uses it" resource="test.medik8s.io/v1alpha1, Resource=clusterremediations"`
	framework.Eventually(t, 60*time.Second, "every NodeHealthCheck enabled, the unused kind stopped", func() bool {
		for i := range nhcs {
			if env.GetNHC(t, fmt.Sprintf("unused-kind-%d", i)).Status.Phase != v1alpha1.PhaseEnabled {
				return false
			}
		}
		return strings.Contains(c.Log(), stopped)
	})

	syncs := func() int { return strings.Count(c.Log(), `"Synced" nodeHealthCheck="unused-kind-`) }
	retries := func() int { return strings.Count(c.Log(), stopped) }
	failures := func() int { return strings.Count(c.Log(), `"Failed to watch"`) }
	// The window starts once the start-up's syncs are over: while the
	// kinds' informers come up, a NodeHealthCheck may sync again (one run
	// whose remediation kind took 7 s to list synced each twice, 0.4 s
	// apart, the second round inside the window).
	settledAt, last := time.Now(), syncs()
	framework.Eventually(t, 60*time.Second, "the start-up's syncs over", func() bool {
		if n := syncs(); n != last {
			settledAt, last = time.Now(), n
		}
		return time.Since(settledAt) >= 3*time.Second
	})
	syncsBefore, retriesBefore, failuresBefore := syncs(), retries(), failures()
	time.Sleep(window)
	synced, retried, failed := syncs()-syncsBefore, retries()-retriesBefore, failures()-failuresBefore
	t.Logf("in %v: %d retries of the unused kind, %d lines of client-go's failure, %d syncs of %d NodeHealthChecks", window, retried, failed, synced, nhcs)
	assert.GreaterOrEqual(t, retried, 2, "the kind is tried again while the deleted NodeHealthCheck's lease waits")
	assert.LessOrEqual(t, failed, retried, "one failure logged a retry")
	assert.LessOrEqual(t, synced, nhcs/10, "the retries wake no NodeHealthCheck")
}
