package check

import (
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/test/sim/apiserver"
	"github.com/nodehealthcheck/nhc-controller/test/sim/cluster"
)

// The checker's bookkeeping: the history of the objects the invariants
// read, and what it hears of the API server's changes and the
// controller's requests.

// version is an object as the API server had it from an instant on; nil
// obj: deleted.
type version struct {
	at  time.Time
	obj *unstructured.Unstructured
}

// Config is what the checker is handed of the world beside the objects at
// the API server: what no object there records.
type Config struct {
	// Calm tells whether nothing outside the controller slows it now: a
	// leader runs and reaches the API server, which answers every request,
	// and every watch delivers at once. The liveness bounds count from
	// calm.
	Calm func() bool
	// Leader is the client name of the replica that leads now, "" while
	// none runs: the creates its informer has not shown hold their nodes.
	Leader func() string
	// LeaseNamespace is the namespace of the node leases.
	LeaseNamespace string
	// NodeLeaseDuration is the controller's node lease duration: a step
	// without a timeout runs until its lease is overdue.
	NodeLeaseDuration time.Duration
	// StatusBytes is the controller's bound on its statuses' entries
	// (controller.Config.StatusBytes); 0 is its default, which no history
	// meets (bound.go).
	StatusBytes int
}

// Checker checks the invariants after every change and every wake-up,
// from the objects at the API server and what it hears of the requests
// that reach it. Its methods are called with the server's state locked.
type Checker struct {
	server    *apiserver.Server
	store     *apiserver.Store
	cfg       Config
	violation *Violation
	// nodes and nhcs are every version of every node and NodeHealthCheck.
	nodes, nhcs map[string][]version
	// created are the remediation resources ever created, by UID, with
	// their owner's UID.
	created map[types.UID]types.UID
	// running are the instants each (NodeHealthCheck, node) ran a step.
	running map[runKey]*runs
	// leaseWrites are renewals of ours that wait for their verdict.
	leaseWrites []leaseWrite
	// forbiddenNodes are, by kind turned forbidden, the nodes its
	// resources remediated then; forbiddenSince is when it turned.
	forbiddenNodes map[cluster.Kind]map[string]bool
	forbiddenSince map[cluster.Kind]time.Time
	// denied are, by node, the kinds whose remediator's webhook refuses
	// its resources (denied.go).
	denied map[string]map[cluster.Kind]bool
	// readableAgain is when each kind last stopped being forbidden.
	readableAgain map[cluster.Kind]time.Time
	// uncertain are, by kind, the creates of its resources whose answer
	// was lost, until the kind is readable again: while it is not, the
	// controller cannot look them up, and they hold as its resources do.
	uncertain map[cluster.Kind][]remediationObj
	// unseen are, by kind, the creates of its resources answered to a
	// replica whose informer has not shown them (unseen.go).
	unseen map[cluster.Kind][]unseenCreate
	// deletes are, by kind, the deletes of its resources (unseen.go).
	deletes map[cluster.Kind][]unseenDelete
	// unanswered are the remediation creates that reached the server and
	// were not served, within unsettledHold (heldByUnanswered).
	unanswered []unansweredCreate
	// leaderStarted is when the leading replica started.
	leaderStarted time.Time
	// createTries are when each (NodeHealthCheck, node) last tried to
	// create a remediation resource, whatever the answer.
	createTries map[runKey][]time.Time
	// unhealthySince is when nothing stood in a node's way any more.
	unhealthySince map[string]time.Time
	// calmSince is since when no fault, partition or watch problem is on;
	// unrest are the spans when one was (order.go).
	calmSince time.Time
	unrest    []span
	// blind are the spans the controller's watches were not current
	// (watchLag): one that ended waits out its back-off.
	blind []span
	// unreadable are, by kind, the spans it could not be read (order.go).
	unreadable map[cluster.Kind][]span
	// steps are when the history's steps were played lately (ontime.go).
	steps []time.Time
	// checks counts the checks made.
	checks int
	// typed caches the typed form of stored objects, by UID and
	// resourceVersion.
	typed map[string]any
	// lives are when each remediation resource existed.
	lives []resourceLife
	// storms are each NodeHealthCheck's storm conditions over time
	// (storm.go).
	storms map[string]*stormHistory
	// templates are every version of every template, by kind and name
	// (templates.go).
	templates map[string][]version
	// orphanSince is when each (NodeHealthCheck, node) with a resource
	// was first seen orphaned: its node gone or no longer selected
	// (cleanup.go).
	orphanSince map[runKey]time.Time
	// healthySince is when each (NodeHealthCheck, node) with a resource
	// was last seen turning healthy (progress.go).
	healthySince map[runKey]time.Time
	// releaseSince is when each lease of ours was first seen with nothing
	// left to hold it (progress.go).
	releaseSince map[runKey]time.Time
	// escalateSince is since when nothing has held back each
	// (NodeHealthCheck, node)'s next step (progress.go).
	escalateSince map[runKey]time.Time
	// answeredCreates are the UIDs of the creates answered 201, by replica,
	// resource and name (rules.go).
	answeredCreates map[string]string
	// recheck is the next instant at which a judgement of the last check
	// may change with nothing else happening (recheckAt).
	recheck time.Time
	// pictureChanges are the instants, within pictureLag, at which the
	// nodes or the remediation resources changed: the picture pictureLag
	// old changes pictureLag after each (recheckLaggedPicture).
	pictureChanges []time.Time
}

