package templates

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/nodehealthcheck/nhc-controller/pkg/health"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/resource"
)

// A template kind that may be read but not listed or watched (the spec's
// aggregated role example grants only get) is read with GET.
const (
	// CacheTime is how long a template read with GET is used. Its changes
	// come with no event, so its NodeHealthChecks sync again when it expires
	// (gather.Seen.RefreshAfter) and read it again.
	CacheTime = 30 * time.Second
	// getTimeout bounds one GET of a template.
	getTimeout = 10 * time.Second
)

// messageGetForbidden (kind, template, error, resource) says that a template
// may not even be read with GET.
const messageGetForbidden = "Remediation template %s %s cannot be read: %v. Grant get on %s (get, list and watch let changes be seen at once), for example with a ClusterRole labelled rbac.ext-remediation/aggregate-to-ext-remediation=true"

// messageTemplatesUnwatchable (resource, error) says that the templates of a
// kind cannot be watched for another reason than a missing permission.
const messageTemplatesUnwatchable = "Remediation templates %s cannot be watched: %v"

// Read is what reading one template found.
type Read struct {
	// Obj is the template; nil with a problem, or while not ready.
	Obj     *unstructured.Unstructured
	Problem *health.Problem
	// Ready is false while the template cannot be known: its informer has
	// not synced, or it may not be read at all.
	Ready bool
	// RefreshAfter is how soon a template read with GET is read again; zero
	// for a watched one.
	RefreshAfter time.Duration
}

// Get reads a template from its informer's cache, or with GET while its
// kind may not be listed or watched, and checks it. An error (a GET failed)
// is worth a retry.
func (t *Resolver) Get(ctx context.Context, tmpl Template) (Read, error) {
	state := t.caches.CacheState(tmpl.Resource)
	switch {
	case state.Synced:
		obj := t.caches.Get(tmpl.Resource, tmpl.Namespace, tmpl.Ref.Name)
		if obj != nil {
			if kept, _ := resource.KeptTemplate(obj); kept == resource.TemplateNotKept {
				return t.fetchVersion(ctx, tmpl, obj.GetResourceVersion())
			}
		}
		return checked(tmpl, obj, 0), nil
	case apierrors.IsForbidden(state.Err):
		return t.fetch(ctx, tmpl)
	case state.Err != nil:
		return Read{Problem: NotFound(fmt.Sprintf(messageTemplatesUnwatchable, tmpl.Resource.GroupResource(), state.Err))}, nil
	}
	return Read{}, nil // its informer is starting
}

// checked is a template as read (nil: not found), or the problem that keeps
// it from use.
func checked(tmpl Template, obj *unstructured.Unstructured, refreshAfter time.Duration) Read {
	if problem := checkTemplate(tmpl, obj); problem != nil {
		return Read{Problem: problem, Ready: true, RefreshAfter: refreshAfter}
	}
	return Read{Obj: obj, Ready: true, RefreshAfter: refreshAfter}
}

// fetch reads a template with GET, at most once per CacheTime, for a
// kind that may not be watched: no event tells of its changes.
func (t *Resolver) fetch(ctx context.Context, tmpl Template) (Read, error) {
	now := t.clock.Now()
	return t.fetchUnless(ctx, tmpl, func(f fetchedTemplate) (time.Duration, bool) {
		left := f.read.Add(CacheTime).Sub(now)
		return left, left > 0
	})
}

// fetchVersion reads with GET a template whose cache keeps its metadata
// alone, once for each version the cache shows: a template is read whole
// when it changed, not at every sync.
func (t *Resolver) fetchVersion(ctx context.Context, tmpl Template, version string) (Read, error) {
	return t.fetchUnless(ctx, tmpl, func(f fetchedTemplate) (time.Duration, bool) {
		return 0, f.obj != nil && f.obj.GetResourceVersion() == version
	})
}

// fetchUnless reads a template with GET unless what was read before is
// current (with how soon it is read again). A template that may not be
// read at all disables its NodeHealthChecks, with what to grant; that is
// not cached, so a grant is used at the next sync.
func (t *Resolver) fetchUnless(ctx context.Context, tmpl Template, current func(fetchedTemplate) (refreshAfter time.Duration, ok bool)) (Read, error) {
	id := templateID{resource: tmpl.Resource, namespace: tmpl.Namespace, name: tmpl.Ref.Name}
	t.mu.Lock()
	f, cached := t.fetched[id]
	t.mu.Unlock()
	if cached {
		if refreshAfter, ok := current(f); ok {
			return checked(tmpl, f.obj, refreshAfter), nil
		}
	}
	ctx, cancel := context.WithTimeout(ctx, getTimeout)
	defer cancel()
	obj, err := getTemplate(ctx, t.client, tmpl)
	if apierrors.IsForbidden(err) {
		return Read{Problem: NotFound(fmt.Sprintf(messageGetForbidden, tmpl.Ref.Kind, describe(tmpl), err, tmpl.Resource.GroupResource()))}, nil
	}
	if err != nil {
		return Read{}, fmt.Errorf("reading template %s %s with GET: %w", tmpl.Ref.Kind, describe(tmpl), err)
	}
	f = fetchedTemplate{obj: obj, read: t.clock.Now()}
	t.remember(id, f)
	refreshAfter, _ := current(f)
	return checked(tmpl, f.obj, refreshAfter), nil
}

// remember caches a template read with GET, and drops the expired ones, so
// that templates no longer referenced do not stay.
func (t *Resolver) remember(id templateID, f fetchedTemplate) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for other, old := range t.fetched {
		if f.read.Sub(old.read) >= CacheTime {
			delete(t.fetched, other)
		}
	}
	t.fetched[id] = f
}
