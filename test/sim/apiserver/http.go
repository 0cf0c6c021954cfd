package apiserver

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// The REST protocol of the simulated API server: discovery, get, list,
// watch (resuming from a resourceVersion, or streaming the initial list
// first), create, update, merge patch and delete, on objects and their
// status subresource, answered in JSON as kube-apiserver answers.

func runtimeRaw(raw []byte) runtime.RawExtension { return runtime.RawExtension{Raw: raw} }

// Request is a parsed REST request: what a call asks of the server, for
// the checker that judges it and the faults that strike it.
type Request struct {
	// Verb is get, list, watch, create, update, patch, delete or discovery.
	Verb        string
	GVR         schema.GroupVersionResource
	Namespace   string
	Name        string
	Subresource string
	// Body is the request's body: the object a create or update sends.
	Body  []byte
	query map[string][]string
}

func (r *Request) param(name string) string {
	if v := r.query[name]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// SelectedName is the one name a list's field selector asks for
// (metadata.name=NAME: a consistent read of one object), or "".
func (r *Request) SelectedName() string {
	selector, err := fields.ParseSelector(r.param("fieldSelector"))
	if err != nil {
		return ""
	}
	name, _ := selector.RequiresExactMatch("metadata.name")
	return name
}

// IsWrite tells whether a request changes something.
func (r *Request) IsWrite() bool {
	return r.Verb != "get" && r.Verb != "list" && r.Verb != "watch" && r.Verb != "discovery"
}

// parse splits a request's path: /api/v1/..., /apis/group/version/...,
// or discovery.
func parse(req *http.Request, body []byte) Request {
	r := Request{query: req.URL.Query(), Body: body, Verb: "discovery"}
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	var rest []string
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		r.GVR.Version, rest = parts[1], parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		r.GVR.Group, r.GVR.Version, rest = parts[1], parts[2], parts[3:]
	}
	if len(rest) == 0 {
		return r
	}
	if rest[0] == "namespaces" && len(rest) >= 3 {
		r.Namespace, rest = rest[1], rest[2:]
	}
	r.GVR.Resource = rest[0]
	if len(rest) > 1 {
		r.Name = rest[1]
	}
	if len(rest) > 2 {
		r.Subresource = rest[2]
	}
	switch req.Method {
	case http.MethodGet:
		switch {
		case r.param("watch") == "true" || r.param("watch") == "1":
			r.Verb = "watch"
		case r.Name == "":
			r.Verb = "list"
		default:
			r.Verb = "get"
		}
	case http.MethodPost:
		r.Verb = "create"
	case http.MethodPut:
		r.Verb = "update"
	case http.MethodPatch:
		r.Verb = "patch"
	case http.MethodDelete:
		r.Verb = "delete"
	}
	return r
}

// respond encodes an object or an error as the API server does.
func respond(code int, obj any) *http.Response {
	body, _ := json.Marshal(obj)
	return &http.Response{
		StatusCode: code, Status: strconv.Itoa(code) + " " + http.StatusText(code),
		Header: http.Header{"Content-Type": []string{"application/json"}},
		Body:   io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)),
	}
}

func respondError(err error) *http.Response {
	status, ok := err.(apierrors.APIStatus)
	if !ok {
		status = apierrors.NewInternalError(err)
	}
	s := status.Status()
	s.Kind, s.APIVersion = "Status", "v1"
	return respond(int(s.Code), s)
}

