package remediation

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
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

// rbacFixture is an observer whose identity may or may not list, watch and get
// the test template kind, on the dynamic fake client, with a fake clock.
type rbacFixture struct {
	clock     *clocktesting.FakeClock
	client    *dynamicfake.FakeDynamicClient
	informers *kinds.Informers
	observer  *Observer
	nhc       *v1alpha1.NodeHealthCheck
	// listForbidden and getForbidden say what the identity may not do on
	// templates; gets counts the GETs of templates.
	listForbidden, getForbidden atomic.Bool
	gets                        atomic.Int32
}

func newRBACFixture(t *testing.T, listForbidden, getForbidden bool, objects ...runtime.Object) *rbacFixture {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	f := &rbacFixture{clock: clocktesting.NewFakeClock(time.Date(2026, 3, 20, 15, 0, 0, 0, time.UTC)), client: fakeDynamic(objects...)}
	f.listForbidden.Store(listForbidden)
	f.getForbidden.Store(getForbidden)
	forbidden := func(verb string, no *atomic.Bool) clienttesting.ReactionFunc {
		return func(clienttesting.Action) (bool, runtime.Object, error) {
			if verb == "get" {
				f.gets.Add(1)
			}
			if no.Load() {
				return true, nil, apierrors.NewForbidden(testTemplateGVR.GroupResource(), "", assert.AnError)
			}
			return false, nil, nil
		}
	}
	f.client.PrependReactor("list", testTemplateGVR.Resource, forbidden("list", &f.listForbidden))
	f.client.PrependReactor("get", testTemplateGVR.Resource, forbidden("get", &f.getForbidden))
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(testTemplateGVR.GroupVersion().WithKind("TestRemediationTemplate"), meta.RESTScopeNamespace)
	mapper.Add(testGVR.GroupVersion().WithKind("TestRemediation"), meta.RESTScopeNamespace)
	f.informers = kinds.New(ctx, f.client, f.client, f.clock)
	f.observer, _ = testRooms(f.informers, newResolver(templates.Resettable{RESTMapper: mapper}, f.informers, f.client, f.clock), f.clock, f.client, kubefake.NewClientset().CoreV1().Nodes())
	f.nhc = testNHC.DeepCopy()
	f.nhc.Spec.RemediationTemplate = ptr.To(templateRef)
	return f
}

// synced is what one sync reads: what Read saw, and the template as Watch
// read it.
type synced struct {
	gather.Seen
	template *unstructured.Unstructured
}

func (f *rbacFixture) read(t *testing.T) synced {
	t.Helper()
	w, err := f.observer.Watch(context.Background(), f.nhc, nil)
	require.NoError(t, err)
	seen, err := f.observer.Read(f.nhc, w)
	require.NoError(t, err)
	return synced{Seen: seen, template: w.template(templateRef)}
}

// readKnown reads until the informers have listed (or failed to), as syncs
// in a row would.
func (f *rbacFixture) readKnown(t *testing.T) synced {
	t.Helper()
	var obs synced
	require.Eventually(t, func() bool {
		obs = f.read(t)
		return obs.Ready || obs.Problem != nil
	}, 10*time.Second, 10*time.Millisecond)
	return obs
}

func (f *rbacFixture) templateWatched() bool {
	return slices.Contains(f.informers.Running(), testTemplateGVR)
}

func (f *rbacFixture) deleteTemplate(t *testing.T) {
	t.Helper()
	require.NoError(t, f.client.Tracker().Delete(testTemplateGVR, templateRef.Namespace, templateRef.Name))
}

func noTemplateSpec() *unstructured.Unstructured {
	tmpl := testTemplate(nil)
	unstructured.RemoveNestedField(tmpl.Object, "spec", "template", "spec")
	return tmpl
}

func TestATemplateKindThatCannotBeWatchedIsReadWithGet(t *testing.T) {
	cases := []struct {
		name         string
		getForbidden bool
		stored       []runtime.Object
		wantReady    bool
		wantReason   string
		wantMessage  string
		wantRefresh  time.Duration
	}{
		{name: "get allowed", stored: []runtime.Object{testTemplate(nil)}, wantReady: true, wantRefresh: templates.CacheTime},
		{name: "get allowed, the template missing", wantReady: true, wantRefresh: templates.CacheTime, wantReason: v1alpha1.ReasonTemplateNotFound,
			wantMessage: "Remediation template TestRemediationTemplate remediators/reboot not found: failed to get external remediation template remediators/reboot"},
		{name: "get allowed, the template without spec.template.spec", stored: []runtime.Object{noTemplateSpec()}, wantReady: true, wantRefresh: templates.CacheTime,
			wantReason: v1alpha1.ReasonTemplateInvalid, wantMessage: "Remediation template TestRemediationTemplate remediators/reboot is invalid: it has no spec.template.spec"},
		// The forbidden GET is not cached: the refresh is the informer's retry.
		{name: "get forbidden too", getForbidden: true, stored: []runtime.Object{testTemplate(nil)}, wantRefresh: kinds.TemplateRetryInterval, wantReason: v1alpha1.ReasonTemplateNotFound,
			wantMessage: "Remediation template TestRemediationTemplate remediators/reboot cannot be read: " +
				"testremediationtemplates.test.medik8s.io is forbidden: assert.AnError general error for testing. " +
				"Grant get on testremediationtemplates.test.medik8s.io (get, list and watch let changes be seen at once), " +
				"for example with a ClusterRole labelled rbac.ext-remediation/aggregate-to-ext-remediation=true"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newRBACFixture(t, true, tc.getForbidden, tc.stored...)
			obs := f.readKnown(t)
			assert.Equal(t, tc.wantReady, obs.Ready)
			assert.Equal(t, tc.wantRefresh, obs.RefreshAfter)
			if tc.wantReason == "" {
				assert.Nil(t, obs.Problem)
				assert.Equal(t, kinds.Keep(testTemplate(nil), true), obs.template)
			} else {
				require.NotNil(t, obs.Problem)
				assert.Equal(t, tc.wantReason, obs.Problem.Reason)
				assert.Equal(t, tc.wantMessage, obs.Problem.Message)
			}
			f.read(t)
			assert.False(t, f.templateWatched(), "the forbidden informer is stopped")
			assert.True(t, slices.Contains(f.informers.Running(), testGVR), "the remediation kind is still watched")
		})
	}
}

