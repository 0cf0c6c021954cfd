package templates

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/clock"

	"github.com/nodehealthcheck/nhc-controller/pkg/health"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/resource"
)

// ReadAll resolves templates and reads each with GET, for readers
// without informers (kubectl nhc), and checks them as the controller does:
// the problem is the one the controller reports, in its words. What cannot
// be read (discovery failing, a forbidden GET) is left out of the check and
// returned in unreadable.
func ReadAll(ctx context.Context, mapper meta.RESTMapper, client dynamic.Interface, refs []corev1.ObjectReference) (templates []Template, problem *health.Problem, unreadable []error) {
	resolver := NewResolver(Resettable{RESTMapper: mapper}, nil, client, clock.RealClock{})
	setProblem := func(p *health.Problem) {
		if problem == nil {
			problem = p
		}
	}
	var objs []*unstructured.Unstructured
	for _, ref := range refs {
		tmpl, p, err := resolver.Resolve(ctx, ref)
		if err != nil {
			unreadable = append(unreadable, err)
			continue
		}
		if p != nil {
			setProblem(p)
			continue
		}
		templates = append(templates, tmpl)
		obj, err := getTemplate(ctx, client, tmpl)
		if err != nil {
			unreadable = append(unreadable, fmt.Errorf("reading template %s %s: %w", ref.Kind, describe(tmpl), err))
			continue
		}
		if p := checkTemplate(tmpl, obj); p != nil {
			setProblem(p)
			continue
		}
		objs = append(objs, obj)
	}
	if problem == nil {
		problem = CheckDistinct(templates)
	}
	if problem == nil {
		problem = CheckKinds(objs)
	}
	return templates, problem, unreadable
}

// getTemplate reads a template with GET, as kubectl nhc does and as the
// controller does for a kind it may not watch, and keeps of it what an
// informer would (resource.Keep): one that does not exist is nil, without an
// error.
func getTemplate(ctx context.Context, client dynamic.Interface, tmpl Template) (*unstructured.Unstructured, error) {
	obj, err := client.Resource(tmpl.Resource).Namespace(tmpl.Namespace).Get(ctx, tmpl.Ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return resource.Keep(obj, true), nil
}

// Resettable makes a mapper that may not reset (a kubeconfig's) one that
// resets when it can.
type Resettable struct{ meta.RESTMapper }

// Reset makes the mapper read the API server again, if it can.
func (m Resettable) Reset() { meta.MaybeResetRESTMapper(m.RESTMapper) }
