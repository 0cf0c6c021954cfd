package remediation

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/gather"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/internal/kinds"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/templates"
)

// After a restart, a kind not synced yet, or forbidden from the start,
// shows nothing: it is unreadable, and what the statuses of its
// NodeHealthChecks record of it holds their nodes instead (pkg/gather).
// A kind that can be read is its cache's to tell: the statuses are not
// asked.
func TestTheStatusRecordsTheRemediationsOfAKindThatCannotBeRead(t *testing.T) {
	recorded := testNHC.DeepCopy()
	recorded.Status.UnhealthyNodes = []*v1alpha1.UnhealthyNode{
		{Name: "cp-0", Remediations: []*v1alpha1.Remediation{{Resource: corev1.ObjectReference{APIVersion: testGVR.GroupVersion().String(), Kind: "TestRemediation", Name: "cp-0"}}}},
		{Name: "worker-0"},
	}
	for _, tt := range []struct {
		name      string
		forbidden bool
		want      map[schema.GroupVersionKind]bool
	}{
		{"forbidden", true, map[schema.GroupVersionKind]bool{testGVR.GroupVersion().WithKind("TestRemediation"): true}},
		{"readable", false, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			clock := clocktesting.NewFakePassiveClock(time.Date(2026, 3, 20, 15, 0, 0, 0, time.UTC))
			client := fakeDynamic()
			forbidden := apierrors.NewForbidden(testGVR.GroupResource(), "", assert.AnError)
			client.PrependReactor("list", testGVR.Resource, func(clienttesting.Action) (bool, runtime.Object, error) {
				return tt.forbidden, nil, forbidden
			})
			mapper := meta.NewDefaultRESTMapper(nil)
			mapper.Add(testGVR.GroupVersion().WithKind("TestRemediation"), meta.RESTScopeNamespace)
			informers := kinds.New(ctx, client, client, clock)
			m, _ := testRooms(informers, newResolver(templates.Resettable{RESTMapper: mapper}, informers, client, clock), clock, client, kubefake.NewClientset().CoreV1().Nodes())
			reader := nhcNamed("reader")
			unreadable := func() map[schema.GroupVersionKind]bool {
				w, err := m.Watch(ctx, reader, []*v1alpha1.NodeHealthCheck{recorded})
				require.NoError(t, err)
				seen, err := m.Read(reader, w)
				require.NoError(t, err)
				return seen.Unreadable
			}
			recordedKind := map[schema.GroupVersionKind]bool{testGVR.GroupVersion().WithKind("TestRemediation"): true}
			assert.Equal(t, recordedKind, unreadable(), "not watched yet")

			informers.Use(recorded.Name, kinds.Kinds{Remediations: []schema.GroupVersionResource{testGVR}})
			if tt.forbidden {
				assert.Equal(t, recordedKind, unreadable(), "failing within the grace")
				clock.SetTime(clock.Now().Add(kinds.WatchGrace))
				// Past the grace, the next forbidden list stops the informer.
				require.Eventually(t, func() bool { return len(informers.Running()) == 0 }, 10*time.Second, 10*time.Millisecond)
			} else {
				require.Eventually(t, func() bool { return informers.State(testGVR).Synced }, 10*time.Second, 10*time.Millisecond)
			}
			assert.Equal(t, tt.want, unreadable())
		})
	}
}

// uninstallable is a mapper whose kinds can be uninstalled: a Reset, as
// after a rediscovery, forgets them.
type uninstallable struct {
	meta.RESTMapper
	uninstalled []schema.GroupVersionKind
}

func (u *uninstallable) Reset() {
	if len(u.uninstalled) == 0 {
		return
	}
	m := meta.NewDefaultRESTMapper(nil)
	for _, gvk := range []schema.GroupVersionKind{testTemplateGVR.GroupVersion().WithKind("TestRemediationTemplate"), testGVR.GroupVersion().WithKind("TestRemediation"), otherGVK} {
		if !slices.Contains(u.uninstalled, gvk) {
			m.Add(gvk, meta.RESTScopeNamespace)
		}
	}
	u.RESTMapper = m
}

var (
	otherGVR = schema.GroupVersionResource{Group: "test.medik8s.io", Version: "v1alpha1", Resource: "otherremediations"}
	otherGVK = otherGVR.GroupVersion().WithKind("OtherRemediation")
)

