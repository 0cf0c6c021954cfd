// Package kubeclient reaches the few built-in APIs the controller uses
// (nodes, events and namespaces; leases; token and access reviews; roles)
// with client-go's generic typed client, over a scheme of those groups
// alone, and tells the API server how long a write may take
// (ServerTimeouts).
//
// client-go's clientset, its typed clients, discovery and leader election
// all import k8s.io/client-go/kubernetes/scheme, which registers every API
// group at start: its code, type data and documentation strings stay
// resident in every replica, several MiB of memory for some fifty groups
// the controller never reads. The controller's binary must not import it;
// `make verify` checks that it does not.
package kubeclient

import (
	"net/http"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/gentype"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// Scheme holds the built-in kinds the controller reads or writes, and
// nothing else: the event recorder resolves the kinds of the objects it
// records events about from it, once the NodeHealthCheck kind is added.
var Scheme = runtime.NewScheme()

var (
	// Codecs are the serializers of Scheme's kinds.
	Codecs = serializer.NewCodecFactory(Scheme)
	// ParameterCodec encodes the options of requests for Scheme's kinds.
	ParameterCodec = runtime.NewParameterCodec(Scheme)
)

func init() {
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, coordinationv1.AddToScheme, authenticationv1.AddToScheme, authorizationv1.AddToScheme, rbacv1.AddToScheme,
	} {
		utilruntime.Must(add(Scheme))
	}
	metav1.AddToGroupVersion(Scheme, schema.GroupVersion{Version: "v1"})
}

// Clients are REST clients of the groups the controller uses. They share
// one HTTP client and the config's rate limiter, as a clientset's do.
type Clients struct {
	core, coordination, authentication, authorization, rbac rest.Interface
}

// New returns the clients of a config.
func New(config *rest.Config) (*Clients, error) {
	httpClient, err := rest.HTTPClientFor(config)
	if err != nil {
		return nil, err
	}
	return NewForConfigAndClient(config, httpClient)
}

// NewForConfigAndClient returns the clients of a config over an HTTP client.
func NewForConfigAndClient(config *rest.Config, httpClient *http.Client) (*Clients, error) {
	config = rest.CopyConfig(config)
	if config.RateLimiter == nil {
		// One limiter for every group, client-go's defaults unless set; a
		// negative QPS is none.
		qps, burst := config.QPS, config.Burst
		if qps == 0 {
			qps = rest.DefaultQPS
		}
		if burst == 0 {
			burst = rest.DefaultBurst
		}
		if qps > 0 {
			config.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(qps, burst)
		}
	}
	var c Clients
	for _, g := range []struct {
		client  *rest.Interface
		gv      schema.GroupVersion
		apiPath string
	}{
		{&c.core, corev1.SchemeGroupVersion, "/api"},
		{&c.coordination, coordinationv1.SchemeGroupVersion, "/apis"},
		{&c.authentication, authenticationv1.SchemeGroupVersion, "/apis"},
		{&c.authorization, authorizationv1.SchemeGroupVersion, "/apis"},
		{&c.rbac, rbacv1.SchemeGroupVersion, "/apis"},
	} {
		gc := rest.CopyConfig(config)
		gv := g.gv
		gc.GroupVersion, gc.APIPath = &gv, g.apiPath
		gc.NegotiatedSerializer = rest.CodecFactoryForGeneratedClient(Scheme, Codecs).WithoutConversion()
		if gc.UserAgent == "" {
			gc.UserAgent = rest.DefaultKubernetesUserAgent()
		}
		rc, err := rest.RESTClientForConfigAndClient(gc, httpClient)
		if err != nil {
			return nil, err
		}
		*g.client = rc
	}
	return &c, nil
}

// Nodes reads and patches nodes.
func (c *Clients) Nodes() *gentype.ClientWithList[*corev1.Node, *corev1.NodeList] {
	return gentype.NewClientWithList("nodes", c.core, ParameterCodec, "", func() *corev1.Node { return &corev1.Node{} },
		func() *corev1.NodeList { return &corev1.NodeList{} }, gentype.PrefersProtobuf[*corev1.Node]())
}

