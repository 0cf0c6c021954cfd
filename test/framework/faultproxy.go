package framework

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// FaultProxy stands between a controller and the API server and fails
// requests on demand: writes, everything, or creates whose response is lost
// after the API server stored the object. It forwards with the admin's
// credentials; the controller talks to it in plain HTTP.
type FaultProxy struct {
	server *httptest.Server
	// Kubeconfig points a controller at the proxy.
	Kubeconfig string

	mu sync.Mutex
	// failWrites answers POST, PUT, PATCH and DELETE with 503 without
	// forwarding them.
	failWrites bool
	// failStatusWrites answers the status writes (PUT, PATCH) of
	// NodeHealthChecks with 500 without forwarding them.
	failStatusWrites bool
	// loseCreates forwards POSTs to paths containing this string, then
	// answers 500 as if the response was lost.
	loseCreates string
	// loseUpdates does the same to PUTs to paths containing this string.
	loseUpdates string
	// unreachable answers every request with 503.
	unreachable bool
	// held are, by what they hold (watchesOf a resource, or a part of the
	// path of the reads held), channels closed when the responses held may
	// go on.
	held map[string]chan struct{}
	// expired are resources whose held watches end without passing on
	// what they held, and whose next watch resuming from a resource
	// version is answered 410 Gone (ExpireWatches).
	expired map[string]bool
}

// watchesOf keys the hold of the watches of a resource: watchesOf+"nodes".
const watchesOf = "watches of "

// NewFaultProxy starts a proxy to the API server of config, and writes a
// kubeconfig for it into dir.
func NewFaultProxy(config *rest.Config, dir string) (*FaultProxy, error) {
	target, err := url.Parse(config.Host)
	if err != nil {
		return nil, err
	}
	transport, err := rest.TransportFor(config)
	if err != nil {
		return nil, err
	}
	forward := httputil.NewSingleHostReverseProxy(target)
	forward.Transport = transport
	// Watches stream: pass every event on at once.
	forward.FlushInterval = -1
	p := &FaultProxy{held: map[string]chan struct{}{}, expired: map[string]bool{}}
	p.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		unreachable, failWrites, failStatusWrites, loseCreates, loseUpdates := p.unreachable, p.failWrites, p.failStatusWrites, p.loseCreates, p.loseUpdates
		p.mu.Unlock()
		write := r.Method != http.MethodGet && r.Method != http.MethodHead
		held := p.holding(r)
		switch {
		case unreachable, failWrites && write:
			http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"ServiceUnavailable","code":503}`, http.StatusServiceUnavailable)
		case failStatusWrites && nhcStatusWrite(r):
			http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"InternalError","code":500}`, http.StatusInternalServerError)
		case loseCreates != "" && r.Method == http.MethodPost && strings.Contains(r.URL.Path, loseCreates),
			loseUpdates != "" && r.Method == http.MethodPut && strings.Contains(r.URL.Path, loseUpdates):
			forward.ServeHTTP(discard{header: http.Header{}}, r)
			http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"InternalError","code":500}`, http.StatusInternalServerError)
		case p.resumesExpired(r):
			http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Expired","code":410,"message":"too old resource version"}`, http.StatusGone)
		case held != "":
			forward.ServeHTTP(&heldWriter{ResponseWriter: w, proxy: p, key: held}, r)
		default:
			forward.ServeHTTP(w, r)
		}
	}))
	p.Kubeconfig = filepath.Join(dir, "fault-proxy.kubeconfig")
	kubeconfig := clientcmdapi.NewConfig()
	kubeconfig.Clusters["proxy"] = &clientcmdapi.Cluster{Server: p.server.URL}
	kubeconfig.AuthInfos["proxy"] = &clientcmdapi.AuthInfo{}
	kubeconfig.Contexts["proxy"] = &clientcmdapi.Context{Cluster: "proxy", AuthInfo: "proxy"}
	kubeconfig.CurrentContext = "proxy"
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if err := clientcmd.WriteToFile(*kubeconfig, p.Kubeconfig); err != nil {
		p.server.Close()
		return nil, err
	}
	return p, nil
}

// FailWrites makes writes fail with 503, or work again.
func (p *FaultProxy) FailWrites(fail bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failWrites = fail
}

// FailStatusWrites makes the status writes of NodeHealthChecks fail with
// 500, and nothing else, or work again: the controller's memory is lost
// while its actions go through.
func (p *FaultProxy) FailStatusWrites(fail bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failStatusWrites = fail
}