// serve answers one request against the store; a watch gets a stream.
func (s *Server) serve(client string, req *http.Request, r Request) *http.Response {
	if r.Verb == "discovery" {
		return s.discovery(req.URL.Path)
	}
	if r.GVR == selfSubjectAccessReviews && r.Verb == "create" {
		return s.reviewAccess(r.Body)
	}
	res, ok := s.store.resources[r.GVR]
	if !ok || !res.Served {
		return respondError(apierrors.NewNotFound(schema.GroupResource{Group: r.GVR.Group, Resource: r.GVR.Resource}, r.Name))
	}
	status := r.Subresource == "status"
	switch r.Verb {
	case "get":
		obj, err := s.store.Get(r.GVR, r.Namespace, r.Name)
		if err != nil {
			return respondError(err)
		}
		return respond(http.StatusOK, obj.Object)
	case "list":
		return s.serveList(client, r, res)
	case "watch":
		return s.openWatch(client, req, r)
	case "create", "update":
		return s.serveWrite(r, res, status)
	case "patch":
		out, err := s.store.patch(r.GVR, r.Namespace, r.Name, r.Body, status)
		if err != nil {
			return respondError(err)
		}
		return respond(http.StatusOK, out.Object)
	case "delete":
		opts := &metav1.DeleteOptions{}
		if len(r.Body) > 0 {
			_ = json.Unmarshal(r.Body, opts)
		}
		out, err := s.store.Remove(r.GVR, r.Namespace, r.Name, opts)
		if err != nil {
			return respondError(err)
		}
		return respond(http.StatusOK, out.Object)
	}
	return respondError(apierrors.NewMethodNotSupported(r.GVR.GroupResource(), r.Verb))
}

// serveList answers a list, and notes what it showed the client.
func (s *Server) serveList(client string, r Request, res *Resource) *http.Response {
	selector, err := labels.Parse(r.param("labelSelector"))
	if err != nil {
		return respondError(apierrors.NewBadRequest(err.Error()))
	}
	items, rv := s.store.list(r.GVR, r.Namespace, selector)
	if name := r.SelectedName(); name != "" {
		items = slices.DeleteFunc(items, func(o *unstructured.Unstructured) bool { return o.GetName() != name })
	}
	list := map[string]any{
		"apiVersion": r.GVR.GroupVersion().String(), "kind": res.Kind + "List",
		"metadata": map[string]any{"resourceVersion": strconv.FormatInt(rv, 10)},
	}
	objs := make([]any, len(items))
	uids := make([]types.UID, len(items))
	for i, item := range items {
		objs[i], uids[i] = item.Object, item.GetUID()
	}
	list["items"] = objs
	s.showed(client, r.GVR, uids, r.SelectedName() == "" && selector.Empty())
	return respond(http.StatusOK, list)
}

// serveWrite answers a create or an update.
func (s *Server) serveWrite(r Request, res *Resource, status bool) *http.Response {
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(r.Body); err != nil {
		return respondError(apierrors.NewBadRequest(err.Error()))
	}
	if res.Namespaced {
		obj.SetNamespace(r.Namespace)
	}
	var out *unstructured.Unstructured
	var err error
	if r.Verb == "create" {
		out, err = s.store.Create(r.GVR, obj)
	} else {
		out, err = s.store.Update(r.GVR, obj, status)
	}
	if err != nil {
		return respondError(err)
	}
	code := http.StatusOK
	if r.Verb == "create" {
		code = http.StatusCreated
	}
	return respond(code, out.Object)
}

