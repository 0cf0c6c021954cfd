package main

import (
	"context"
	"crypto/sha256"
	"errors"
	"net/http"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
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
	// reviewCacheSize bounds each cache; the least recently used go first.
	reviewCacheSize = 1024
	reviewTimeout   = 10 * time.Second
)

// What the reviews may take of the API server and of the process: a
// client of their own with this rate limit, and at most reviewsInFlight
// callers reviewed at once; one more is answered 429 at once. Prometheus's
// token is reviewed once every authenticatedTTL, whatever anyone else sends.
const (
	reviewQPS       = 20
	reviewBurst     = 40
	reviewsInFlight = 16
	// refreshesInFlight are the slots for reviewing again a token that
	// authenticated before, apart from reviewsInFlight: unknown tokens
	// cannot take them.
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
// cost the process 30 MB of resident memory for code it never runs.
type delegatedAuth struct {
	client  kubernetes.Interface
	handler http.Handler
	// users caches TokenReviews by the token's hash, a nil user for an
	// unknown token, errReviewFailed for a review that failed; access
	// caches SubjectAccessReviews by user, verb and path, the refusal or
	// "" when allowed.
	users, access *cache.LRUExpireCache
	// inFlight holds a slot for each caller being reviewed; refreshing
	// one for each known token reviewed again ahead of its expiry.
	inFlight, refreshing chan struct{}
	clock                clock.PassiveClock
}

// authenticated is a cached TokenReview that authenticated its token.
type authenticated struct {
	user       *authenticationv1.UserInfo
	reviewedAt time.Time
	// refreshing is set while it is reviewed again (refreshAhead).
	refreshing bool
}

// errReviewFailed stands for a review that got no answer, while it is cached.
var errReviewFailed = errors.New("the token review failed a moment ago")

func protectMetrics(kubeClient kubernetes.Interface, handler http.Handler) http.Handler {
	return newDelegatedAuth(kubeClient, handler, clock.RealClock{})
}

func newDelegatedAuth(kubeClient kubernetes.Interface, handler http.Handler, clk clock.PassiveClock) *delegatedAuth {
	return &delegatedAuth{
		client: kubeClient, handler: handler,
		users:      cache.NewLRUExpireCacheWithClock(reviewCacheSize, clk),
		access:     cache.NewLRUExpireCacheWithClock(reviewCacheSize, clk),
		inFlight:   make(chan struct{}, reviewsInFlight),
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
	user, err := a.authenticate(r.Context(), token)
	if errors.Is(err, errTooManyReviews) {
		w.Header().Set("Retry-After", "1")
		http.Error(w, "Too many requests are being authenticated", http.StatusTooManyRequests)
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
	denied, err := a.authorize(r.Context(), user, strings.ToLower(r.Method), r.URL.Path)
	switch {
	case err != nil:
		klog.FromContext(r.Context()).V(2).Info("Cannot review a metrics request", "user", user.Username, "err", err)
		http.Error(w, "Internal Server Error", http.StatusInternalServerError)
	case denied != "":
		http.Error(w, denied, http.StatusForbidden)
	default:
		a.handler.ServeHTTP(w, r)
	}
}

// authenticate returns the token's user, nil for a token the API server does
// not know.
func (a *delegatedAuth) authenticate(ctx context.Context, token string) (*authenticationv1.UserInfo, error) {
	sum := sha256.Sum256([]byte(token))
	key := string(sum[:])
	if cached, ok := a.users.Get(key); ok {
		switch cached := cached.(type) {
		case error:
			return nil, cached
		case authenticated:
			a.refreshAhead(ctx, key, token, cached)
			return cached.user, nil
		}
		return nil, nil
	}
	select {
	case a.inFlight <- struct{}{}:
		defer func() { <-a.inFlight }()
	default:
		return nil, errTooManyReviews
	}
	user, err := a.review(ctx, key, token)
	if err != nil {
		a.users.Add(key, errReviewFailed, failedTTL)
	}
	return user, err
}

// refreshAhead reviews a token that authenticated again, in the second
// half of its cached answer's life, on slots of its own: Prometheus, which
// scrapes at least every minute, is never reviewed on the slots that a
// flood of unknown tokens keeps busy, and never waits (issue 30: its
// scrapes were answered 429 once its answer expired during a flood).
// A review that fails leaves the answer to expire when it would have.
func (a *delegatedAuth) refreshAhead(ctx context.Context, key, token string, cached authenticated) {
	age := a.clock.Since(cached.reviewedAt)
	if cached.refreshing || age < authenticatedTTL/2 || age >= authenticatedTTL {
		return
	}
	select {
	case a.refreshing <- struct{}{}:
	default:
		return
	}
	// Marked, with its expiry kept, so that the callers meanwhile start no
	// other review.
	cached.refreshing = true
	a.users.Add(key, cached, authenticatedTTL-age)
	go func() {
		defer func() { <-a.refreshing }()
		if _, err := a.review(context.WithoutCancel(ctx), key, token); err != nil {
			cached.refreshing = false
			a.users.Add(key, cached, authenticatedTTL-a.clock.Since(cached.reviewedAt))
		}
	}()
}

// review reviews a token and caches the answer; it leaves the cache to its
// caller when the review fails.
func (a *delegatedAuth) review(ctx context.Context, key, token string) (*authenticationv1.UserInfo, error) {
	var review *authenticationv1.TokenReview
	err := retry.OnError(authWebhookBackoff, retriable, func() error {
		ctx, cancel := context.WithTimeout(ctx, reviewTimeout)
		defer cancel()
		var err error
		review, err = a.client.AuthenticationV1().TokenReviews().Create(ctx,
			&authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return nil, err
	}
	if !review.Status.Authenticated {
		a.users.Add(key, (*authenticationv1.UserInfo)(nil), unauthenticatedTTL)
		return nil, nil
	}
	a.users.Add(key, authenticated{user: &review.Status.User, reviewedAt: a.clock.Now()}, authenticatedTTL)
	return &review.Status.User, nil
}

// errTooManyReviews: reviewsInFlight callers are being reviewed already.
var errTooManyReviews = errors.New("too many token reviews in flight")

// authorize returns why the user may not do verb on path, empty if allowed.
func (a *delegatedAuth) authorize(ctx context.Context, user *authenticationv1.UserInfo, verb, path string) (string, error) {
	key := user.Username + "\x00" + user.UID + "\x00" + strings.Join(user.Groups, ",") + "\x00" + verb + "\x00" + path
	if denied, ok := a.access.Get(key); ok {
		return denied.(string), nil
	}
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range user.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	var review *authorizationv1.SubjectAccessReview
	err := retry.OnError(authWebhookBackoff, retriable, func() error {
		ctx, cancel := context.WithTimeout(ctx, reviewTimeout)
		defer cancel()
		var err error
		review, err = a.client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{
				User: user.Username, UID: user.UID, Groups: user.Groups, Extra: extra,
				NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: path, Verb: verb},
			},
		}, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return "", err
	}
	if review.Status.Allowed {
		a.access.Add(key, "", allowedTTL)
		return "", nil
	}
	denied := "Forbidden: user " + user.Username + " may not " + verb + " " + path
	if review.Status.Reason != "" {
		denied += ": " + review.Status.Reason
	}
	a.access.Add(key, denied, deniedTTL)
	return denied, nil
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
