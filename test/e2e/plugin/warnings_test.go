package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/cli"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

// readerWithoutRemediations is a user who may read what kubectl nhc reads
// but the test remediator's remediation resources.
func readerWithoutRemediations(t *testing.T) string {
	const name = "nhc-reader-without-remediations"
	ctx := context.Background()
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{v1alpha1.SchemeGroupVersion.Group}, Resources: []string{"nodehealthchecks"}, Verbs: []string{"get", "list"}},
			{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list"}},
			{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "list"}},
			{APIGroups: []string{framework.TemplateResource.Group}, Resources: []string{framework.TemplateResource.Resource}, Verbs: []string{"get", "list"}},
		},
	}
	_, err := env.Kube.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{})
	require.NoError(t, err)
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: name}},
	}
	_, err = env.Kube.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = env.Kube.RbacV1().ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
		_ = env.Kube.RbacV1().ClusterRoles().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	kubeconfig, err := env.Cluster.UserKubeconfig(name, "system:authenticated")
	require.NoError(t, err)
	return kubeconfig
}

// A user who may not list a remediation kind gets the report all the same,
// in every format, the warning on stderr (and in JSON), and exit status 3:
// the verdict is incomplete, and a script must not take it as whole.
func TestAnUnreadableKindIsAWarningAndExitStatus3(t *testing.T) {
	t.Parallel()
	const scenario = "forbidden-kind"
	env.CreateTemplate(t, scenario, nil)
	nodes := env.CreateNodes(t, scenario, 2)
	env.CreateNHC(t, scenario, nil)
	env.Fail(t, time.Hour, nodes[0])
	framework.Eventually(t, 15*time.Second, "a remediation", func() bool { return len(env.Remediations(t, scenario)[nodes[0]]) == 1 })
	kubeconfig := readerWithoutRemediations(t)
	const warning = "Warning: cannot list testremediations in every namespace, so their remediations are not shown"

	for _, format := range []string{"json", "yaml", "wide", "name", "jsonpath={.summary}"} {
		t.Run(format, func(t *testing.T) {
			out, errOut, err := kubectlNHC(t, kubeconfig, "status", scenario, "-o", format)
			var exit *exec.ExitError
			require.True(t, errors.As(err, &exit), "kubectl nhc fails: %v\n%s", err, errOut)
			assert.Equal(t, 3, exit.ExitCode(), "exit status 3, the verdict incomplete: %s", errOut)
			assert.Contains(t, errOut, warning)
			assert.Contains(t, errOut, "error: "+cli.ErrIncomplete.Error())
			assert.NotEmpty(t, out, "the report is printed")
			if format == "json" {
				var report cli.StatusReport
				require.NoError(t, json.Unmarshal([]byte(out), &report))
				assert.Equal(t, "StatusReport", report.Kind)
				require.Len(t, report.Warnings, 1)
				assert.True(t, strings.HasPrefix(warning, "Warning: "+report.Warnings[0][:40]), report.Warnings[0])
				require.Len(t, report.NodeHealthChecks, 1)
			}
		})
	}

	// The admin reads everything: a whole verdict, exit 0.
	out, errOut, err := kubectlNHC(t, env.Cluster.Kubeconfig, "status", scenario, "-o", "json")
	require.NoError(t, err, errOut)
	assert.NotContains(t, errOut, "Warning:")
	var report cli.StatusReport
	require.NoError(t, json.Unmarshal([]byte(out), &report))
	assert.Empty(t, report.Warnings)
	assert.Equal(t, 1, report.NodeHealthChecks[0].Remediating)
}
