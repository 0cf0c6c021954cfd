package cli

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	nhcfake "github.com/nodehealthcheck/nhc-controller/pkg/generated/clientset/versioned/fake"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
)

// update rewrites the golden files: go test ./pkg/cli -update.
var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// now is the moment every golden output is decided at.
var now = time.Date(2026, 3, 20, 15, 0, 0, 0, time.UTC)

var (
	templateGVK    = schema.GroupVersionKind{Group: "test.medik8s.io", Version: "v1alpha1", Kind: "TestRemediationTemplate"}
	remediationGVK = schema.GroupVersionKind{Group: "test.medik8s.io", Version: "v1alpha1", Kind: "TestRemediation"}
)

// fixtureCluster is a cluster of three workers under one NodeHealthCheck:
// worker-1 unhealthy for 20 minutes and remediated, under its lease;
// worker-2 healthy; worker-3 unhealthy for a minute, its 5 minutes not
// passed yet.
func fixtureCluster() *cluster {
	node := func(name string, ready corev1.ConditionStatus, since time.Duration) *corev1.Node {
		return &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, UID: k8stypes.UID("uid-" + name), Labels: map[string]string{"role": "worker"}},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready,
				LastTransitionTime: metav1.NewTime(now.Add(-since))}}},
		}
	}
	template := corev1.ObjectReference{APIVersion: templateGVK.GroupVersion().String(), Kind: templateGVK.Kind, Namespace: "remediators", Name: "reboot"}
	nhc := &v1alpha1.NodeHealthCheck{
		ObjectMeta: metav1.ObjectMeta{Name: "workers", UID: "uid-workers", CreationTimestamp: metav1.NewTime(now.Add(-48 * time.Hour))},
		Spec: v1alpha1.NodeHealthCheckSpec{
			Selector:            metav1.LabelSelector{MatchLabels: map[string]string{"role": "worker"}},
			MinHealthy:          ptr.To(intstr.FromString("51%")),
			RemediationTemplate: &template,
			UnhealthyConditions: []v1alpha1.UnhealthyCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Duration: metav1.Duration{Duration: 5 * time.Minute}}},
		},
	}
	started := metav1.NewTime(now.Add(-15 * time.Minute))
	resource := corev1.ObjectReference{APIVersion: remediationGVK.GroupVersion().String(), Kind: remediationGVK.Kind, Namespace: "remediators", Name: "worker-1", UID: "uid-remediation"}
	nhc.Status = v1alpha1.NodeHealthCheckStatus{
		Phase: v1alpha1.PhaseRemediating, ObservedNodes: ptr.To[int32](3), HealthyNodes: ptr.To[int32](1),
		UnhealthyNodes:     []*v1alpha1.UnhealthyNode{{Name: "worker-1", Remediations: []*v1alpha1.Remediation{{Resource: resource, Started: started, TemplateName: "reboot"}}}},
		RemediationHistory: []v1alpha1.RemediationRecord{{TargetKind: "Node", TargetName: "worker-1", Detected: metav1.NewTime(now.Add(-20 * time.Minute)), Started: started, Outcome: v1alpha1.OutcomeRemediating}},
	}
	templateObj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": template.APIVersion, "kind": template.Kind,
		"metadata": map[string]any{"name": "reboot", "namespace": "remediators"},
		"spec":     map[string]any{"template": map[string]any{"spec": map[string]any{"strategy": "reboot"}}},
	}}
	remediationObj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": resource.APIVersion, "kind": resource.Kind,
		"metadata": map[string]any{
			"name": "worker-1", "namespace": "remediators", "uid": "uid-remediation", "creationTimestamp": started.UTC().Format(time.RFC3339),
			"annotations":     map[string]any{v1alpha1.NodeNameAnnotation: "worker-1", v1alpha1.TemplateNameAnnotation: "reboot"},
			"ownerReferences": []any{map[string]any{"apiVersion": v1alpha1.SchemeGroupVersion.String(), "kind": "NodeHealthCheck", "name": "workers", "uid": "uid-workers"}},
		},
	}}
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "node-worker-1", Namespace: "medik8s-leases"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(health.LeaseHolder("workers")), LeaseDurationSeconds: ptr.To[int32](660),
			AcquireTime: &metav1.MicroTime{Time: started.Time}, RenewTime: &metav1.MicroTime{Time: now.Add(-time.Minute)}},
	}
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(templateGVK, meta.RESTScopeNamespace)
	mapper.Add(remediationGVK, meta.RESTScopeNamespace)
	scheme := runtime.NewScheme()
	dynamic := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(scheme, map[schema.GroupVersionResource]string{
		{Group: "test.medik8s.io", Version: "v1alpha1", Resource: "testremediationtemplates"}: "TestRemediationTemplateList",
		{Group: "test.medik8s.io", Version: "v1alpha1", Resource: "testremediations"}:         "TestRemediationList",
	}, templateObj, remediationObj)
	return &cluster{
		nhcs:           nhcfake.NewSimpleClientset(nhc),
		kube:           kubefake.NewClientset(node("worker-1", corev1.ConditionFalse, 20*time.Minute), node("worker-2", corev1.ConditionTrue, time.Hour), node("worker-3", corev1.ConditionFalse, time.Minute), lease),
		dynamic:        dynamic,
		mapper:         mapper,
		leaseNamespace: "medik8s-leases",
	}
}