// A template read with GET is read again once its cache time is over, on the
// next read after it: not before, and not more often.
func TestATemplateReadWithGetIsCachedForItsCacheTime(t *testing.T) {
	f := newRBACFixture(t, true, false, testTemplate(nil))
	obs := f.readKnown(t)
	require.Nil(t, obs.Problem)
	steps := []struct {
		name        string
		advance     time.Duration
		change      func()
		wantProblem string
		wantRefresh time.Duration
		wantGets    int32
	}{
		{name: "deleted, within the cache time", advance: templates.CacheTime - time.Second, change: func() { f.deleteTemplate(t) }, wantRefresh: time.Second, wantGets: 1},
		{name: "the cache time over", advance: time.Second, wantProblem: "Remediation template TestRemediationTemplate remediators/reboot not found: failed to get external remediation template remediators/reboot", wantRefresh: templates.CacheTime, wantGets: 2},
		{name: "created again, the absence cached", advance: time.Second, change: func() {
			require.NoError(t, f.client.Tracker().Create(testTemplateGVR, testTemplate(nil), templateRef.Namespace))
		}, wantProblem: "Remediation template TestRemediationTemplate remediators/reboot not found: failed to get external remediation template remediators/reboot", wantRefresh: templates.CacheTime - time.Second, wantGets: 2},
		{name: "found again after the cache time", advance: templates.CacheTime, wantRefresh: templates.CacheTime, wantGets: 3},
	}
	for _, step := range steps {
		f.clock.Step(step.advance)
		if step.change != nil {
			step.change()
		}
		obs := f.read(t)
		assert.True(t, obs.Ready, step.name)
		if step.wantProblem == "" {
			assert.Nil(t, obs.Problem, step.name)
		} else if assert.NotNil(t, obs.Problem, step.name) {
			assert.Equal(t, step.wantProblem, obs.Problem.Message, step.name)
		}
		assert.Equal(t, step.wantRefresh, obs.RefreshAfter, step.name)
		assert.Equal(t, step.wantGets, f.gets.Load(), step.name)
	}
}

// A kind read with GET gets an informer again every
// kinds.TemplateRetryInterval: a role that now grants list and watch is
// used, and one that still does not goes back to GET.
func TestATemplateKindReadWithGetIsWatchedAgainLater(t *testing.T) {
	cases := []struct {
		name        string
		granted     bool
		wantWatched bool
		wantRefresh time.Duration
	}{
		{"list and watch granted", true, true, 0},
		// Read with GET a second before the retry.
		{"still forbidden", false, false, templates.CacheTime - time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newRBACFixture(t, true, false, testTemplate(nil))
			f.readKnown(t)
			f.read(t)
			require.False(t, f.templateWatched())
			f.clock.Step(kinds.TemplateRetryInterval - time.Second)
			f.read(t)
			assert.False(t, f.templateWatched(), "not before the retry interval")

			f.listForbidden.Store(!tc.granted)
			f.clock.Step(time.Second)
			obs := f.read(t)
			assert.True(t, f.templateWatched(), "tried again")
			assert.True(t, obs.Ready, "read with GET while the informer starts")
			assert.Nil(t, obs.Problem)

			require.Eventually(t, func() bool {
				obs = f.read(t)
				return f.templateWatched() == tc.wantWatched && obs.RefreshAfter == tc.wantRefresh
			}, 10*time.Second, 10*time.Millisecond)
			assert.True(t, obs.Ready)
			assert.Nil(t, obs.Problem)
			assert.Equal(t, kinds.Keep(testTemplate(nil), true), obs.template)
		})
	}
}

// A role that grants get later is used at the next read: a forbidden GET is
// not cached.
func TestAGrantOfGetIsUsedAtOnce(t *testing.T) {
	f := newRBACFixture(t, true, true, testTemplate(nil))
	obs := f.readKnown(t)
	require.NotNil(t, obs.Problem)
	assert.False(t, obs.Ready)
	f.getForbidden.Store(false)
	obs = f.read(t)
	assert.True(t, obs.Ready)
	assert.Nil(t, obs.Problem)
}
