package remediation

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/internal/inflight"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/internal/kinds"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/resource"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/templates"
)

var templateRef = corev1.ObjectReference{APIVersion: "test.medik8s.io/v1alpha1", Kind: "TestRemediationTemplate", Namespace: "remediators", Name: "reboot"}

// writeFixture is the two rooms on the dynamic fake client, with an
// observation that has read the test template.
type writeFixture struct {
	client   *dynamicfake.FakeDynamicClient
	observer *Observer
	writer   *Writer
	watched  *Watched
	clock    *clocktesting.FakePassiveClock
}

func newWriteFixture(t *testing.T) *writeFixture {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	client := fakeDynamic()
	clock := clocktesting.NewFakePassiveClock(time.Date(2026, 3, 20, 15, 0, 0, 0, time.UTC))
	informers := kinds.New(ctx, client, client, clock)
	o, w := testRooms(informers, nil, clock, client, kubefake.NewClientset().CoreV1().Nodes())
	return &writeFixture{client: client, observer: o, writer: w, watched: watchedTemplate(testTemplate(nil)), clock: clock}
}

// watchedTemplate is what Watch finds of a NodeHealthCheck whose one
// template, of the test kind, reads as tmpl.
func watchedTemplate(tmpl *unstructured.Unstructured) *Watched {
	return &Watched{
		templates: []templates.Template{{Ref: templateRef, Resource: testTemplateGVR, Remediation: testGVR, Namespace: templateRef.Namespace}},
		reads:     []templates.Read{{Obj: tmpl, Ready: true}},
		resources: map[schema.GroupVersionKind]schema.GroupVersionResource{testGVR.GroupVersion().WithKind("TestRemediation"): testGVR},
	}
}

// testRooms wires the two rooms from their parts, as New does.
func testRooms(informers *kinds.Informers, templates *templates.Resolver, clock clock.PassiveClock, client dynamic.Interface, nodes NodePatcher) (*Observer, *Writer) {
	return newRooms(informers, templates, clock, fakeResourceClient(client, nodes))
}

// fakeResourceClient is a resource client on a fake dynamic client, which
// answers deletes with nothing: none is known gone.
func fakeResourceClient(client dynamic.Interface, nodes NodePatcher) *resourceClient {
	c, _ := newResourceClient(client, nil, nodes)
	return c
}

// apply sends a plan's creates and deletes one after another, as the
// controller does, and sorts what became of them.
func (f *writeFixture) apply(nhc *v1alpha1.NodeHealthCheck, plan *health.Plan, watched *Watched) health.Outcome {
	var out health.Outcome
	for _, c := range plan.Create {
		created, err := f.writer.Create(context.Background(), nhc, c, watched)
		switch {
		case Refused(err):
			out.Blocked = append(out.Blocked, health.Blocked{Node: c.Node, Message: err.Error()})
		case err != nil:
			out.Errors = append(out.Errors, err)
		default:
			out.Created = append(out.Created, created)
		}
	}
	for _, del := range plan.Delete {
		if _, err := f.writer.Delete(context.Background(), nhc.Name, watched, del); err != nil {
			out.Errors = append(out.Errors, err)
			continue
		}
		out.Deleted = append(out.Deleted, del)
	}
	return out
}

// applyAtOnce applies each NodeHealthCheck's plan at the same moment, and
// counts the creates made and blocked; none may fail.
func (f *writeFixture) applyAtOnce(t *testing.T, nhcs []string, plans ...*health.Plan) (outcomes []health.Outcome, created, blocked int) {
	outcomes = make([]health.Outcome, len(plans))
	var wg sync.WaitGroup
	for i, plan := range plans {
		wg.Go(func() { outcomes[i] = f.apply(nhcNamed(nhcs[i]), plan, f.watched) })
	}
	wg.Wait()
	for _, out := range outcomes {
		created += len(out.Created)
		blocked += len(out.Blocked)
		assert.Empty(t, out.Errors)
	}
	return outcomes, created, blocked
}

func createPlan(nodes ...string) *health.Plan {
	p := &health.Plan{}
	for _, node := range nodes {
		p.Create = append(p.Create, health.Creation{Node: node, Template: templateRef, FirstResource: true})
	}
	return p
}

