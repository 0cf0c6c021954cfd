package ha

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nodehealthcheck/nhc-controller/test/controlplane"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

// TestAFloodOfUnauthenticatedScrapesLeavesTheLeaderLeading: whoever reaches
// the metrics port sends 5,000 scrapes, 200 at a time, each with a bearer
// token nobody issued, so that each asks the controller for a TokenReview.
// The leader renews its lease throughout (renew deadline 3s), though its
// own client is held to 10 requests a second: nothing a caller of an
// endpoint does may cost it the lease.
func TestAFloodOfUnauthenticatedScrapesLeavesTheLeaderLeading(t *testing.T) {
	const scrapes, concurrent = 5000, 200
	c, err := env.StartController("metrics-flood", "--leader-elect=true", "--leader-election-namespace=default", "--leader-election-id=nhc-metrics-flood",
		"--leader-elect-lease-duration=4s", "--leader-elect-renew-deadline=3s", "--leader-elect-retry-period=500ms", "--metrics-secure=true", "--node-leases=false",
		"--kube-api-qps=10", "--kube-api-burst=20")
	require.NoError(t, err)
	dumpOnFailure(t, c)
	defer func() { assert.NoError(t, c.Stop()) }()
	framework.Eventually(t, 20*time.Second, "the leader", func() bool { return strings.Contains(c.Log(), `"Became the leader"`) })

	client := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, MaxIdleConnsPerHost: concurrent,
	}}
	codes := map[int]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	next := make(chan int)
	for range concurrent {
		wg.Go(func() {
			for i := range next {
				req, err := http.NewRequest(http.MethodGet, "https://"+c.MetricsAddress+"/metrics", nil)
				if err != nil {
					continue
				}
				req.Header.Set("Authorization", fmt.Sprintf("Bearer flood-%d", i))
				code := 0
				if resp, err := client.Do(req); err == nil {
					code = resp.StatusCode
					_ = resp.Body.Close()
				}
				mu.Lock()
				codes[code]++
				mu.Unlock()
			}
		})
	}
	started := time.Now()
	for i := range scrapes {
		next <- i
	}
	close(next)
	wg.Wait()
	t.Logf("%d scrapes in %s: %v (status code: count; 0 is a client error)", scrapes, time.Since(started).Round(time.Millisecond), codes)

	assert.False(t, c.Exited(), "the leader still runs")
	assert.False(t, strings.Contains(c.Log(), `"Lost the lease; stopping"`), "the leader never lost its lease")
	assert.Zero(t, codes[http.StatusOK], "no scrape without a valid token succeeds")
	framework.Eventually(t, 10*time.Second, "the metrics server answers again", func() bool {
		resp, err := client.Get("https://" + c.MetricsAddress + "/metrics")
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusUnauthorized
	})
}

// A scraper every 60 s, Prometheus's default interval, is served from its
// cached answer throughout 65 s of forged tokens from four addresses, each
// a review: more than the 1,024 answers a cache holds at the reviews' 20 a
// second, which no longer evict the scraper's.
func TestForgedTokensNeverEvictTheScrapersAnswer(t *testing.T) {
	const flood, scrapeEvery, addresses = 65 * time.Second, 60 * time.Second, 4
	out, err := env.Cluster.Kubectl("apply", "-f", filepath.Join(controlplane.RepoRoot(), "manifests/rbac/metrics-reader.yaml"))
	require.NoError(t, err, out)
	prometheus := serviceAccountToken(t, "flooded-prometheus", true)
	c, err := env.StartController("metrics-forged", "--leader-elect=false", "--metrics-secure=true", "--node-leases=false")
	require.NoError(t, err)
	dumpOnFailure(t, c)
	defer func() { assert.NoError(t, c.Stop()) }()

	clientFrom := func(address string) *http.Client {
		dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(address)}}
		return &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{
			DialContext: dialer.DialContext, TLSClientConfig: &tls.Config{InsecureSkipVerify: true},
		}}
	}
	scrape := func(client *http.Client, token string) int {
		req, err := http.NewRequest(http.MethodGet, "https://"+c.MetricsAddress+"/metrics", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(req)
		if err != nil {
			return 0
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	scraper := clientFrom("127.0.0.1")
	framework.Eventually(t, 20*time.Second, "the first scrape", func() bool { return scrape(scraper, prometheus) == http.StatusOK })

	stop := time.Now().Add(flood)
	var forged atomic.Int64
	var wg sync.WaitGroup
	for a := range addresses {
		client := clientFrom(fmt.Sprintf("127.0.0.%d", 2+a))
		for range 4 {
			wg.Go(func() {
				for time.Now().Before(stop) {
					scrape(client, fmt.Sprintf("forged-%d", forged.Add(1)))
				}
			})
		}
	}
	var codes []int
	for next := time.Now().Add(scrapeEvery); next.Before(stop); next = next.Add(scrapeEvery) {
		time.Sleep(time.Until(next))
		codes = append(codes, scrape(scraper, prometheus))
	}
	wg.Wait()
	t.Logf("%d forged tokens in %v; the scraper got %v", forged.Load(), flood, codes)
	require.NotEmpty(t, codes)
	for _, code := range codes {
		assert.Equal(t, http.StatusOK, code, "the scraper is served from its cached answer")
	}
	assert.Greater(t, forged.Load(), int64(1024), "the flood outnumbers a cache")
}
