package serving

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestMetricsAuth(t *testing.T) {
	cases := []struct {
		name      string
		header    string
		reviewErr error
		want      int
	}{
		{"no token", "", nil, http.StatusUnauthorized},
		{"not a bearer token", "Basic cHJvbWV0aGV1cw==", nil, http.StatusUnauthorized},
		{"a token nobody issued", "Bearer forged", nil, http.StatusUnauthorized},
		{"a token without the role", "Bearer nobody", nil, http.StatusForbidden},
		{"a token with the role", "Bearer prometheus", nil, http.StatusOK},
		{"any case of bearer", "bearer prometheus", nil, http.StatusOK},
		{"the reviews fail", "Bearer prometheus", apierrors.NewForbidden(schema.GroupResource{}, "", errors.New("no")), http.StatusUnauthorized},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			client, reviews := reviewingClient(tc.reviewErr)
			clk := clocktesting.NewFakePassiveClock(time.Now())
			auth := newDelegatedAuth(over(client), over(client), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("metrics")) }), clk)
			scrape := func() int {
				req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
				if tc.header != "" {
					req.Header.Set("Authorization", tc.header)
				}
				rec := httptest.NewRecorder()
				auth.ServeHTTP(rec, req)
				return rec.Code
			}
			assert.Equal(t, tc.want, scrape())
			first := *reviews
			assert.Equal(t, tc.want, scrape(), "again")
			if tc.reviewErr == nil {
				assert.Equal(t, first, *reviews, "the answers are reused")
				clk.SetTime(clk.Now().Add(allowedTTL))
				assert.Equal(t, tc.want, scrape(), "after they expire")
				if first > 0 {
					assert.Greater(t, *reviews, first, "and asked anew")
				}
			}
		})
	}
}

// over asks for reviews over a fake clientset's typed clients.
func over(c *fake.Clientset) ReviewClient {
	return ReviewClient{Tokens: c.AuthenticationV1().TokenReviews(), Access: c.AuthorizationV1().SubjectAccessReviews()}
}

// reviewingClient authenticates the tokens prometheus and nobody, and lets
// prometheus alone get /metrics. It counts the reviews.
func reviewingClient(fail error) (*fake.Clientset, *int) {
	client := fake.NewClientset()
	reviews := new(int)
	client.PrependReactor("create", "tokenreviews", func(action clienttesting.Action) (bool, runtime.Object, error) {
		*reviews++
		if fail != nil {
			return true, nil, fail
		}
		review := action.(clienttesting.CreateAction).GetObject().(*authenticationv1.TokenReview)
		switch review.Spec.Token {
		case "prometheus", "nobody":
			review.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: review.Spec.Token}}
		case "prometheus-scoped":
			review.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{
				Username: "prometheus", Extra: map[string]authenticationv1.ExtraValue{"scopes.example.com": {"none"}}}}
		}
		return true, review, nil
	})
	client.PrependReactor("create", "subjectaccessreviews", func(action clienttesting.Action) (bool, runtime.Object, error) {
		*reviews++
		review := action.(clienttesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview)
		attrs := review.Spec.NonResourceAttributes
		review.Status.Allowed = review.Spec.User == "prometheus" && len(review.Spec.Extra) == 0 && attrs.Verb == "get" && attrs.Path == "/metrics"
		return true, review, nil
	})
	return client, reviews
}

// A token whose user is narrowed by its extra is reviewed as that user,
// not served the same user's answer without it.
func TestAScopedTokenIsNotServedTheUnscopedAnswer(t *testing.T) {
	client, _ := reviewingClient(nil)
	auth := newDelegatedAuth(over(client), over(client), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("metrics")) }), clock.RealClock{})
	scrape := func(token string) int {
		r := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		r.Header.Set("Authorization", "Bearer "+token)
		w := httptest.NewRecorder()
		auth.ServeHTTP(w, r)
		return w.Code
	}
	require.Equal(t, http.StatusOK, scrape("prometheus"))
	assert.Equal(t, http.StatusForbidden, scrape("prometheus-scoped"))
	assert.Equal(t, http.StatusOK, scrape("prometheus"))
}

