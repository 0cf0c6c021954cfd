package kinds

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/utils/clock"
)

// Every informer ends with the context the Informers were given, those a
// sync in flight asks for after it ended included: a stopped process, or a
// replica of the simulation, leaves no goroutine behind (synctest.Test
// fails on one left blocked).
func TestEveryInformerEndsWithItsContext(t *testing.T) {
	late := schema.GroupVersionResource{Group: "late.medik8s.io", Version: "v1", Resource: "lateremediations"}
	looked := schema.GroupVersionResource{Group: "looked.medik8s.io", Version: "v1", Resource: "lookedremediations"}
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
			testGVR: "TestRemediationList", testTemplateGVR: "TestRemediationTemplateList", late: "LateRemediationList", looked: "LookedRemediationList",
		}, testRemediation("worker-0", false))
		informers := New(ctx, client, client, clock.RealClock{})
		informers.Use("workers", Kinds{Remediations: []schema.GroupVersionResource{testGVR},
			Templates: []NamedTemplate{{Ref: TemplateRef{Resource: testTemplateGVR, Namespace: "remediators", Name: "reboot"}, Kind: "TestRemediationTemplate"}}})
		informers.Look([]schema.GroupVersionResource{looked})
		synctest.Wait()
		assert.True(t, informers.Synced(testGVR, testTemplateGVR))

		cancel()
		informers.Use("late", Kinds{Remediations: []schema.GroupVersionResource{testGVR, late}})
		informers.RetryUnread()
		time.Sleep(time.Minute)
		synctest.Wait()
	})
}