// typedOf converts a stored object once per version.
func typedOf[T any](c *Checker, u *unstructured.Unstructured) *T {
	key := string(u.GetUID()) + "/" + u.GetResourceVersion()
	if t, ok := c.typed[key].(*T); ok {
		return t
	}
	t := new(T)
	cluster.FromUnstructured(u, t)
	c.typed[key] = t
	return t
}

// allNodes and allNHCs are the nodes and NodeHealthChecks the API server
// has now.
func (c *Checker) allNodes() []*corev1.Node {
	var nodes []*corev1.Node
	for _, u := range c.store.Stored(cluster.Nodes) {
		nodes = append(nodes, typedOf[corev1.Node](c, u))
	}
	return nodes
}

func (c *Checker) allNHCs() []*v1alpha1.NodeHealthCheck {
	var nhcs []*v1alpha1.NodeHealthCheck
	for _, u := range c.store.Stored(cluster.NodeHealthChecks) {
		nhcs = append(nhcs, typedOf[v1alpha1.NodeHealthCheck](c, u))
	}
	return nhcs
}

// New returns a checker of the objects at server, handed cfg; the server's
// hooks are to call its Observe, Attempt, Write, LostAnswer and Shown.
func New(server *apiserver.Server, cfg Config) *Checker {
	return &Checker{server: server, store: server.Store(), cfg: cfg, nodes: map[string][]version{}, nhcs: map[string][]version{}, created: map[types.UID]types.UID{}, typed: map[string]any{},
		running: map[runKey]*runs{}, createTries: map[runKey][]time.Time{}, forbiddenNodes: map[cluster.Kind]map[string]bool{}, denied: map[string]map[cluster.Kind]bool{}, forbiddenSince: map[cluster.Kind]time.Time{}, readableAgain: map[cluster.Kind]time.Time{}, uncertain: map[cluster.Kind][]remediationObj{}, unseen: map[cluster.Kind][]unseenCreate{}, deletes: map[cluster.Kind][]unseenDelete{}, unhealthySince: map[string]time.Time{}, healthySince: map[runKey]time.Time{}, releaseSince: map[runKey]time.Time{}, escalateSince: map[runKey]time.Time{}, answeredCreates: map[string]string{}, unreadable: map[cluster.Kind][]span{},
		storms: map[string]*stormHistory{}, templates: map[string][]version{}, orphanSince: map[runKey]time.Time{}}
}

func (c *Checker) fail(invariant, format string, args ...any) {
	if c.violation == nil {
		c.violation = &Violation{Invariant: invariant, At: time.Now(), Detail: fmt.Sprintf(format, args...)}
	}
}

// Failed tells whether an invariant is broken.
func (c *Checker) Failed() bool { return c.violation != nil }

// Violation is the first invariant broken, or nil.
func (c *Checker) Violation() *Violation { return c.violation }

// Checks counts the checks made: changes observed and wake-ups.
func (c *Checker) Checks() int { return c.checks }

// LeaderStarted tells the checker that a replica started leading at t:
// what it cannot know of depends on when it started.
func (c *Checker) LeaderStarted(t time.Time) { c.leaderStarted = t }

