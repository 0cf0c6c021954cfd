package chart

import (
	"bytes"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/nodehealthcheck/nhc-controller/test/controlplane"
)

// objects parses a multi-document YAML into objects by kind, namespace and
// name, without what may differ between the chart and the plain install:
// labels (Helm's own are added), and Helm's keep policy.
func objects(t *testing.T, rendered string) map[string]map[string]any {
	t.Helper()
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewBufferString(rendered), 4096)
	byKey := map[string]map[string]any{}
	for {
		var object map[string]any
		err := decoder.Decode(&object)
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		if object == nil {
			continue
		}
		u := unstructured.Unstructured{Object: object}
		u.SetLabels(nil)
		annotations := u.GetAnnotations()
		delete(annotations, "helm.sh/resource-policy")
		if len(annotations) == 0 {
			annotations = nil
		}
		u.SetAnnotations(annotations)
		unstructured.RemoveNestedField(u.Object, "spec", "template", "metadata", "labels")
		key := u.GetKind() + " " + u.GetNamespace() + "/" + u.GetName()
		require.NotContains(t, byKey, key, "rendered twice")
		byKey[key] = u.Object
	}
	return byKey
}

// kustomize renders a kustomization of this repository.
func kustomize(t *testing.T, dir string) string {
	t.Helper()
	out, err := env.Cluster.Kubectl("kustomize", filepath.Join(controlplane.RepoRoot(), dir))
	require.NoError(t, err)
	return out
}

// render renders the chart as `helm install -n nhc-system` would, with the
// image the plain install deploys, and more values.
func render(t *testing.T, values ...string) string {
	t.Helper()
	deployment := objects(t, kustomize(t, "manifests"))["Deployment nhc-system/nhc-controller"]
	containers, _, _ := unstructured.NestedSlice(deployment, "spec", "template", "spec", "containers")
	require.Len(t, containers, 1)
	image := containers[0].(map[string]any)["image"].(string)
	colon := strings.LastIndex(image, ":")
	args := []string{"template", "nhc", chartDir, "--namespace", "nhc-system", "--include-crds",
		"--set", "image.repository=" + image[:colon] + ",image.tag=" + image[colon+1:]}
	for _, v := range values {
		args = append(args, "--set", v)
	}
	out, err := env.Cluster.Helm(args...)
	require.NoError(t, err)
	return out
}

// TestTheChartRendersThePlainInstall compares the chart's default render
// with `kubectl kustomize manifests/`, and with monitoring on with
// manifests/monitoring/ added: object for object, field for field, labels
// aside. The one object only the plain install has is the controller's
// namespace, which `helm install --create-namespace` creates.
func TestTheChartRendersThePlainInstall(t *testing.T) {
	for _, tc := range []struct {
		name           string
		values         []string
		kustomizations []string
	}{
		{name: "default", kustomizations: []string{"manifests"}},
		{
			name:           "monitoring",
			values:         []string{"metrics.serviceMonitor.enabled=true,metrics.prometheusRule.enabled=true,metrics.dashboard.enabled=true"},
			kustomizations: []string{"manifests", "manifests/monitoring"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var plain string
			for _, dir := range tc.kustomizations {
				plain += "---\n" + kustomize(t, dir)
			}
			want := objects(t, plain)
			require.Contains(t, want, "Namespace /nhc-system")
			delete(want, "Namespace /nhc-system")
			got := objects(t, render(t, tc.values...))
			for key, object := range want {
				if assert.Contains(t, got, key, "the chart renders what the plain install has") {
					assert.Equal(t, object, got[key], key)
				}
			}
			for key := range got {
				assert.Contains(t, want, key, "the chart renders nothing the plain install lacks")
			}
		})
	}
}