func controlPlanePlan(node string) *health.Plan {
	p := createPlan(node)
	p.Create[0].ControlPlane = true
	return p
}

func nhcNamed(name string) *v1alpha1.NodeHealthCheck {
	nhc := testNHC.DeepCopy()
	nhc.Name, nhc.UID = name, types.UID("uid-"+name)
	return nhc
}

func TestAnUncertainCreateIsSettledByAGet(t *testing.T) {
	cases := []struct {
		name string
		// stored is true when the API server stored the resource before the
		// response was lost.
		stored      bool
		wantCreated bool
	}{
		{"a webhook failed: nothing was created", false, false},
		{"the response was lost: it was created", true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newWriteFixture(t)
			f.client.PrependReactor("create", "testremediations", func(action clienttesting.Action) (bool, runtime.Object, error) {
				if tc.stored {
					obj := action.(clienttesting.CreateAction).GetObject()
					require.NoError(t, f.client.Tracker().Create(testGVR, obj, "remediators"))
				}
				return true, nil, apierrors.NewInternalError(assert.AnError)
			})
			out := f.apply(testNHC, controlPlanePlan("master-0"), f.watched)
			if tc.wantCreated {
				assert.Empty(t, out.Errors)
				require.Len(t, out.Created, 1)
				assert.Equal(t, "master-0", out.Created[0].Resource.Name)
				return
			}
			require.Len(t, out.Errors, 1)
			assert.Empty(t, out.Created)
			assert.Empty(t, f.writer.ledger.Pending(testNHC.Name), "a create that certainly failed holds nothing back")
			assert.Empty(t, f.writer.ledger.ControlPlaneNodes(), "nor the control-plane reservation")
		})
	}
}

func TestControlPlaneNodesOneAtATimeAcrossNodeHealthChecks(t *testing.T) {
	f := newWriteFixture(t)
	// Two NodeHealthChecks, each deciding from caches that show nothing yet,
	// each start a control-plane remediation at the same moment.
	_, created, blocked := f.applyAtOnce(t, []string{"cp-master-0", "cp-master-1"}, controlPlanePlan("master-0"), controlPlanePlan("master-1"))
	assert.Equal(t, 1, created, "one control-plane node at a time")
	assert.Equal(t, 1, blocked)
	list, err := f.client.Resource(testGVR).Namespace("remediators").List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, list.Items, 1)
	first := &list.Items[0]
	waiting := "master-1"
	if resource.TargetNode(first) == "master-1" {
		waiting = "master-0"
	}

	// The reservation holds while the resource exists, whatever kind the
	// other NodeHealthCheck watches, and goes when the resource is seen gone.
	assert.Equal(t, []string{resource.TargetNode(first)}, f.writer.ledger.ControlPlaneNodes())
	out := f.apply(nhcNamed("cp-"+waiting), controlPlanePlan(waiting), f.watched)
	assert.Len(t, out.Blocked, 1)
	f.writer.ledger.Settle(testGVR, first, true)
	out = f.apply(nhcNamed("cp-"+waiting), controlPlanePlan(waiting), f.watched)
	assert.Len(t, out.Created, 1, "free again")

	// A deleted NodeHealthCheck's resource holds the slot until it is seen
	// gone: a remediator's finalizer keeps it while it works.
	f.observer.Forget("cp-" + waiting)
	assert.Equal(t, []string{waiting}, f.writer.ledger.ControlPlaneNodes())
	second, err := f.client.Resource(testGVR).Namespace("remediators").Get(context.Background(), out.Created[0].Resource.Name, metav1.GetOptions{})
	require.NoError(t, err)
	f.writer.ledger.Settle(testGVR, second, true)
	assert.Empty(t, f.writer.ledger.ControlPlaneNodes())
}

