package serving

import (
	"context"
	"crypto/sha256"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/client-go/util/retry"
)

// answer is a cached review that let its caller in: the user a token
// authenticates as (user set), or a user's access to a verb and path.
type answer struct {
	user       *authenticationv1.UserInfo
	reviewedAt time.Time
	// refreshing is set while it is reviewed again (refreshAhead).
	refreshing bool
}

// authenticate returns the token's user, nil for a token the API server does
// not know.
func (a *delegatedAuth) authenticate(ctx context.Context, caller, token string) (*authenticationv1.UserInfo, error) {
	sum := sha256.Sum256([]byte(token))
	key := string(sum[:])
	if cached, ok := a.users.Get(key); ok {
		known := cached.(answer)
		a.refreshAhead(ctx, a.users, key, known, authenticatedTTL, func(ctx context.Context) error {
			_, err := a.reviewToken(ctx, a.refreshes, key, token)
			return err
		})
		return known.user, nil
	}
	if cached, ok := a.unknown.Get(key); ok {
		if err, failed := cached.(error); failed {
			return nil, err
		}
		return nil, nil
	}
	client, release, err := a.lane(ctx, caller, letInToken+key)
	if err != nil {
		return nil, err
	}
	defer release()
	user, err := a.reviewToken(ctx, client, key, token)
	if err != nil {
		a.unknown.Add(key, errReviewFailed, failedTTL)
	}
	return user, err
}

// authorize returns why the user may not do verb on path, empty if allowed.
func (a *delegatedAuth) authorize(ctx context.Context, caller string, user *authenticationv1.UserInfo, verb, path string) (string, error) {
	key := accessKey(user, verb, path)
	if cached, ok := a.allowed.Get(key); ok {
		a.refreshAhead(ctx, a.allowed, key, cached.(answer), allowedTTL, func(ctx context.Context) error {
			_, err := a.reviewAccess(ctx, a.refreshes, key, user, verb, path)
			return err
		})
		return "", nil
	}
	if cached, ok := a.denied.Get(key); ok {
		return cached.(string), nil
	}
	client, release, err := a.lane(ctx, caller, letInAccess+key)
	if err != nil {
		return "", err
	}
	defer release()
	return a.reviewAccess(ctx, client, key, user, verb, path)
}

// The keys of letIn: a token's hash or an access's key, apart.
const (
	letInToken  = "token/"
	letInAccess = "access/"
)

// lane is where a review without a cached answer goes: one of a token or
// an access that let its caller in within letInTTL waits for a refresh
// slot and goes through the refresh client, as its answer's refresh would
// have; any other takes the caller's share of the strangers' slots, or is
// refused at once (errTooManyReviews).
func (a *delegatedAuth) lane(ctx context.Context, caller, key string) (ReviewClient, func(), error) {
	if _, known := a.letIn.Get(key); known {
		select {
		case a.refreshing <- struct{}{}:
			return a.refreshes, func() { <-a.refreshing }, nil
		case <-ctx.Done():
			return ReviewClient{}, nil, ctx.Err()
		}
	}
	if !a.budget.take(caller) {
		return ReviewClient{}, nil, errTooManyReviews
	}
	return a.reviews, func() { a.budget.release(caller) }, nil
}

// accessKey is what an access review's answer is cached by: the whole user
// (a token scoped through its extra must not be served the same user's
// unscoped answer), the verb and the path. Each part is length-prefixed,
// so no two users share a key.
func accessKey(user *authenticationv1.UserInfo, verb, path string) string {
	var key strings.Builder
	field := func(s string) { fmt.Fprintf(&key, "%d:%s", len(s), s) }
	field(user.Username)
	field(user.UID)
	field(strconv.Itoa(len(user.Groups)))
	for _, g := range user.Groups {
		field(g)
	}
	extraKeys := slices.Sorted(maps.Keys(user.Extra))
	field(strconv.Itoa(len(extraKeys)))
	for _, k := range extraKeys {
		field(k)
		field(strconv.Itoa(len(user.Extra[k])))
		for _, v := range user.Extra[k] {
			field(v)
		}
	}
	field(verb)
	field(path)
	return key.String()
}

// refreshAhead reviews an answer that let its caller in again, in the
// second half of its life, in the background, on slots and a client of its
// own: Prometheus, which scrapes at least every minute, is never reviewed
// behind a flood of unknown tokens and paths, and never waits: otherwise
// its scrapes would be answered 429, or 401 once a review timed out, when
// its answer expires during a flood. A review that fails leaves the answer
// to expire when it would have.
func (a *delegatedAuth) refreshAhead(ctx context.Context, answers *cache.LRUExpireCache, key string, cached answer, ttl time.Duration, review func(context.Context) error) {
	age := a.clock.Since(cached.reviewedAt)
	if cached.refreshing || age < ttl/2 || age >= ttl {
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
	answers.Add(key, cached, ttl-age)
	go func() {
		defer func() { <-a.refreshing }()
		if err := review(context.WithoutCancel(ctx)); err != nil {
			cached.refreshing = false
			answers.Add(key, cached, ttl-a.clock.Since(cached.reviewedAt))
		}
	}()
}

// reviewToken reviews a token and caches the answer; it leaves the cache
// to its caller when the review fails.
func (a *delegatedAuth) reviewToken(ctx context.Context, client ReviewClient, key, token string) (*authenticationv1.UserInfo, error) {
	var review *authenticationv1.TokenReview
	err := retry.OnError(authWebhookBackoff, retriable, func() error {
		ctx, cancel := context.WithTimeout(ctx, reviewTimeout)
		defer cancel()
		var err error
		review, err = client.Tokens.Create(ctx,
			&authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return nil, err
	}
	if !review.Status.Authenticated {
		a.users.Remove(key)
		a.letIn.Remove(letInToken + key)
		a.unknown.Add(key, (*authenticationv1.UserInfo)(nil), unauthenticatedTTL)
		return nil, nil
	}
	a.unknown.Remove(key)
	a.users.Add(key, answer{user: &review.Status.User, reviewedAt: a.clock.Now()}, authenticatedTTL)
	a.letIn.Add(letInToken+key, struct{}{}, letInTTL)
	return &review.Status.User, nil
}

// reviewAccess asks whether the user may do verb on path and caches the
// answer: the refusal, empty when allowed.
func (a *delegatedAuth) reviewAccess(ctx context.Context, client ReviewClient, key string, user *authenticationv1.UserInfo, verb, path string) (string, error) {
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range user.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	var review *authorizationv1.SubjectAccessReview
	err := retry.OnError(authWebhookBackoff, retriable, func() error {
		ctx, cancel := context.WithTimeout(ctx, reviewTimeout)
		defer cancel()
		var err error
		review, err = client.Access.Create(ctx, &authorizationv1.SubjectAccessReview{
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
		a.denied.Remove(key)
		a.allowed.Add(key, answer{reviewedAt: a.clock.Now()}, allowedTTL)
		a.letIn.Add(letInAccess+key, struct{}{}, letInTTL)
		return "", nil
	}
	denied := "Forbidden: user " + user.Username + " may not " + verb + " " + path
	if review.Status.Reason != "" {
		denied += ": " + review.Status.Reason
	}
	a.allowed.Remove(key)
	a.letIn.Remove(letInAccess + key)
	a.denied.Add(key, denied, deniedTTL)
	return denied, nil
}