// TestTheChartsValuesChangeWhatTheySay renders the chart with values an
// operator sets, and checks the Deployment's flags and fields that follow;
// values the schema refuses fail with its message.
func TestTheChartsValuesChangeWhatTheySay(t *testing.T) {
	out, err := env.Cluster.Helm("template", "nhc", chartDir, "--namespace", "ops",
		"--set", "image.repository=registry.example.com/nhc,image.tag=v9.9.9,image.digest=sha256:"+strings.Repeat("a", 64),
		"--set", "replicas=1,priorityClassName=system-cluster-critical,logging.verbosity=3,logging.format=json",
		"--set", "nodeLeases.namespace=leases,metrics.tlsSecret=nhc-tls,extraArgs={--workers=4}",
		"--set", "nodeSelector.node-role\\.kubernetes\\.io/control-plane=")
	require.NoError(t, err)
	rendered := objects(t, out)
	assert.NotContains(t, rendered, "PodDisruptionBudget ops/nhc-controller", "no budget for one replica")
	assert.NotContains(t, rendered, "Namespace /leases", "the lease namespace is not the release's")
	scope := rendered["ValidatingAdmissionPolicy /nhc-controller-node-lease-scope"]
	variables, _, _ := unstructured.NestedSlice(scope, "spec", "variables")
	assert.Equal(t, []any{map[string]any{"name": "leaseNamespace", "expression": "'leases'"}, map[string]any{"name": "ownNamespace", "expression": "'ops'"},
		map[string]any{"name": "holderRole", "expression": "'nhc-controller-node-lease-holder'"}}, variables,
		"the lease scope names the release's namespaces")
	conditions, _, _ := unstructured.NestedSlice(scope, "spec", "matchConditions")
	assert.Equal(t, "request.userInfo.username == 'system:serviceaccount:ops:nhc-controller'", conditions[0].(map[string]any)["expression"])
	deployment := rendered["Deployment ops/nhc-controller"]
	spec, _, _ := unstructured.NestedMap(deployment, "spec", "template", "spec")
	assert.Equal(t, "system-cluster-critical", spec["priorityClassName"])
	assert.Equal(t, map[string]any{"node-role.kubernetes.io/control-plane": ""}, spec["nodeSelector"])
	container := spec["containers"].([]any)[0].(map[string]any)
	assert.Equal(t, "registry.example.com/nhc:v9.9.9@sha256:"+strings.Repeat("a", 64), container["image"])
	assert.Equal(t, []any{"--leader-elect=true", "--metrics-bind-address=:8443", "--health-probe-bind-address=:8081", "--v=3",
		"--logging-format=json", "--lease-namespace=leases", "--tls-cert-file=/etc/nhc-controller/tls/tls.crt",
		"--tls-private-key-file=/etc/nhc-controller/tls/tls.key", "--workers=4"}, container["args"])
	guard := rendered["ValidatingAdmissionPolicy /nhc-controller-lease-namespace-guard"]
	rules, _, _ := unstructured.NestedSlice(guard, "spec", "matchConstraints", "resourceRules")
	assert.Equal(t, []any{"leases"}, rules[0].(map[string]any)["resourceNames"], "the guard keeps the namespace in use")

	_, err = env.Cluster.Helm("template", "nhc", chartDir, "--set", "logging.format=xml")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "at '/logging/format': value must be one of 'text', 'json'")

	out, err = env.Cluster.Helm("template", "nhc", chartDir, "--namespace", "ops", "--set", "networkPolicy.metricsNamespaces={prometheus,observability}")
	require.NoError(t, err)
	policy := objects(t, out)["NetworkPolicy ops/nhc-controller"]
	ingress, _, _ := unstructured.NestedSlice(policy, "spec", "ingress")
	require.Len(t, ingress, 1, "the metrics port from the monitoring namespaces; the probe port from the pod's node alone, which needs no rule")
	from := ingress[0].(map[string]any)["from"].([]any)[0].(map[string]any)
	namespaces, _, _ := unstructured.NestedSlice(from, "namespaceSelector", "matchExpressions")
	assert.Equal(t, []any{"prometheus", "observability"}, namespaces[0].(map[string]any)["values"])
	out, err = env.Cluster.Helm("template", "nhc", chartDir, "--namespace", "ops", "--set", "networkPolicy.enabled=false")
	require.NoError(t, err)
	assert.NotContains(t, objects(t, out), "NetworkPolicy ops/nhc-controller")

	_, err = env.Cluster.Helm("template", "nhc", chartDir, "--set", "leaderElection.enabled=false")
	require.Error(t, err, "two replicas, each acting")
	assert.Contains(t, err.Error(), "leaderElection.enabled=false needs replicas=1")
	_, err = env.Cluster.Helm("template", "nhc", chartDir, "--set", "leaderElection.enabled=false,replicas=1")
	require.NoError(t, err)

	_, err = env.Cluster.Helm("template", "nhc", chartDir, "--set", "metrics.enabled=false,metrics.serviceMonitor.enabled=true")
	require.Error(t, err, "a ServiceMonitor with no metrics endpoint to scrape")
	assert.Contains(t, err.Error(), "metrics.serviceMonitor.enabled=true needs metrics.enabled=true")
}

// TestTheChartRefusesValuesItDoesNotKnow: a typo in a value's name, or a
// quantity that is none, fails the render with the value's path, instead
// of rendering as if it were unset.
func TestTheChartRefusesValuesItDoesNotKnow(t *testing.T) {
	for _, tc := range []struct{ set, says string }{
		{"replica=3", "additional properties 'replica' not allowed"},
		{"metrics.serviceMonitor.enable=true", "at '/metrics/serviceMonitor': additional properties 'enable' not allowed"},
		{"resources.limits.memory=lots", "at '/resources/limits/memory'"},
		{"resources.limit.memory=1Gi", "additional properties 'limit' not allowed"},
		{"podLabels.team=null", "at '/podLabels/team'"},
	} {
		out, err := env.Cluster.Helm("template", "nhc", chartDir, "--namespace", "nhc-system", "--set", tc.set)
		if assert.Error(t, err, tc.set) {
			assert.Contains(t, out+err.Error(), tc.says, tc.set)
		}
	}
	for _, set := range []string{"replicas=3", "resources.limits.memory=512Mi", "resources.requests.cpu=0.5", "resources.requests.cpu=1", "podLabels.team=sre"} {
		_, err := env.Cluster.Helm("template", "nhc", chartDir, "--namespace", "nhc-system", "--set", set)
		assert.NoError(t, err, set)
	}
}