// A flood of tokens nobody issued costs the API server at most
// reviewsInFlight reviews at a time, and one caller's address at most
// reviewsPerCaller of them: one more caller is answered 429 at once,
// without a review, and a caller whose review failed is not reviewed again
// at once.
func TestReviewsAreBounded(t *testing.T) {
	client, reviews := reviewingClient(nil)
	release := make(chan struct{})
	client.PrependReactor("create", "tokenreviews", func(clienttesting.Action) (bool, runtime.Object, error) {
		<-release
		return false, nil, nil
	})
	clk := clocktesting.NewFakePassiveClock(time.Now())
	auth := newDelegatedAuth(over(client), over(client), http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), clk)
	scrape := func(from, token string) int {
		req := authorized(token)
		req.RemoteAddr = from + ":40000"
		rec := httptest.NewRecorder()
		auth.ServeHTTP(rec, req)
		return rec.Code
	}
	var wg sync.WaitGroup
	for i := range reviewsPerCaller {
		wg.Go(func() { assert.Equal(t, http.StatusUnauthorized, scrape("10.0.0.1", fmt.Sprintf("forged-%d", i))) })
	}
	require.Eventually(t, func() bool { return auth.budget.held() == reviewsPerCaller }, 5*time.Second, time.Millisecond)
	assert.Equal(t, http.StatusTooManyRequests, scrape("10.0.0.1", "one-more"), "one caller's share is taken")
	for i := reviewsPerCaller; i < reviewsInFlight; i++ {
		wg.Go(func() {
			assert.Equal(t, http.StatusUnauthorized, scrape(fmt.Sprintf("10.0.1.%d", i), fmt.Sprintf("forged-%d", i)))
		})
	}
	require.Eventually(t, func() bool { return auth.budget.held() == reviewsInFlight }, 5*time.Second, time.Millisecond)
	assert.Equal(t, http.StatusTooManyRequests, scrape("10.0.2.1", "one-more"), "every slot is taken")
	close(release)
	wg.Wait()
	assert.Equal(t, reviewsInFlight, *reviews, "one review each, none for those refused")
	assert.Equal(t, http.StatusOK, scrape("10.0.0.1", "prometheus"), "a slot is free again")
	assert.Zero(t, auth.budget.held(), "every slot released")

	failing, failed := reviewingClient(apierrors.NewForbidden(schema.GroupResource{}, "", errors.New("no")))
	auth = newDelegatedAuth(over(failing), over(failing), http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), clk)
	auth.ServeHTTP(httptest.NewRecorder(), authorized("prometheus"))
	asked := *failed
	auth.ServeHTTP(httptest.NewRecorder(), authorized("prometheus"))
	assert.Equal(t, asked, *failed, "a failed review is not asked again at once")
	clk.SetTime(clk.Now().Add(failedTTL + time.Millisecond))
	auth.ServeHTTP(httptest.NewRecorder(), authorized("prometheus"))
	assert.Greater(t, *failed, asked, "but after a moment")
}

// A valid token without the role, asking for path after path, takes review
// slots like an unknown token: once its share is taken, it is answered 429
// without a SubjectAccessReview.
func TestAccessReviewsAreBounded(t *testing.T) {
	client, _ := reviewingClient(nil)
	release := make(chan struct{})
	client.PrependReactor("create", "subjectaccessreviews", func(clienttesting.Action) (bool, runtime.Object, error) {
		<-release
		return false, nil, nil
	})
	auth := newDelegatedAuth(over(client), over(client), http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), clocktesting.NewFakePassiveClock(time.Now()))
	scrape := func(path string) int {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.Header.Set("Authorization", "Bearer nobody")
		rec := httptest.NewRecorder()
		auth.ServeHTTP(rec, req)
		return rec.Code
	}
	var wg sync.WaitGroup
	for i := range reviewsPerCaller {
		wg.Go(func() { assert.Equal(t, http.StatusForbidden, scrape(fmt.Sprintf("/metrics/%d", i))) })
	}
	require.Eventually(t, func() bool { return auth.budget.held() == reviewsPerCaller }, 5*time.Second, time.Millisecond)
	assert.Equal(t, http.StatusTooManyRequests, scrape("/metrics/more"))
	close(release)
	wg.Wait()
	assert.Equal(t, http.StatusForbidden, scrape("/metrics/0"), "answered from the cache")
}

// scraper scrapes /metrics through auth with a token, and says the code.
func scraper(auth *delegatedAuth) func(token string) int {
	return func(token string) int {
		rec := httptest.NewRecorder()
		auth.ServeHTTP(rec, authorized(token))
		return rec.Code
	}
}

// takeEveryReviewSlot holds every strangers' review slot, as forged tokens
// under review do (the fake client cannot hold reviews open: its reactors
// run under one lock).
func takeEveryReviewSlot(t *testing.T, auth *delegatedAuth) {
	for i := range reviewsInFlight {
		require.True(t, auth.budget.take(fmt.Sprint("10.0.0.", i)))
	}
}

func authorized(token string) *http.Request {
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	return req
}

// Prometheus's token is reviewed again ahead of its answer's expiry, on
// slots unknown tokens cannot take: while a flood of forged tokens keeps
// every review slot busy, its scrapes go on being served, past the time
// its first answer would have expired, not answered 429.
func TestAKnownTokenIsReviewedAgainAheadOfAFlood(t *testing.T) {
	client, _ := reviewingClient(nil)
	clk := clocktesting.NewFakePassiveClock(time.Now())
	auth := newDelegatedAuth(over(client), over(client), http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), clk)
	scrape := scraper(auth)
	require.Equal(t, http.StatusOK, scrape("prometheus"))

	takeEveryReviewSlot(t, auth)
	require.Equal(t, http.StatusTooManyRequests, scrape("forged"), "every slot is taken")

	clk.SetTime(clk.Now().Add(authenticatedTTL/2 + time.Second))
	// The fake's own list of actions is safe to read while the refresh runs.
	tokenReviews := func() int {
		n := 0
		for _, action := range client.Actions() {
			if action.GetResource().Resource == "tokenreviews" {
				n++
			}
		}
		return n
	}
	before := tokenReviews()
	assert.Equal(t, http.StatusOK, scrape("prometheus"), "served from the cache while it is reviewed again")
	require.Eventually(t, func() bool { return len(auth.refreshing) == 0 && tokenReviews() > before }, 5*time.Second, time.Millisecond)

	clk.SetTime(clk.Now().Add(authenticatedTTL / 2))
	assert.Equal(t, http.StatusOK, scrape("prometheus"), "past the first answer's expiry, still no wait")
}

