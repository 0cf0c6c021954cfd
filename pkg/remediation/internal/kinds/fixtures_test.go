package kinds

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
)

var (
	testNHC = &v1alpha1.NodeHealthCheck{ObjectMeta: metav1.ObjectMeta{Name: "workers", UID: "nhc-uid"}}
	testGVR = schema.GroupVersionResource{Group: "test.medik8s.io", Version: "v1alpha1", Resource: "testremediations"}
	// testTemplateGVR is the resource of testGVR's template kind.
	testTemplateGVR = schema.GroupVersionResource{Group: "test.medik8s.io", Version: "v1alpha1", Resource: "testremediationtemplates"}
)

func fakeDynamic(objects ...runtime.Object) *dynamicfake.FakeDynamicClient {
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{testGVR: "TestRemediationList", testTemplateGVR: "TestRemediationTemplateList"}, objects...)
}

// testRemediation is a remediation resource of testGVR for a node, owned by
// testNHC, as pkg/remediation generates it: what the indexes read of it.
func testRemediation(node string, controlPlane bool) *unstructured.Unstructured {
	r := &unstructured.Unstructured{}
	r.SetAPIVersion(testGVR.GroupVersion().String())
	r.SetKind("TestRemediation")
	r.SetNamespace("remediators")
	r.SetName(node)
	r.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "NodeHealthCheck", Name: testNHC.Name, UID: testNHC.UID}})
	r.SetAnnotations(map[string]string{v1alpha1.NodeNameAnnotation: node})
	if controlPlane {
		r.SetLabels(map[string]string{v1alpha1.ControlPlaneNodeLabel: ""})
	}
	return r
}