// A kind that only a NodeHealthCheck's status lists (a leftover of a
// template it no longer uses) and that turns forbidden disables it: its
// resources cannot be read. Uninstalled together with its role, it still
// answers 403, authorization coming first; the API is looked up again, the
// kind is gone, and the NodeHealthCheck works again.
func TestAKindUninstalledWithItsRoleNoLongerDisables(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	clock := clocktesting.NewFakeClock(time.Date(2026, 3, 20, 15, 0, 0, 0, time.UTC))
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		testGVR: "TestRemediationList", testTemplateGVR: "TestRemediationTemplateList", otherGVR: "OtherRemediationList"}, testTemplate(nil))
	forbidden := apierrors.NewForbidden(otherGVR.GroupResource(), "", assert.AnError)
	client.PrependReactor("list", otherGVR.Resource, func(clienttesting.Action) (bool, runtime.Object, error) { return true, nil, forbidden })
	mapper := &uninstallable{uninstalled: []schema.GroupVersionKind{{}}}
	mapper.Reset()
	mapper.uninstalled = nil
	informers := kinds.New(ctx, client, client, clock)
	m, _ := testRooms(informers, newResolver(mapper, informers, client, clock), clock, client, kubefake.NewClientset().CoreV1().Nodes())
	nhc := testNHC.DeepCopy()
	nhc.Spec.RemediationTemplate = ptr.To(templateRef)
	nhc.Status.UnhealthyNodes = []*v1alpha1.UnhealthyNode{{Name: "cp-1", Remediations: []*v1alpha1.Remediation{
		{Resource: corev1.ObjectReference{APIVersion: otherGVR.GroupVersion().String(), Kind: otherGVK.Kind, Namespace: "remediators", Name: "cp-1"}}}}}
	read := func() gather.Seen {
		w, err := m.Watch(context.Background(), nhc, nil)
		require.NoError(t, err)
		seen, err := m.Read(nhc, w)
		require.NoError(t, err)
		return seen
	}
	read()
	clock.Step(kinds.WatchGrace)
	// Past the grace, the next forbidden list stops the informer.
	require.Eventually(t, func() bool { return !slices.Contains(informers.Running(), otherGVR) }, 10*time.Second, 10*time.Millisecond)
	obs := read()
	require.NotNil(t, obs.Problem, "its own resources cannot be read")
	assert.Contains(t, obs.Problem.Message, "otherremediations")

	mapper.uninstalled = []schema.GroupVersionKind{otherGVK}
	clock.Step(templates.MapperResetInterval)
	read()
	require.Eventually(t, func() bool { obs = read(); return obs.Ready }, 10*time.Second, 10*time.Millisecond)
	assert.Nil(t, obs.Problem, "the kind is gone, and so are its resources")
}

// A kind whose role was removed keeps the nodes its cache showed busy; once
// it is uninstalled too (it still answers 403, authorization coming first),
// the API no longer serves it and its resources went with its CRD: the
// nodes are free again.
func TestAForbiddenKindUninstalledFreesItsNodes(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	clock := clocktesting.NewFakeClock(time.Date(2026, 3, 20, 15, 0, 0, 0, time.UTC))
	cp, err := newRemediation(testTemplate(nil), testNHC, "cp-1", true)
	require.NoError(t, err)
	client := fakeDynamic(cp)
	var denied atomic.Bool
	forbidden := apierrors.NewForbidden(testGVR.GroupResource(), "", assert.AnError)
	client.PrependReactor("list", testGVR.Resource, func(clienttesting.Action) (bool, runtime.Object, error) {
		return denied.Load(), nil, forbidden
	})
	mapper := &uninstallable{uninstalled: []schema.GroupVersionKind{{}}}
	mapper.Reset()
	mapper.uninstalled = nil
	informers := kinds.New(ctx, client, client, clock)
	m, _ := testRooms(informers, newResolver(mapper, informers, client, clock), clock, client, kubefake.NewClientset().CoreV1().Nodes())
	informers.Use("deleted", kinds.Kinds{Remediations: []schema.GroupVersionResource{testGVR}})
	require.Eventually(t, func() bool { return informers.State(testGVR).Synced }, 10*time.Second, 10*time.Millisecond)
	informers.Use("deleted", kinds.Kinds{})
	// Its remediator's role is removed: a write of its resources is
	// forbidden, which stops the synced informer, and so is every list.
	denied.Store(true)
	informers.Forbidden(testGVR, forbidden)

	other := nhcNamed("other")
	obs, err := m.Read(other, &Watched{})
	require.NoError(t, err)
	assert.Equal(t, []string{"cp-1"}, obs.ControlPlane, "forbidden: what it showed holds")

	mapper.uninstalled = []schema.GroupVersionKind{testGVR.GroupVersion().WithKind("TestRemediation")}
	clock.Step(templates.MapperResetInterval)
	_, err = m.Watch(context.Background(), other, nil)
	require.NoError(t, err)
	obs, err = m.Read(other, &Watched{})
	require.NoError(t, err)
	assert.Empty(t, obs.ControlPlane, "uninstalled: nothing left")
	assert.Empty(t, obs.OtherOwners)
}
