package ha

import (
	"context"
	"crypto/tls"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/nodehealthcheck/nhc-controller/test/controlplane"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

// TestMetricsNeedAnAuthorizedToken scrapes the HTTPS /metrics as a
// ServiceAccount bound to the metrics-reader role (200), as one without it
// (403), and with no token (401).
func TestMetricsNeedAnAuthorizedToken(t *testing.T) {
	ctx := t.Context()
	out, err := env.Cluster.Kubectl("apply", "-f", filepath.Join(controlplane.RepoRoot(), "manifests/rbac/metrics-reader.yaml"))
	require.NoError(t, err, out)
	prometheus, nobody := serviceAccountToken(t, "prometheus", true), serviceAccountToken(t, "nobody", false)

	c, err := env.StartController("secure-metrics", "--leader-elect=false", "--metrics-secure=true")
	require.NoError(t, err)
	dumpOnFailure(t, c)
	defer func() { assert.NoError(t, c.Stop()) }()
	// The certificate is self-signed, made at start.
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	scrape := func(token string) int {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+c.MetricsAddress+"/metrics", nil)
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	framework.Eventually(t, 30*time.Second, "the metrics server", func() bool { return scrape("") != 0 })
	assert.Equal(t, http.StatusUnauthorized, scrape(""), "no token")
	assert.Equal(t, http.StatusForbidden, scrape(nobody), "a token without the role")
	assert.Equal(t, http.StatusOK, scrape(prometheus), "a token with the role")
	assert.Equal(t, http.StatusUnauthorized, scrape("not-a-token"), "a token nobody issued")
}

// serviceAccountToken creates a ServiceAccount in default and returns a
// token issued for it; with metricsReader, it is bound to the role
// nhc-controller-metrics-reader (applied by the caller).
func serviceAccountToken(t *testing.T, name string, metricsReader bool) string {
	ctx := t.Context()
	_, err := env.Kube.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = env.Kube.CoreV1().ServiceAccounts("default").Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	tr, err := env.Kube.CoreV1().ServiceAccounts("default").CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	require.NoError(t, err)
	if metricsReader {
		binding := name + "-nhc-metrics"
		_, err = env.Kube.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: binding},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "nhc-controller-metrics-reader"},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: "default"}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		t.Cleanup(func() {
			_ = env.Kube.RbacV1().ClusterRoleBindings().Delete(context.Background(), binding, metav1.DeleteOptions{})
		})
	}
	return tr.Status.Token
}

// TestTheServiceMonitorScrapesAsItsOwnServiceAccount: manifests/monitoring/
// scrapes with the token of its own ServiceAccount, referenced the current
// way (authorization, not bearerTokenFile), and that ServiceAccount may
// read /metrics: a token issued for it gets 200.
func TestTheServiceMonitorScrapesAsItsOwnServiceAccount(t *testing.T) {
	ctx := t.Context()
	root := controlplane.RepoRoot()
	for _, file := range []string{"manifests/deploy/namespace.yaml", "manifests/rbac/metrics-reader.yaml", "manifests/monitoring/scraper.yaml"} {
		out, err := env.Cluster.Kubectl("apply", "-f", filepath.Join(root, file))
		require.NoError(t, err, out)
	}
	var monitor struct {
		Spec struct {
			Endpoints []map[string]any `json:"endpoints"`
		} `json:"spec"`
	}
	data, err := os.ReadFile(filepath.Join(root, "manifests/monitoring/service-monitor.yaml"))
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(data, &monitor))
	require.Len(t, monitor.Spec.Endpoints, 1)
	endpoint := monitor.Spec.Endpoints[0]
	assert.NotContains(t, endpoint, "bearerTokenFile", "deprecated")
	secretName, _, _ := unstructured.NestedString(endpoint, "authorization", "credentials", "name")
	secret, err := env.Kube.CoreV1().Secrets("nhc-system").Get(ctx, secretName, metav1.GetOptions{})
	require.NoError(t, err, "the Secret the ServiceMonitor references is installed with it")
	account := secret.Annotations[corev1.ServiceAccountNameKey]
	require.NotEmpty(t, account)

	// The test control plane has no token controller to fill the Secret:
	// a token for the same ServiceAccount proves its rights.
	token, err := env.Kube.CoreV1().ServiceAccounts("nhc-system").CreateToken(ctx, account, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	require.NoError(t, err)
	c, err := env.StartController("scraper", "--leader-elect=false", "--metrics-secure=true")
	require.NoError(t, err)
	dumpOnFailure(t, c)
	defer func() { assert.NoError(t, c.Stop()) }()
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	framework.Eventually(t, 30*time.Second, "the scraper's token reads /metrics", func() bool {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+c.MetricsAddress+"/metrics", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token.Status.Token)
		resp, err := client.Do(req)
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}