// Namespaces creates the node leases' namespace.
func (c *Clients) Namespaces() *gentype.ClientWithList[*corev1.Namespace, *corev1.NamespaceList] {
	return gentype.NewClientWithList("namespaces", c.core, ParameterCodec, "", func() *corev1.Namespace { return &corev1.Namespace{} },
		func() *corev1.NamespaceList { return &corev1.NamespaceList{} }, gentype.PrefersProtobuf[*corev1.Namespace]())
}

// Events records events in a namespace; "" for every namespace.
func (c *Clients) Events(namespace string) *gentype.ClientWithList[*corev1.Event, *corev1.EventList] {
	return gentype.NewClientWithList("events", c.core, ParameterCodec, namespace, func() *corev1.Event { return &corev1.Event{} },
		func() *corev1.EventList { return &corev1.EventList{} }, gentype.PrefersProtobuf[*corev1.Event]())
}

// Leases reads and writes the leases of a namespace.
func (c *Clients) Leases(namespace string) *gentype.ClientWithList[*coordinationv1.Lease, *coordinationv1.LeaseList] {
	return gentype.NewClientWithList("leases", c.coordination, ParameterCodec, namespace, func() *coordinationv1.Lease { return &coordinationv1.Lease{} },
		func() *coordinationv1.LeaseList { return &coordinationv1.LeaseList{} }, gentype.PrefersProtobuf[*coordinationv1.Lease]())
}

// TokenReviews authenticates bearer tokens.
func (c *Clients) TokenReviews() *gentype.Client[*authenticationv1.TokenReview] {
	return gentype.NewClient("tokenreviews", c.authentication, ParameterCodec, "", func() *authenticationv1.TokenReview { return &authenticationv1.TokenReview{} },
		gentype.PrefersProtobuf[*authenticationv1.TokenReview]())
}

// SelfSubjectReviews tells who the controller is.
func (c *Clients) SelfSubjectReviews() *gentype.Client[*authenticationv1.SelfSubjectReview] {
	return gentype.NewClient("selfsubjectreviews", c.authentication, ParameterCodec, "", func() *authenticationv1.SelfSubjectReview { return &authenticationv1.SelfSubjectReview{} },
		gentype.PrefersProtobuf[*authenticationv1.SelfSubjectReview]())
}

// SubjectAccessReviews authorizes a user's request.
func (c *Clients) SubjectAccessReviews() *gentype.Client[*authorizationv1.SubjectAccessReview] {
	return gentype.NewClient("subjectaccessreviews", c.authorization, ParameterCodec, "", func() *authorizationv1.SubjectAccessReview { return &authorizationv1.SubjectAccessReview{} },
		gentype.PrefersProtobuf[*authorizationv1.SubjectAccessReview]())
}

// SelfSubjectAccessReviews tells whether the controller's role allows a
// request.
func (c *Clients) SelfSubjectAccessReviews() *gentype.Client[*authorizationv1.SelfSubjectAccessReview] {
	return gentype.NewClient("selfsubjectaccessreviews", c.authorization, ParameterCodec, "", func() *authorizationv1.SelfSubjectAccessReview { return &authorizationv1.SelfSubjectAccessReview{} },
		gentype.PrefersProtobuf[*authorizationv1.SelfSubjectAccessReview]())
}

// ClusterRoles reads cluster roles.
func (c *Clients) ClusterRoles() *gentype.ClientWithList[*rbacv1.ClusterRole, *rbacv1.ClusterRoleList] {
	return gentype.NewClientWithList("clusterroles", c.rbac, ParameterCodec, "", func() *rbacv1.ClusterRole { return &rbacv1.ClusterRole{} },
		func() *rbacv1.ClusterRoleList { return &rbacv1.ClusterRoleList{} }, gentype.PrefersProtobuf[*rbacv1.ClusterRole]())
}

// RoleBindings writes the role bindings of a namespace.
func (c *Clients) RoleBindings(namespace string) *gentype.ClientWithList[*rbacv1.RoleBinding, *rbacv1.RoleBindingList] {
	return gentype.NewClientWithList("rolebindings", c.rbac, ParameterCodec, namespace, func() *rbacv1.RoleBinding { return &rbacv1.RoleBinding{} },
		func() *rbacv1.RoleBindingList { return &rbacv1.RoleBindingList{} }, gentype.PrefersProtobuf[*rbacv1.RoleBinding]())
}