// openWatch starts a watch: from a resourceVersion (410 Gone when that was
// compacted), or, with sendInitialEvents, the objects first and then a
// bookmark that ends them.
func (s *Server) openWatch(client string, req *http.Request, r Request) *http.Response {
	selector, err := labels.Parse(r.param("labelSelector"))
	if err != nil {
		return respondError(apierrors.NewBadRequest(err.Error()))
	}
	w := &watcher{client: client, gvr: r.GVR, namespace: r.Namespace, selector: selector, stream: newStream(req.Context().Done()), heldUntil: s.delayUntil}
	if seconds, err := strconv.Atoi(r.param("timeoutSeconds")); err == nil && seconds > 0 {
		w.ends = s.now().Add(time.Duration(seconds) * time.Second)
	}
	switch rv := r.param("resourceVersion"); {
	case r.param("sendInitialEvents") == "true":
		items, current := s.store.list(r.GVR, r.Namespace, selector)
		for _, item := range items {
			w.queue(watch.Added, item.Object)
		}
		w.queue(watch.Bookmark, map[string]any{
			"apiVersion": r.GVR.GroupVersion().String(), "kind": s.store.resources[r.GVR].Kind,
			"metadata": map[string]any{
				"resourceVersion": strconv.FormatInt(current, 10),
				"annotations":     map[string]any{metav1.InitialEventsAnnotationKey: "true"},
			},
		})
	case rv == "" || rv == "0":
	default:
		from, _ := strconv.ParseInt(rv, 10, 64)
		events, err := s.store.since(r.GVR, from)
		if err != nil {
			status := err.(apierrors.APIStatus).Status()
			status.Kind, status.APIVersion = "Status", "v1"
			w.queue(watch.Error, status)
			w.flush()
			_ = w.stream.Close()
			return watchResponse(w.stream)
		}
		for _, e := range events {
			if w.matches(e.obj) {
				w.queue(e.typ, e.obj.Object)
			}
		}
	}
	s.watchers = append(s.watchers, w)
	key := rewatchKey(client, r.GVR)
	if b, ok := s.rewatching[key]; ok {
		blind := b.went
		// A watch resumed at the instant its last one ended missed
		// nothing: the last one delivered every event due.
		if s.now().After(blind) {
			s.rewatched = s.now()
		}
		// A delay holds back what this watch resumes with, the changes
		// since its last one went blind: the lag counts from then (seed
		// 235312: a node watch stalled for two minutes ended during a
		// delay, and a lease was renewed before the exclusion it had
		// missed was delivered).
		if s.now().Before(s.delayUntil) && blind.Before(s.delayFrom) {
			s.delayFrom = blind
		}
		delete(s.rewatching, key)
	}
	return watchResponse(w.stream)
}

func watchResponse(body io.ReadCloser) *http.Response {
	return &http.Response{
		StatusCode: http.StatusOK, Status: "200 OK",
		Header: http.Header{"Content-Type": []string{"application/json"}},
		Body:   body, ContentLength: -1,
	}
}

// discovery serves /api, /apis and each group version's resources.
func (s *Server) discovery(path string) *http.Response {
	served := map[schema.GroupVersion][]*Resource{}
	for _, r := range s.store.resources {
		if r.Served {
			gv := r.GVR.GroupVersion()
			served[gv] = append(served[gv], r)
		}
	}
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case path == "/api":
		return respond(http.StatusOK, metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"}})
	case path == "/apis":
		list := metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}}
		var groups []string
		for gv := range served {
			if gv.Group != "" && !slices.Contains(groups, gv.Group) {
				groups = append(groups, gv.Group)
			}
		}
		slices.Sort(groups)
		for _, g := range groups {
			group := metav1.APIGroup{Name: g}
			for gv := range served {
				if gv.Group == g {
					v := metav1.GroupVersionForDiscovery{GroupVersion: gv.String(), Version: gv.Version}
					group.Versions = append(group.Versions, v)
					group.PreferredVersion = v
				}
			}
			list.Groups = append(list.Groups, group)
		}
		return respond(http.StatusOK, list)
	case len(parts) == 2 && parts[0] == "api", len(parts) == 3 && parts[0] == "apis":
		gv := schema.GroupVersion{Version: parts[len(parts)-1]}
		if parts[0] == "apis" {
			gv.Group = parts[1]
		}
		resources, ok := served[gv]
		if !ok {
			return respondError(apierrors.NewNotFound(schema.GroupResource{Group: gv.Group}, gv.Version))
		}
		list := metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv.String()}
		for _, r := range resources {
			verbs := metav1.Verbs{"create", "delete", "get", "list", "patch", "update", "watch"}
			list.APIResources = append(list.APIResources, metav1.APIResource{Name: r.GVR.Resource, Kind: r.Kind, Namespaced: r.Namespaced, Verbs: verbs})
			if r.Status {
				list.APIResources = append(list.APIResources, metav1.APIResource{Name: r.GVR.Resource + "/status", Kind: r.Kind, Namespaced: r.Namespaced, Verbs: metav1.Verbs{"get", "patch", "update"}})
			}
		}
		slices.SortFunc(list.APIResources, func(a, b metav1.APIResource) int { return strings.Compare(a.Name, b.Name) })
		return respond(http.StatusOK, list)
	}
	return respondError(apierrors.NewNotFound(schema.GroupResource{}, path))
}