// TestGoldenOutputs: what kubectl nhc prints, table by table and in every
// output format, for one cluster at one moment.
func TestGoldenOutputs(t *testing.T) {
	whatIf := filepath.Join(t.TempDir(), "nhc.yaml")
	require.NoError(t, os.WriteFile(whatIf, []byte(`apiVersion: remediation.medik8s.io/v1alpha1
kind: NodeHealthCheck
metadata:
  name: workers-tighter
spec:
  selector:
    matchLabels:
      role: worker
  minHealthy: 2
  remediationTemplate:
    apiVersion: test.medik8s.io/v1alpha1
    kind: TestRemediationTemplate
    namespace: remediators
    name: reboot
  unhealthyConditions:
    - type: Ready
      status: "False"
      duration: 30s
`), 0o600))
	cases := []struct {
		golden string
		args   []string
	}{
		{"status", []string{"status"}},
		{"status-wide", []string{"status", "-o", "wide"}},
		{"status-json", []string{"status", "workers", "-o", "json"}},
		{"status-yaml", []string{"status", "workers", "-o", "yaml"}},
		{"history", []string{"history"}},
		{"history-json", []string{"history", "-o", "json"}},
		{"why-remediated", []string{"why", "worker-1"}},
		{"why-waiting", []string{"why", "worker-3"}},
		{"why-yaml", []string{"why", "worker-3", "-o", "yaml"}},
		{"what-if", []string{"what-if", "-f", whatIf}},
		{"what-if-json", []string{"what-if", "-f", whatIf, "-o", "json"}},
		{"status-name", []string{"status", "-o", "name"}},
		{"status-jsonpath", []string{"status", "-o", "jsonpath={range .nodeHealthChecks[*]}{.name} {.remediating}{\"\\n\"}{end}"}},
		{"status-custom-columns", []string{"status", "-o", "custom-columns=NAME:.name,NODES:.nodes[*].node,STORM:.stormSince"}},
		{"status-no-headers", []string{"status", "--no-headers"}},
		{"history-name", []string{"history", "-o", "name"}},
		{"why-custom-columns", []string{"why", "worker-3", "-o", "custom-columns=NHC:.nodeHealthCheck,DUE:{.due}", "--no-headers"}},
		{"what-if-no-headers", []string{"what-if", "-f", whatIf, "--no-headers"}},
	}
	for _, tc := range cases {
		t.Run(tc.golden, func(t *testing.T) {
			var out, errOut bytes.Buffer
			o := &Options{IOStreams: genericiooptions.IOStreams{Out: &out, ErrOut: &errOut}, configFlags: genericclioptions.NewConfigFlags(true), now: func() time.Time { return now }}
			c := fixtureCluster()
			o.connect = func() (*cluster, error) { return c, nil }
			cmd := newCommand(o)
			cmd.SetArgs(tc.args)
			require.NoError(t, cmd.Execute(), errOut.String())
			got := out.String()
			if errOut.Len() > 0 {
				got += "--- stderr\n" + errOut.String()
			}
			path := filepath.Join("testdata", tc.golden+".golden")
			if *update {
				require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
				return
			}
			want, err := os.ReadFile(path)
			require.NoError(t, err, "go test ./pkg/cli -update writes it")
			assert.Equal(t, string(want), got)
		})
	}
}
