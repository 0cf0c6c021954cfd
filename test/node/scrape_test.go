package node

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

// anAuthorizedScrapeThroughTheService scrapes /metrics through the
// Service's cluster IP (kube-proxy's rules on this host) with the token of
// a ServiceAccount bound to nhc-controller-metrics-reader, as Prometheus
// would, and reads the Go memory limit the controller set from its
// container's.
func (c *cluster) anAuthorizedScrapeThroughTheService(t *testing.T, pod corev1.Pod) {
	t.Helper()
	c.step(t, "an authorized scrape through the Service")
	const monitoring = "monitoring"
	_, err := c.kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: monitoring}}, metav1.CreateOptions{})
	require.NoError(t, err)
	for _, name := range []string{"prometheus", "stranger"} {
		_, err := c.kube.CoreV1().ServiceAccounts(monitoring).Create(t.Context(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	_, err = c.kube.RbacV1().ClusterRoleBindings().Create(t.Context(), &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "prometheus-nhc-metrics"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "nhc-controller-metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: monitoring, Name: "prometheus"}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	token := func(account string) string {
		request, err := c.kube.CoreV1().ServiceAccounts(monitoring).CreateToken(t.Context(), account, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		require.NoError(t, err)
		return request.Status.Token
	}
	service, err := c.kube.CoreV1().Services(framework.InstallNamespace).Get(t.Context(), "nhc-controller-metrics", metav1.GetOptions{})
	require.NoError(t, err)
	url := fmt.Sprintf("https://%s:%d/metrics", service.Spec.ClusterIP, service.Spec.Ports[0].Port)
	// The controller's certificate is self-signed unless --tls-cert-file
	// names one: Prometheus scrapes it with insecureSkipVerify.
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, DisableKeepAlives: true}}
	scrape := func(bearer string) (int, string) {
		request, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
		require.NoError(t, err)
		if bearer != "" {
			request.Header.Set("Authorization", "Bearer "+bearer)
		}
		response, err := client.Do(request)
		require.NoError(t, err, "GET %s", url)
		defer response.Body.Close()
		body, err := io.ReadAll(response.Body)
		require.NoError(t, err)
		return response.StatusCode, string(body)
	}
	reader := token("prometheus")
	var body string
	// The binding reaches the controllers' authorizer through a
	// SubjectAccessReview; RBAC's cache may take a moment.
	eventually(t, 30*time.Second, "an authorized scrape to answer 200", func() bool {
		var status int
		status, body = scrape(reader)
		return status == http.StatusOK
	})
	status, _ := scrape("")
	assert.Equal(t, http.StatusUnauthorized, status, "a scrape without a token")
	status, _ = scrape(token("stranger"))
	assert.Equal(t, http.StatusForbidden, status, "a scrape with a token not bound to the metrics reader")
	assert.Contains(t, body, "nhc_")

	limit := pod.Spec.Containers[0].Resources.Limits.Memory().Value()
	require.NotZero(t, limit)
	assert.Equal(t, float64(int64(float64(limit)*0.9)), metric(t, body, "go_gc_gomemlimit_bytes"), "GOMEMLIMIT is 90%% of the container's limit, %d bytes", limit)
	assert.Equal(t, 25.0, metric(t, body, "go_gc_gogc_percent"))
	t.Logf("scraped %s: %d bytes; go_gc_gomemlimit_bytes %.0f", url, len(body), metric(t, body, "go_gc_gomemlimit_bytes"))
}

// metric reads an unlabelled metric's value from a scrape.
func metric(t *testing.T, body, name string) float64 {
	t.Helper()
	for _, line := range strings.Split(body, "\n") {
		if value, ok := strings.CutPrefix(line, name+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
			require.NoError(t, err, line)
			return v
		}
	}
	t.Fatalf("no metric %s in the scrape", name)
	return 0
}