// A create whose outcome is uncertain, and whose follow-up GET fails too,
// keeps its reservation: nothing says whether the resource exists. After
// inflight.TTL, a read looks it up: gone, it ends, instead of holding
// every other control-plane node back until a restart.
func TestAnUnsettledControlPlaneReservationLapses(t *testing.T) {
	f := newWriteFixture(t)
	failing := true
	f.client.PrependReactor("*", "testremediations", func(action clienttesting.Action) (bool, runtime.Object, error) {
		switch {
		case !failing:
			return false, nil, nil
		case action.GetVerb() == "create":
			return true, nil, apierrors.NewInternalError(assert.AnError)
		}
		return true, nil, apierrors.NewServiceUnavailable("the API server is restarting")
	})
	out := f.apply(testNHC, controlPlanePlan("master-0"), f.watched)
	require.Len(t, out.Errors, 1)
	assert.Equal(t, []string{"master-0"}, f.writer.ledger.ControlPlaneNodes(), "held while the outcome is unknown")
	failing = false

	f.clock.SetTime(f.clock.Now().Add(inflight.TTL - time.Second))
	assert.Len(t, f.apply(nhcNamed("cp-b"), controlPlanePlan("master-1"), f.watched).Blocked, 1)
	f.clock.SetTime(f.clock.Now().Add(time.Second))
	f.writer.LookUpLapsed(context.Background())
	assert.Empty(t, f.writer.ledger.ControlPlaneNodes(), "looked up, and gone")
	assert.Len(t, f.apply(nhcNamed("cp-b"), controlPlanePlan("master-1"), f.watched).Created, 1)
}

// A control-plane remediation that its informer does not show (a watch
// that stopped sending) keeps its reservation past inflight.TTL, as long
// as the API server has it: a second control-plane node would otherwise
// start beside it . Gone, it holds nothing.
func TestAReservationHoldsWhileItsResourceIsUnseen(t *testing.T) {
	f := newWriteFixture(t)
	require.Len(t, f.apply(testNHC, controlPlanePlan("master-0"), f.watched).Created, 1)
	f.clock.SetTime(f.clock.Now().Add(inflight.TTL))
	f.writer.LookUpLapsed(context.Background())
	assert.Equal(t, []string{"master-0"}, f.writer.ledger.ControlPlaneNodes(), "the API server has it")
	assert.Len(t, f.apply(nhcNamed("cp-b"), controlPlanePlan("master-1"), f.watched).Blocked, 1)

	list, err := f.client.Resource(testGVR).Namespace(templateRef.Namespace).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, list.Items, 1)
	require.NoError(t, f.client.Tracker().Delete(testGVR, templateRef.Namespace, list.Items[0].GetName()))
	f.clock.SetTime(f.clock.Now().Add(inflight.TTL))
	f.writer.LookUpLapsed(context.Background())
	assert.Empty(t, f.writer.ledger.ControlPlaneNodes(), "gone")
}

func TestWorkersAreNotHeldByAControlPlaneReservation(t *testing.T) {
	f := newWriteFixture(t)
	require.Len(t, f.apply(testNHC, controlPlanePlan("master-0"), f.watched).Created, 1)
	out := f.apply(nhcNamed("workers-b"), createPlan("worker-1"), f.watched)
	assert.Len(t, out.Created, 1)
}

func TestAKindThatCannotBeWatchedDisablesAfterAGrace(t *testing.T) {
	cases := []struct {
		name    string
		err     error
		message string
	}{
		{"forbidden", apierrors.NewForbidden(testGVR.GroupResource(), "", assert.AnError),
			"Remediation resources testremediations.test.medik8s.io cannot be watched"},
		{"no longer served", apierrors.NewNotFound(testGVR.GroupResource(), ""),
			"Remediation resources testremediations.test.medik8s.io are no longer served by the API server: is their remediator uninstalled?"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			client := fakeDynamic()
			client.PrependReactor("list", "testremediations", func(clienttesting.Action) (bool, runtime.Object, error) {
				return true, nil, tc.err
			})
			clock := clocktesting.NewFakePassiveClock(time.Now())
			informers := kinds.New(ctx, client, client, clock)
			informers.Use("workers", kinds.Kinds{Remediations: []schema.GroupVersionResource{testGVR}})
			// Past the grace, the failing lists count.
			clock.SetTime(clock.Now().Add(kinds.WatchGrace))
			var problem *health.Problem
			require.Eventually(t, func() bool { problem = kindProblem(testGVR, informers.State(testGVR).Err); return problem != nil }, 10*time.Second, 10*time.Millisecond)
			assert.Equal(t, v1alpha1.ReasonTemplateNotFound, problem.Reason)
			assert.Contains(t, problem.Message, tc.message)
		})
	}
}

