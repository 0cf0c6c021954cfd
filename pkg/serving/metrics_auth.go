package serving

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// How long a review's answer is reused, as kube-controller-manager's
// delegating authentication and authorization reuse theirs.
const (
	authenticatedTTL   = 2 * time.Minute
	unauthenticatedTTL = 10 * time.Second
	allowedTTL         = 5 * time.Minute
	deniedTTL          = 10 * time.Second
	// failedTTL is how long a review that failed (no answer) is not asked
	// again for the same token: a caller retrying at once gets the same.
	failedTTL = 2 * time.Second
	// letInTTL is how long a token or an access that let its caller in is
	// remembered after its answer expired: a caller slower than the
	// answers' lives (a scrape every 2, 5 or 10 minutes) is reviewed again
	// on the refresh slots and client, never behind strangers.
	letInTTL = time.Hour
	// reviewCacheSize bounds each of the four caches; the least recently
	// used go first.
	reviewCacheSize = 1024
	reviewTimeout   = 10 * time.Second
)

// What the reviews may take of the process. Callers without a cached
// answer share reviewsInFlight slots, at most reviewsPerCaller of them from
// one client address; one more is answered 429 at once. Their reviews go
// through the reviews client, which a flood may keep busy. A caller with a
// cached answer is never reviewed on those slots nor that client: its
// answer is reviewed again ahead of its expiry, in the background, on
// refreshesInFlight slots and the refreshes client, so Prometheus never
// waits behind a flood (reviewClients).
const (
	reviewsInFlight  = 16
	reviewsPerCaller = 4
	// refreshesInFlight are the slots for reviewing again an answer that
	// let its caller in.
	refreshesInFlight = 2
)

// authWebhookBackoff retries TokenReviews and SubjectAccessReviews briefly,
// as the API server's own delegating filters do.
var authWebhookBackoff = wait.Backoff{Duration: 500 * time.Millisecond, Factor: 1.5, Jitter: 0.2, Steps: 5}

// delegatedAuth protects a handler as kube-controller-manager protects its
// /metrics: the bearer token is authenticated with a TokenReview and its user
// authorized with a SubjectAccessReview for the request's verb on its path
// (the ClusterRole nhc-controller-metrics-reader grants GET on /metrics). No
// valid token is a 401, a user without the right a 403. It does what
// k8s.io/apiserver's delegating filters do for bearer tokens, which would
// cost the process 30 MB of resident memory for code it never runs
// (decisions.md).
type delegatedAuth struct {
	// reviews asks for callers without a cached answer; refreshes reviews
	// cached answers again.
	reviews, refreshes ReviewClient
	handler            http.Handler
	// users caches TokenReviews of tokens that authenticated by the
	// token's hash (an answer); unknown those of tokens the API server does
	// not know (a nil user) or whose review failed (errReviewFailed).
	// allowed caches SubjectAccessReviews that allowed by user, verb and
	// path (an answer); denied the refusals. Refusals are kept apart, so
	// that no flood of forged tokens or paths evicts the answer that lets
	// Prometheus in.
	users, unknown, allowed, denied *cache.LRUExpireCache
	// letIn remembers, by the same keys, the tokens and accesses that let
	// their caller in within letInTTL, whatever their answers' expiry.
	letIn *cache.LRUExpireCache
	// budget bounds the reviews of callers without a cached answer;
	// refreshing holds a slot for each answer reviewed again (refreshAhead).
	budget     *reviewBudget
	refreshing chan struct{}
	clock      clock.PassiveClock
}

// errReviewFailed stands for a review that got no answer, while it is cached.
var errReviewFailed = errors.New("the token review failed a moment ago")

// errTooManyReviews: the caller's share of the review slots is taken.
var errTooManyReviews = errors.New("too many reviews in flight")

// TokenReviews is the call that authenticates a token: the generic typed
// client and client-go's fake have it.
type TokenReviews interface {
	Create(context.Context, *authenticationv1.TokenReview, metav1.CreateOptions) (*authenticationv1.TokenReview, error)
}

// AccessReviews is the call that authorizes a user, as TokenReviews.
type AccessReviews interface {
	Create(context.Context, *authorizationv1.SubjectAccessReview, metav1.CreateOptions) (*authorizationv1.SubjectAccessReview, error)
}

// ReviewClient asks for both reviews, over one client and its rate limit.
type ReviewClient struct {
	Tokens TokenReviews
	Access AccessReviews
}

func newDelegatedAuth(reviews, refreshes ReviewClient, handler http.Handler, clk clock.PassiveClock) *delegatedAuth {
	return &delegatedAuth{
		reviews: reviews, refreshes: refreshes, handler: handler,
		users:      cache.NewLRUExpireCacheWithClock(reviewCacheSize, clk),
		unknown:    cache.NewLRUExpireCacheWithClock(reviewCacheSize, clk),
		allowed:    cache.NewLRUExpireCacheWithClock(reviewCacheSize, clk),
		denied:     cache.NewLRUExpireCacheWithClock(reviewCacheSize, clk),
		letIn:      cache.NewLRUExpireCacheWithClock(reviewCacheSize, clk),
		budget:     newReviewBudget(reviewsInFlight, reviewsPerCaller),
		refreshing: make(chan struct{}, refreshesInFlight),
		clock:      clk,
	}
}

func (a *delegatedAuth) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	token := bearerToken(r)
	if token == "" {
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
		return
	}
	caller := callerAddress(r)
	user, err := a.authenticate(r.Context(), caller, token)
	if errors.Is(err, errTooManyReviews) {
		tooManyReviews(w)
		return
	}
	if err != nil {
		klog.FromContext(r.Context()).V(2).Info("Cannot review a metrics token", "err", err)
	}
	if user == nil {
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
		return
	}
	// The verb of a non-resource URL is the method's name, as the API
	// server's request info makes it.
	denied, err := a.authorize(r.Context(), caller, user, strings.ToLower(r.Method), r.URL.Path)
	switch {
	case errors.Is(err, errTooManyReviews):
		tooManyReviews(w)
	case err != nil:
		klog.FromContext(r.Context()).V(2).Info("Cannot review a metrics request", "user", user.Username, "err", err)
		http.Error(w, "Internal Server Error", http.StatusInternalServerError)
	case denied != "":
		http.Error(w, denied, http.StatusForbidden)
	default:
		a.handler.ServeHTTP(w, r)
	}
}

func tooManyReviews(w http.ResponseWriter) {
	w.Header().Set("Retry-After", "1")
	http.Error(w, "Too many requests are being reviewed", http.StatusTooManyRequests)
}

// callerAddress is the host the request came from: the review slots are
// shared out by it.
func callerAddress(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// bearerToken is the request's bearer token, empty without one.
func bearerToken(r *http.Request) string {
	scheme, token, ok := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return ""
	}
	return strings.TrimSpace(token)
}

// retriable errors are worth a second review: the API server did not
// answer, was overloaded, or failed; not its answer that the review itself
// is wrong or forbidden.
func retriable(err error) bool {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		code := status.Status().Code
		return code >= http.StatusInternalServerError || code == http.StatusTooManyRequests
	}
	return true
}