// at returns the version of an object at an instant, or nil. Versions are
// appended in time order.
func at(versions []version, t time.Time) *unstructured.Unstructured {
	i := sort.Search(len(versions), func(i int) bool { return versions[i].at.After(t) })
	if i == 0 {
		return nil
	}
	return versions[i-1].obj
}

func (c *Checker) nodeAt(name string, t time.Time) *corev1.Node {
	u := at(c.nodes[name], t)
	if u == nil {
		return nil
	}
	return typedOf[corev1.Node](c, u)
}

func (c *Checker) nhcAt(name string, t time.Time) *v1alpha1.NodeHealthCheck {
	u := at(c.nhcs[name], t)
	if u == nil {
		return nil
	}
	return typedOf[v1alpha1.NodeHealthCheck](c, u)
}

// Observe hears of every change the API server makes (the Changed hook).
func (c *Checker) Observe(gvr schema.GroupVersionResource, typ watch.EventType, changed, old *unstructured.Unstructured) {
	c.checks++
	var obj *unstructured.Unstructured
	if typ != watch.Deleted {
		obj = changed.DeepCopy()
	}
	switch {
	case gvr == cluster.Nodes:
		c.nodes[changed.GetName()] = append(c.nodes[changed.GetName()], version{at: time.Now(), obj: obj})
		c.notePictureChange()
		c.nodeChanged(typ, changed, old)
	case gvr == cluster.NodeHealthChecks:
		c.nhcs[changed.GetName()] = append(c.nhcs[changed.GetName()], version{at: time.Now(), obj: obj})
		if typ == watch.Added {
			c.nhcCreated(changed.GetName())
		}
		if typ != watch.Modified || old == nil || old.GetGeneration() != changed.GetGeneration() || disabledChanged(c, old, changed) {
			c.noteStorm(changed.GetName())
		}
		if obj != nil {
			c.timedOutOnStatus(typedOf[v1alpha1.NodeHealthCheck](c, obj))
		}
	case isTemplate(gvr):
		key := templateKey(gvr, changed.GetNamespace(), changed.GetName())
		c.templates[key] = append(c.templates[key], version{at: time.Now(), obj: obj})
	case gvr == cluster.Leases && obj != nil:
		c.leaseWritten(obj, old)
	case gvr == cluster.Leases:
		c.leaseDeleted(changed)
	case isRemediation(gvr) && typ == watch.Added:
		c.notePictureChange()
		c.resourceCreated(obj)
		r := resourceOf(obj)
		c.stepOrder(obj, r)
		c.stepOnce(obj, r)
		c.lives = append(c.lives, resourceLife{remediationObj: r, namespace: obj.GetNamespace(), name: obj.GetName(), created: time.Now()})
		c.resourceChanged(r)
	case isRemediation(gvr) && typ == watch.Modified:
		for i := range c.lives {
			l := &c.lives[i]
			if l.obj.GetUID() != changed.GetUID() {
				continue
			}
			if l.failed.IsZero() && succeededFalse(obj) {
				l.failed = time.Now()
			}
			if l.timedOut.IsZero() && timedOutOn(obj) {
				l.timedOut = time.Now()
				c.timedOutEarly(l, l.timedOut)
			}
		}
	case isRemediation(gvr) && typ == watch.Deleted:
		c.notePictureChange()
		for i := range c.lives {
			if l := &c.lives[i]; l.obj.GetUID() == changed.GetUID() && l.deleted.IsZero() {
				l.deleted = time.Now()
			}
		}
		if k, ok := cluster.KindOf(gvr); ok {
			c.resourceDeleted(k, resourceOf(changed))
		}
		c.resourceChanged(resourceOf(changed))
	}
}

// disabledChanged tells whether a NodeHealthCheck's Disabled condition
// changed: a disabled one starts no storm.
func disabledChanged(c *Checker, old, changed *unstructured.Unstructured) bool {
	disabled := func(u *unstructured.Unstructured) bool {
		return meta.IsStatusConditionTrue(typedOf[v1alpha1.NodeHealthCheck](c, u).Status.Conditions, v1alpha1.ConditionDisabled)
	}
	return disabled(old) != disabled(changed)
}