func TestOneRemediationPerNodeAcrossNodeHealthChecks(t *testing.T) {
	f := newWriteFixture(t)
	// Generated names, so that the API server would take both resources.
	f.watched.reads[0].Obj = testTemplate(map[string]string{v1alpha1.MultipleTemplatesSupportAnnotation: "true"})
	f.observer.informers.Use("watcher", kinds.Kinds{Remediations: []schema.GroupVersionResource{testGVR}})
	require.Eventually(t, func() bool { return f.observer.informers.Synced(testGVR) }, 10*time.Second, 10*time.Millisecond)

	// Two NodeHealthChecks that select the node, each deciding from caches
	// that show nothing yet, start its remediation at the same moment.
	outcomes, created, blocked := f.applyAtOnce(t, []string{"a", "b"}, createPlan("worker-0"), createPlan("worker-0"))
	assert.Equal(t, 1, created, "never two remediations for one node")
	require.Equal(t, 1, blocked)
	winner, loser := "a", "b"
	if len(outcomes[1].Created) == 1 {
		winner, loser = "b", "a"
	}

	// Once the informer shows the resource, it holds the node.
	require.Eventually(t, func() bool { return len(f.writer.ledger.Pending(winner)) == 0 }, 10*time.Second, 10*time.Millisecond)
	assert.Equal(t, map[string][]resource.Owner{"worker-0": {{Name: winner, UID: types.UID("uid-" + winner)}}}, f.observer.informers.OtherOwners(types.UID("uid-"+loser)))
	assert.Empty(t, f.observer.informers.OtherOwners(types.UID("uid-"+winner)), "its own resources are not another's")
	out := f.apply(nhcNamed(loser), createPlan("worker-0"), f.watched)
	require.Len(t, out.Blocked, 1)
	assert.Equal(t, "NodeHealthCheck "+winner+" remediates node worker-0, or is starting to; only one NodeHealthCheck remediates a node, and this one leaves it alone", out.Blocked[0].Message)
	assert.Empty(t, f.writer.ledger.Pending(loser), "a blocked create expects nothing")

	// A NodeHealthCheck with resources of its own for the node goes on (the
	// engine decides which one escalates); other nodes are not held.
	withOwn := createPlan("worker-0")
	withOwn.Create[0].FirstResource = false
	assert.Len(t, f.apply(nhcNamed(loser), withOwn, f.watched).Created, 1)
	assert.Len(t, f.apply(nhcNamed(loser), createPlan("worker-1"), f.watched).Created, 1)
}

// A reservation whose kind was uninstalled together with its role (a GET
// answers 403) ends once the API no longer serves the kind: its resource
// went with the CRD.
func TestAReservationOfAnUninstalledKindEnds(t *testing.T) {
	f := newWriteFixture(t)
	mapper := &uninstallable{uninstalled: []schema.GroupVersionKind{{}}}
	mapper.Reset()
	mapper.uninstalled = nil
	f.writer.templates = newResolver(mapper, f.observer.informers, f.client, f.clock)
	require.Len(t, f.apply(testNHC, controlPlanePlan("master-0"), f.watched).Created, 1)
	f.client.PrependReactor("get", testGVR.Resource, func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(testGVR.GroupResource(), "", assert.AnError)
	})

	f.clock.SetTime(f.clock.Now().Add(inflight.TTL))
	f.writer.LookUpLapsed(context.Background())
	assert.Equal(t, []string{"master-0"}, f.writer.ledger.ControlPlaneNodes(), "forbidden, still served: it may exist")

	mapper.uninstalled = []schema.GroupVersionKind{testGVR.GroupVersion().WithKind("TestRemediation")}
	f.clock.SetTime(f.clock.Now().Add(max(inflight.TTL, templates.MapperResetInterval)))
	f.writer.LookUpLapsed(context.Background())
	assert.Empty(t, f.writer.ledger.ControlPlaneNodes(), "no longer served: gone")
}