// nhcStatusWrite tells whether a request writes a NodeHealthCheck's status.
func nhcStatusWrite(r *http.Request) bool {
	return (r.Method == http.MethodPut || r.Method == http.MethodPatch) &&
		strings.HasSuffix(r.URL.Path, "/status") && strings.Contains(r.URL.Path, "/nodehealthchecks/")
}

// LoseCreates makes creates to paths containing path reach the API server
// and then fail with 500; "" stops it.
func (p *FaultProxy) LoseCreates(path string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.loseCreates = path
}

// LoseUpdates makes updates (PUT) to paths containing path reach the API
// server and then fail with 500; "" stops it.
func (p *FaultProxy) LoseUpdates(path string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.loseUpdates = path
}

// Unreachable makes the API server unreachable, as while it restarts: every
// request fails and every open connection, watches included, is closed.
func (p *FaultProxy) Unreachable(unreachable bool) {
	p.mu.Lock()
	p.unreachable = unreachable
	p.mu.Unlock()
	if unreachable {
		p.server.CloseClientConnections()
	}
}

// HoldNodeWatches holds back what the node watches send, as an API server
// too busy to keep them current: the controller's node cache lags until
// they are let go, then sees every event in order.
func (p *FaultProxy) HoldNodeWatches(hold bool) { p.HoldWatches("nodes", hold) }

// HoldWatches holds back what the watches of a resource (its plural name,
// such as "nodehealthchecks") send, and nothing else: its gets and lists
// are answered, as by an API server whose watch cache lags.
func (p *FaultProxy) HoldWatches(resource string, hold bool) { p.hold(watchesOf+resource, hold) }

// HoldReads holds back the responses to the reads (lists and watches) of
// paths that contain part, such as "/clusterremediations": an informer of
// that kind does not sync until they are let go.
func (p *FaultProxy) HoldReads(part string, hold bool) { p.hold(part, hold) }

func (p *FaultProxy) hold(key string, hold bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	held, ok := p.held[key]
	switch {
	case hold && !ok:
		p.held[key] = make(chan struct{})
	case !hold && ok:
		close(held)
		delete(p.held, key)
	}
}

// ExpireWatches ends the held watches of a resource without passing on the
// events they held, and answers the next watch that resumes from a
// resource version with 410 Gone, as the API server does once etcd has
// compacted past it: the informer lists again, and sees the end state of
// what it missed, never the events (a delete and a create under one name
// reach its handlers as one update).
func (p *FaultProxy) ExpireWatches(resource string) {
	p.mu.Lock()
	p.expired[resource] = true
	p.mu.Unlock()
	p.hold(watchesOf+resource, false)
}

// resumesExpired tells whether a request is the watch that resumes an
// expired resource's watch, and if so forgets the expiry.
func (p *FaultProxy) resumesExpired(r *http.Request) bool {
	query := r.URL.Query()
	if r.Method != http.MethodGet || query.Get("watch") != "true" || query.Get("resourceVersion") == "" || query.Get("sendInitialEvents") == "true" {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	resource := path.Base(r.URL.Path)
	if !p.expired[resource] {
		return false
	}
	delete(p.expired, resource)
	return true
}

// holding says which hold a request's response is subject to, or "".
func (p *FaultProxy) holding(r *http.Request) string {
	if r.Method != http.MethodGet {
		return ""
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for key := range p.held {
		if !strings.HasPrefix(key, watchesOf) && strings.Contains(r.URL.Path, key) {
			return key
		}
	}
	if r.URL.Query().Get("watch") == "true" {
		// A watch opened before its hold is held from then on: its writer
		// asks at every write.
		return watchesOf + path.Base(r.URL.Path)
	}
	return ""
}

// heldWriter writes a response once the proxy lets it go.
type heldWriter struct {
	http.ResponseWriter
	proxy *FaultProxy
	key   string
}

func (w *heldWriter) Write(b []byte) (int, error) {
	w.proxy.mu.Lock()
	held := w.proxy.held[w.key]
	w.proxy.mu.Unlock()
	if held != nil {
		<-held
		w.proxy.mu.Lock()
		expired := w.proxy.expired[strings.TrimPrefix(w.key, watchesOf)]
		w.proxy.mu.Unlock()
		if expired {
			// The watch ends, its connection cut, what it held lost.
			panic(http.ErrAbortHandler)
		}
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets the reverse proxy flush each event.
func (w *heldWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Close stops the proxy.
func (p *FaultProxy) Close() { p.server.Close() }

// discard is a response writer that drops the response.
type discard struct{ header http.Header }

func (d discard) Header() http.Header         { return d.header }
func (d discard) Write(b []byte) (int, error) { return io.Discard.Write(b) }
func (d discard) WriteHeader(int)             {}