// An authorized scraper, once let in, is never reviewed on the slots or the
// client a flood keeps busy: over ten minutes of scrapes every 30 s, past
// the expiry of both its token's and its access's first answers, every
// scrape is served while every review slot is taken, and only the refresh
// client is asked.
func TestAnAuthorizedScraperNeverWaitsBehindAFlood(t *testing.T) {
	reviews, asked := reviewingClient(nil)
	refreshes, _ := reviewingClient(nil)
	clk := clocktesting.NewFakePassiveClock(time.Now())
	auth := newDelegatedAuth(over(reviews), over(refreshes), http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), clk)
	scrape := scraper(auth)
	require.Equal(t, http.StatusOK, scrape("prometheus"))
	require.Equal(t, 2, *asked, "a TokenReview and a SubjectAccessReview")
	takeEveryReviewSlot(t, auth)
	for elapsed := time.Duration(0); elapsed < 10*time.Minute; elapsed += 30 * time.Second {
		clk.SetTime(clk.Now().Add(30 * time.Second))
		require.Equal(t, http.StatusOK, scrape("prometheus"), "after %s", elapsed)
		require.Eventually(t, func() bool { return len(auth.refreshing) == 0 }, 5*time.Second, time.Millisecond)
	}
	assert.Equal(t, 2, *asked, "no review on the flood's client")
	// The fake's own list of actions is safe to read beside the refreshes.
	assert.NotEmpty(t, refreshes.Actions(), "reviewed again on the refresh client")
}

// A flood of forged tokens, each new, cannot evict the answer that lets an
// authorized scraper in: refusals are cached apart from it. Prometheus,
// scraping every 60 s while more forged tokens than the caches hold
// arrive between its scrapes, is served every time without a review.
func TestForgedTokensDoNotEvictTheScrapersAnswer(t *testing.T) {
	reviews, asked := reviewingClient(nil)
	clk := clocktesting.NewFakePassiveClock(time.Now())
	auth := newDelegatedAuth(over(reviews), over(reviews), http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), clk)
	scrape := scraper(auth)
	require.Equal(t, http.StatusOK, scrape("prometheus"))
	for round := range 2 {
		for i := range 2 * reviewCacheSize {
			require.Equal(t, http.StatusUnauthorized, scrape(fmt.Sprintf("forged-%d-%d", round, i)))
		}
		before := *asked
		clk.SetTime(clk.Now().Add(time.Second))
		assert.Equal(t, http.StatusOK, scrape("prometheus"), "round %d", round)
		assert.Equal(t, before, *asked, "round %d: served from its cached answer", round)
	}
}

// A scraper slower than its answers' lives (Prometheus allows
// scrape_interval: 5m) never waits behind strangers either: every 5
// minutes for an hour, while a flood holds every strangers' slot, each of
// its scrapes is served 200, reviewed on the refresh client alone. A
// token the API server no longer knows loses that place.
func TestASlowScraperNeverWaitsBehindAFlood(t *testing.T) {
	reviews, asked := reviewingClient(nil)
	refreshes, _ := reviewingClient(nil)
	clk := clocktesting.NewFakePassiveClock(time.Now())
	auth := newDelegatedAuth(over(reviews), over(refreshes), http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), clk)
	scrape := scraper(auth)
	require.Equal(t, http.StatusOK, scrape("prometheus"))
	takeEveryReviewSlot(t, auth)
	asked0 := *asked
	for elapsed := 5 * time.Minute; elapsed <= time.Hour; elapsed += 5 * time.Minute {
		clk.SetTime(clk.Now().Add(5 * time.Minute))
		require.Equal(t, http.StatusOK, scrape("prometheus"), "after %s", elapsed)
		require.Eventually(t, func() bool { return len(auth.refreshing) == 0 }, 5*time.Second, time.Millisecond)
	}
	assert.Equal(t, asked0, *asked, "no review on the flood's client")
	assert.Equal(t, http.StatusTooManyRequests, scrape("stranger"), "a stranger still waits for the strangers' slots")

	// Revoked: the refresh client's review says so, and the next review
	// waits for the strangers' slots.
	refreshes.PrependReactor("create", "tokenreviews", func(action clienttesting.Action) (bool, runtime.Object, error) {
		return true, action.(clienttesting.CreateAction).GetObject(), nil
	})
	clk.SetTime(clk.Now().Add(5 * time.Minute))
	assert.Equal(t, http.StatusUnauthorized, scrape("prometheus"), "revoked")
	clk.SetTime(clk.Now().Add(unauthenticatedTTL + time.Second))
	assert.Equal(t, http.StatusTooManyRequests, scrape("prometheus"), "no longer let in: a stranger")
}
