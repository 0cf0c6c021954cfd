package remediation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/resource"
)

// resourceClient sends the requests of remediation resources through the
// dynamic client, and of node annotations through the typed client.
type resourceClient struct {
	dynamic dynamic.Interface
	// answers sends the deletes whose answer is read: whether the
	// resource went at once. Nil with a fake dynamic client: nothing is
	// then known gone.
	answers rest.Interface
	nodes   NodePatcher
}

// NodePatcher patches nodes.
type NodePatcher interface {
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (*corev1.Node, error)
}

// newResourceClient returns a client; config, when not nil, is the
// dynamic client's, for the deletes whose answer is read.
func newResourceClient(dynamicClient dynamic.Interface, config *rest.Config, nodes NodePatcher) (*resourceClient, error) {
	c := &resourceClient{dynamic: dynamicClient, nodes: nodes}
	if config != nil {
		answers, err := rest.UnversionedRESTClientFor(dynamic.ConfigFor(config))
		if err != nil {
			return nil, err
		}
		c.answers = answers
	}
	return c, nil
}

// get reads a remediation resource.
func (c *resourceClient) get(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (*unstructured.Unstructured, error) {
	return c.dynamic.Resource(gvr).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
}

// notOwnedError reports a resource that stands where ours would, owned by
// someone else: it is never overwritten.
type notOwnedError struct {
	Resource corev1.ObjectReference
	Owners   []string
}

func (e *notOwnedError) Error() string {
	owners := "no NodeHealthCheck"
	if len(e.Owners) > 0 {
		owners = "NodeHealthCheck " + strings.Join(e.Owners, ", ")
	}
	return fmt.Sprintf("%s %s/%s already exists and belongs to %s; it is left alone", e.Resource.Kind, e.Resource.Namespace, e.Resource.Name, owners)
}

// Create creates a remediation resource. When one of the same name exists
// already and is the NodeHealthCheck's own for the same node and template (a
// create whose result we did not see), that one is returned as created. When
// the create's result is unknown (a timeout, a 5xx such as a remediator's
// webhook failing), a GET settles it: ours there counts as created, nothing
// there means the create certainly failed.
func (c *resourceClient) Create(ctx context.Context, gvr schema.GroupVersionResource, obj *unstructured.Unstructured, nhc *v1alpha1.NodeHealthCheck) (*unstructured.Unstructured, error) {
	client := c.dynamic.Resource(gvr).Namespace(obj.GetNamespace())
	created, err := client.Create(ctx, obj, metav1.CreateOptions{FieldManager: v1alpha1.FieldManager})
	if err == nil || obj.GetName() == "" {
		return created, err
	}
	alreadyExists := apierrors.IsAlreadyExists(err)
	if !alreadyExists && certainlyFailed(err) {
		return nil, err
	}
	existing, getErr := client.Get(ctx, obj.GetName(), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(getErr) && !alreadyExists:
		return nil, &notCreatedError{err: err}
	case getErr != nil:
		return nil, err
	}
	sameTemplate := existing.GetAnnotations()[v1alpha1.TemplateNameAnnotation] == obj.GetAnnotations()[v1alpha1.TemplateNameAnnotation]
	if resource.OwnedBy(existing, nhc) && resource.TargetNode(existing) == resource.TargetNode(obj) && sameTemplate {
		return existing, nil
	}
	return nil, &notOwnedError{Resource: resource.Reference(existing), Owners: resource.OwnerNames(existing)}
}

// notCreatedError is a create whose result was unknown until a GET found
// nothing: it certainly did not happen.
type notCreatedError struct {
	err error
}

func (e *notCreatedError) Error() string { return e.err.Error() + " (nothing was created)" }
func (e *notCreatedError) Unwrap() error { return e.err }

// Delete deletes a remediation resource if it is still the one referenced
// (same UID), and tells whether it is gone: the API server's answer shows
// it deleted at once (no finalizer holds it), or it was gone already. A
// resource gone already counts as deleted.
func (c *resourceClient) Delete(ctx context.Context, gvr schema.GroupVersionResource, ref corev1.ObjectReference) (gone bool, err error) {
	background := metav1.DeletePropagationBackground
	opts := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &ref.UID}, PropagationPolicy: &background}
	if c.answers == nil {
		err = c.dynamic.Resource(gvr).Namespace(ref.Namespace).Delete(ctx, ref.Name, opts)
	} else {
		gone, err = c.deleteReadingAnswer(ctx, gvr, ref, opts)
	}
	if apierrors.IsNotFound(err) || (apierrors.IsConflict(err) && ref.UID != "") {
		// Gone, or replaced by another object of the same name.
		return true, nil
	}
	return gone, err
}

// deleteReadingAnswer sends a delete as the dynamic client does, asking
// for the answer's metadata alone: an object deleted at once comes back
// without a deletion timestamp (or as a Status of success), one a
// finalizer holds with it.
func (c *resourceClient) deleteReadingAnswer(ctx context.Context, gvr schema.GroupVersionResource, ref corev1.ObjectReference, opts metav1.DeleteOptions) (bool, error) {
	opts.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "DeleteOptions"}
	body, err := json.Marshal(&opts)
	if err != nil {
		return false, err
	}
	prefix := []string{"/apis", gvr.Group, gvr.Version}
	if gvr.Group == "" {
		prefix = []string{"/api", gvr.Version}
	}
	raw, err := c.answers.Delete().AbsPath(prefix...).NamespaceIfScoped(ref.Namespace, ref.Namespace != "").Resource(gvr.Resource).Name(ref.Name).
		SetHeader("Content-Type", "application/json").SetHeader("Accept", acceptMetadata).Body(body).Do(ctx).Raw()
	if err != nil {
		return false, err
	}
	var answer metav1.PartialObjectMetadata
	if json.Unmarshal(raw, &answer) != nil {
		// Deleted, but how is not known: not gone for sure.
		return false, nil
	}
	return answer.Kind == "Status" || answer.DeletionTimestamp == nil, nil
}

// Annotate sets an annotation on a remediation resource, or removes it when
// value is nil. The patch carries the UID, so it fails on a replaced object.
func (c *resourceClient) Annotate(ctx context.Context, gvr schema.GroupVersionResource, ref corev1.ObjectReference, key string, value *string) error {
	patch, err := annotationPatch(ref.UID, key, value)
	if err != nil {
		return err
	}
	_, err = c.dynamic.Resource(gvr).Namespace(ref.Namespace).Patch(ctx, ref.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: v1alpha1.FieldManager})
	return err
}

// removeNodeAnnotation removes an annotation from a node.
func (c *resourceClient) removeNodeAnnotation(ctx context.Context, node, key string) error {
	patch, err := annotationPatch("", key, nil)
	if err != nil {
		return err
	}
	_, err = c.nodes.Patch(ctx, node, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: v1alpha1.FieldManager})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func annotationPatch(uid types.UID, key string, value *string) ([]byte, error) {
	metadata := map[string]any{"annotations": map[string]any{key: value}}
	if uid != "" {
		metadata["uid"] = uid
	}
	return json.Marshal(map[string]any{"metadata": metadata})
}

// certainlyFailed tells whether a write surely did not happen, as opposed
// to a timeout or a lost connection, after which it may have. A 429 was
// rejected before anything happened.
func certainlyFailed(err error) bool {
	var notOwned *notOwnedError
	var notCreated *notCreatedError
	if errors.As(err, &notOwned) || errors.As(err, &notCreated) {
		return true
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false
	}
	code := status.Status().Code
	return code >= 400 && code < 500 && !apierrors.IsTimeout(err) && !apierrors.IsServerTimeout(err)
}
