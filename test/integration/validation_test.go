package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

var nhcResource = schema.GroupVersionResource{Group: "remediation.medik8s.io", Version: "v1alpha1", Resource: "nodehealthchecks"}

// validNHC is a valid NodeHealthCheck that each case below breaks in one way.
const validNHC = `
apiVersion: remediation.medik8s.io/v1alpha1
kind: NodeHealthCheck
metadata:
  generateName: validation-
spec:
  selector:
    matchExpressions:
    - key: node-role.kubernetes.io/control-plane
      operator: DoesNotExist
  remediationTemplate:
    apiVersion: self-node-remediation.medik8s.io/v1alpha1
    kind: SelfNodeRemediationTemplate
    namespace: openshift-workload-availability
    name: self-node-remediation-automatic-strategy-template
  minHealthy: "51%"
`

const twoEscalations = `
remediationTemplate: null
escalatingRemediations:
- remediationTemplate: {apiVersion: a.example.com/v1, kind: ATemplate, namespace: ns, name: a}
  order: 1
  timeout: 5m
- remediationTemplate: {apiVersion: b.example.com/v1, kind: BTemplate, namespace: ns, name: b}
  order: 2
  timeout: 30m
`

// createNHC creates a NodeHealthCheck from validNHC with specPatch merged into
// its spec (a JSON merge patch written in YAML: null removes a field).
func createNHC(t *testing.T, specPatch string) (*unstructured.Unstructured, error) {
	t.Helper()
	base, err := yaml.YAMLToJSON([]byte(validNHC))
	require.NoError(t, err)
	patch, err := yaml.YAMLToJSON([]byte(specPatch))
	require.NoError(t, err)
	doc := base
	if string(patch) != "null" {
		doc, err = jsonpatch.MergePatch(base, []byte(fmt.Sprintf(`{"spec":%s}`, patch)))
		require.NoError(t, err)
	}
	obj := &unstructured.Unstructured{}
	require.NoError(t, json.Unmarshal(doc, &obj.Object))
	created, err := dynamicClient.Resource(nhcResource).Create(context.Background(), obj, metav1.CreateOptions{})
	if err == nil {
		t.Cleanup(func() {
			_ = dynamicClient.Resource(nhcResource).Delete(context.Background(), created.GetName(), metav1.DeleteOptions{})
		})
	}
	return created, err
}

// invalidSpecs are spec patches the API server refuses, each with the words
// of its refusal.
var invalidSpecs = []struct {
	name      string
	specPatch string
	message   string
}{
	{"both remediationTemplate and escalatingRemediations",
		twoEscalations + `remediationTemplate: {apiVersion: a.example.com/v1, kind: ATemplate, namespace: ns, name: a}`,
		"remediationTemplate and escalatingRemediations are mutually exclusive: set only one of them"},
	{"neither remediationTemplate nor escalatingRemediations",
		`remediationTemplate: null`,
		"set either remediationTemplate or at least one escalatingRemediations entry"},
	{"an empty escalatingRemediations list and no remediationTemplate",
		`{remediationTemplate: null, escalatingRemediations: []}`,
		"set either remediationTemplate or at least one escalatingRemediations entry"},
	{"both minHealthy and maxUnhealthy",
		`maxUnhealthy: 1`,
		"minHealthy and maxUnhealthy are mutually exclusive: set only one of them"},
	{"neither minHealthy nor maxUnhealthy",
		`minHealthy: null`,
		"set one of minHealthy or maxUnhealthy"},
	{"minHealthy above 100%", `minHealthy: "120%"`, "minHealthy must be an integer from 0 to 1000000, or a percentage from 0% to 100%"},
	{"minHealthy 101%", `minHealthy: "101%"`, "minHealthy must be an integer from 0 to 1000000, or a percentage from 0% to 100%"},
	{"negative minHealthy", `minHealthy: -1`, "minHealthy must be an integer from 0 to 1000000, or a percentage from 0% to 100%"},
	{"negative minHealthy as a string", `minHealthy: "-1"`, "minHealthy must be an integer from 0 to 1000000, or a percentage from 0% to 100%"},
	{"negative percentage minHealthy", `minHealthy: "-30%"`, "minHealthy must be an integer from 0 to 1000000, or a percentage from 0% to 100%"},
	{"minHealthy that is no number", `minHealthy: "half"`, "minHealthy must be an integer from 0 to 1000000, or a percentage from 0% to 100%"},
	{"negative maxUnhealthy", `{minHealthy: null, maxUnhealthy: -1}`, "maxUnhealthy must be an integer from 0 to 1000000, or a percentage from 0% to 100%"},
	{"maxUnhealthy above 100%", `{minHealthy: null, maxUnhealthy: "150%"}`, "maxUnhealthy must be an integer from 0 to 1000000, or a percentage from 0% to 100%"},
	{"maxUnhealthy with a MachineDeletionRemediationTemplate",
		`{minHealthy: null, maxUnhealthy: 1, remediationTemplate: {apiVersion: machine-deletion-remediation.medik8s.io/v1alpha1, kind: MachineDeletionRemediationTemplate, namespace: ns, name: mdr}}`,
		"maxUnhealthy cannot be used with a MachineDeletionRemediationTemplate"},
	{"maxUnhealthy with an escalating MachineDeletionRemediationTemplate",
		`{minHealthy: null, maxUnhealthy: 1, remediationTemplate: null, escalatingRemediations: [{remediationTemplate: {apiVersion: machine-deletion-remediation.medik8s.io/v1alpha1, kind: MachineDeletionRemediationTemplate, namespace: ns, name: mdr}, order: 1, timeout: 5m}]}`,
		"maxUnhealthy cannot be used with a MachineDeletionRemediationTemplate"},
	{"an empty selector", `selector: {matchExpressions: null}`, "selector must have at least one matchLabels or matchExpressions entry"},
	{"empty selector lists", `selector: {matchExpressions: [], matchLabels: {}}`, "selector must have at least one matchLabels or matchExpressions entry"},
	{"no selector", `selector: null`, "spec.selector: Required value"},
	{"selector In without values", `selector: {matchExpressions: [{key: a, operator: In}]}`, "selector matchExpressions with operator In or NotIn need at least one value"},
	{"selector Exists with values", `selector: {matchExpressions: [{key: a, operator: Exists, values: [b]}]}`, "selector matchExpressions with operator Exists or DoesNotExist must not have values"},
	{"selector with an unknown operator", `selector: {matchExpressions: [{key: a, operator: Equals, values: [b]}]}`, "selector matchExpressions operator must be one of In, NotIn, Exists or DoesNotExist"},
	{"duplicate escalation orders",
		twoEscalations + `
escalatingRemediations:
- remediationTemplate: {apiVersion: a.example.com/v1, kind: ATemplate, namespace: ns, name: a}
  order: 42
  timeout: 5m
- remediationTemplate: {apiVersion: b.example.com/v1, kind: BTemplate, namespace: ns, name: b}
  order: 42
  timeout: 5m`,
		"escalatingRemediations order values must be unique"},
	{"an escalation timeout of 30s",
		twoEscalations + `
escalatingRemediations:
- remediationTemplate: {apiVersion: a.example.com/v1, kind: ATemplate, namespace: ns, name: a}
  order: 1
  timeout: 30s`,
		"timeout must be at least 60s"},
	{"an escalation timeout of 59.9s",
		twoEscalations + `
escalatingRemediations:
- remediationTemplate: {apiVersion: a.example.com/v1, kind: ATemplate, namespace: ns, name: a}
  order: 1
  timeout: 59900ms`,
		"timeout must be at least 60s"},
	{"an escalation timeout that is no duration",
		twoEscalations + `
escalatingRemediations:
- remediationTemplate: {apiVersion: a.example.com/v1, kind: ATemplate, namespace: ns, name: a}
  order: 1
  timeout: 5 minutes`,
		"timeout must be a duration such as 300s, 5m or 1h30m"},
	{"a negative escalation timeout",
		twoEscalations + `
escalatingRemediations:
- remediationTemplate: {apiVersion: a.example.com/v1, kind: ATemplate, namespace: ns, name: a}
  order: 1
  timeout: -5m`,
		"timeout must be a duration such as 300s, 5m or 1h30m"},
	{"a template without apiVersion", `remediationTemplate: {apiVersion: null}`, "remediationTemplate.apiVersion is required"},
	{"a template kind without the Template suffix", `remediationTemplate: {kind: SelfNodeRemediation}`, "remediationTemplate.kind must be set and end with Template"},
	{"a template kind that is only the suffix", `remediationTemplate: {kind: Template}`, "remediationTemplate.kind must be set and end with Template"},
	{"a template without kind", `remediationTemplate: {kind: null}`, "remediationTemplate.kind must be set and end with Template"},
	{"a template without name", `remediationTemplate: {name: null}`, "remediationTemplate.name is required"},
	{"an escalating template without name",
		twoEscalations + `
escalatingRemediations:
- remediationTemplate: {apiVersion: a.example.com/v1, kind: ATemplate, namespace: ns}
  order: 1
  timeout: 5m`,
		"remediationTemplate.name is required"},
	{"an escalating template kind without the Template suffix",
		twoEscalations + `
escalatingRemediations:
- remediationTemplate: {apiVersion: a.example.com/v1, kind: A, namespace: ns, name: a}
  order: 1
  timeout: 5m`,
		"remediationTemplate.kind must be set and end with Template"},
	{"a negative condition duration",
		`unhealthyConditions: [{type: Ready, status: "False", duration: -5m}]`,
		"duration must be a duration of 0 or more such as 300s, 5m or 1h30m"},
	{"a condition duration without unit",
		`unhealthyConditions: [{type: Ready, status: "False", duration: "300"}]`,
		"duration must be a duration of 0 or more such as 300s, 5m or 1h30m"},
	{"an empty unhealthyConditions list",
		`unhealthyConditions: []`,
		"unhealthyConditions must have at least one entry; remove the field to use the defaults"},
	{"a condition without type",
		`unhealthyConditions: [{type: "", status: "False", duration: 5m}]`,
		"spec.unhealthyConditions[0].type: Invalid value"},
	{"a duplicate condition",
		`unhealthyConditions: [{type: Ready, status: "False", duration: 5m}, {type: Ready, status: "False", duration: 1m}]`,
		"Duplicate value"},
	{"a healthyDelay that is no duration", `healthyDelay: soon`, "healthyDelay must be a duration such as 0s, 5m or -1s"},
	{"a negative stormCooldownDuration", `stormCooldownDuration: -1m`, "stormCooldownDuration must be a duration of 0 or more"},
	{"a negative stormRecoveryThreshold", `stormRecoveryThreshold: -1`, "stormRecoveryThreshold must be from 0 to 1000000"},

	// Values that match a pattern but that the controller's Go types
	// cannot decode (one such object would stop every NodeHealthCheck
	// of an older controller), and values past documented bounds.
	{"a condition duration that overflows", `unhealthyConditions: [{type: Ready, status: "False", duration: 9999999h}]`,
		"duration must be a duration of 0 or more such as 300s, 5m or 1h30m, with at most 5 digits in each number"},
	{"a sum of durations that overflows", `unhealthyConditions: [{type: Ready, status: "False", duration: 2000000h2000000h}]`,
		"with at most 5 digits in each number"},
	{"30 digits of seconds", `unhealthyConditions: [{type: Ready, status: "False", duration: 999999999999999999999999999999s}]`,
		"with at most 5 digits in each number"},
	{"a condition duration just above a year", `unhealthyConditions: [{type: Ready, status: "False", duration: 8760h1s}]`,
		"duration must be at most 8760h (a year)"},
	{"an exponent", `unhealthyConditions: [{type: Ready, status: "False", duration: 1e3h}]`, "with at most 5 digits in each number"},
	{"a cooldown that overflows", `stormCooldownDuration: 2562048h`, "stormCooldownDuration must be a duration of 0 or more"},
	{"a cooldown above a year", `stormCooldownDuration: 8761h`, "stormCooldownDuration must be at most 8760h (a year)"},
	{"a healthyDelay that overflows", `healthyDelay: -9999999h`, "healthyDelay must be a duration such as 0s, 5m or -1s"},
	{"a healthyDelay below minus a year", `healthyDelay: -8761h`, "healthyDelay must be from -8760h to 8760h (a year)"},
	{"a healthyDelay above a year", `healthyDelay: 8761h`, "healthyDelay must be from -8760h to 8760h (a year)"},
	{"an escalation timeout that overflows", twoEscalations + `
escalatingRemediations:
- remediationTemplate: {apiVersion: a.example.com/v1, kind: ATemplate, namespace: ns, name: a}
  order: 1
  timeout: 9999999h`, "timeout must be a duration such as 300s, 5m or 1h30m, with at most 5 digits in each number"},
	{"an escalation timeout above a year", twoEscalations + `
escalatingRemediations:
- remediationTemplate: {apiVersion: a.example.com/v1, kind: ATemplate, namespace: ns, name: a}
  order: 1
  timeout: 8761h`, "timeout must be at most 8760h (a year)"},
	{"an order above int32", twoEscalations + `
escalatingRemediations:
- remediationTemplate: {apiVersion: a.example.com/v1, kind: ATemplate, namespace: ns, name: a}
  order: 2147483648
  timeout: 5m`, "should be less than or equal to 1000000"},
	{"an order below the bound", twoEscalations + `
escalatingRemediations:
- remediationTemplate: {apiVersion: a.example.com/v1, kind: ATemplate, namespace: ns, name: a}
  order: -1000001
  timeout: 5m`, "should be greater than or equal to -1000000"},
	{"a stormRecoveryThreshold above int32", `stormRecoveryThreshold: 2147483648`, "stormRecoveryThreshold must be from 0 to 1000000"},
	{"a stormRecoveryThreshold above the bound", `stormRecoveryThreshold: 1000001`, "stormRecoveryThreshold must be from 0 to 1000000"},
	{"a minHealthy above int32", `minHealthy: 2147483648`, "minHealthy must be an integer from 0 to 1000000"},
	{"a minHealthy string above the bound", `minHealthy: "1000001"`, "minHealthy must be an integer from 0 to 1000000"},
	{"a minHealthy string of 8 digits", `minHealthy: "10000000"`, "minHealthy must be an integer from 0 to 1000000"},
	{"a maxUnhealthy above int32", `{minHealthy: null, maxUnhealthy: 2147483648}`, "maxUnhealthy must be an integer from 0 to 1000000"},
	{"a long pause request", fmt.Sprintf(`pauseRequests: [%q]`, strings.Repeat("p", 257)), "pauseRequests[0]: Too long"},
	{"too many pause requests", `pauseRequests: [` + strings.Repeat(`"p", `, 64) + `"p"]`, "must have at most 64 items"},
	{"a long template name", fmt.Sprintf(`remediationTemplate: {name: %q}`, strings.Repeat("n", 254)), "remediationTemplate fields are too long"},
	{"a long template kind", fmt.Sprintf(`remediationTemplate: {kind: %q}`, strings.Repeat("K", 60)+"Template"), "remediationTemplate fields are too long"},
	{"too many matchLabels", `selector: {matchLabels: {` + manyLabels(65) + `}}`, "selector matchLabels may have at most 64 entries"},
}

func TestInvalidNodeHealthChecksAreRejected(t *testing.T) {
	for _, tc := range invalidSpecs {
		t.Run(tc.name, func(t *testing.T) {
			_, err := createNHC(t, tc.specPatch)
			require.Error(t, err, "the API server accepted an invalid NodeHealthCheck")
			assert.True(t, apierrors.IsInvalid(err), "want an Invalid error, got %v", err)
			assert.Contains(t, err.Error(), tc.message)
		})
	}
}

// manyLabels is n matchLabels entries in YAML flow style.
func manyLabels(n int) string {
	labels := make([]string, n)
	for i := range labels {
		labels[i] = fmt.Sprintf("label-%d: x", i)
	}
	return strings.Join(labels, ", ")
}

func TestNodeHealthCheckWithoutSpecIsRejected(t *testing.T) {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "remediation.medik8s.io/v1alpha1",
		"kind":       "NodeHealthCheck",
		"metadata":   map[string]any{"name": "no-spec"},
	}}
	_, err := dynamicClient.Resource(nhcResource).Create(context.Background(), obj, metav1.CreateOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "spec: Required value")
}

func TestValidNodeHealthChecksAreAccepted(t *testing.T) {
	cases := []struct {
		name      string
		specPatch string
	}{
		{"the base object", `null`},
		{"minHealthy as an integer", `minHealthy: 3`},
		{"minHealthy as a string integer", `minHealthy: "3"`},
		{"minHealthy 0", `minHealthy: 0`},
		{"minHealthy 0%", `minHealthy: "0%"`},
		{"minHealthy 100%", `minHealthy: "100%"`},
		{"maxUnhealthy as a percentage", `{minHealthy: null, maxUnhealthy: "49%"}`},
		{"maxUnhealthy above any node count", `{minHealthy: null, maxUnhealthy: 1000}`},
		{"maxUnhealthy with a remediator that keeps nodes", `{minHealthy: null, maxUnhealthy: 1}`},
		{"an escalation", twoEscalations},
		{"an escalation timeout of exactly 60s", twoEscalations + `
escalatingRemediations:
- remediationTemplate: {apiVersion: a.example.com/v1, kind: ATemplate, namespace: ns, name: a}
  order: 1
  timeout: 60s`},
		{"an escalation timeout of 1.5m", twoEscalations + `
escalatingRemediations:
- remediationTemplate: {apiVersion: a.example.com/v1, kind: ATemplate, namespace: ns, name: a}
  order: -3
  timeout: 1.5m`},
		{"two templates of one kind in an escalation", twoEscalations + `
escalatingRemediations:
- remediationTemplate: {apiVersion: a.example.com/v1, kind: ATemplate, namespace: ns, name: a}
  order: 1
  timeout: 5m
- remediationTemplate: {apiVersion: a.example.com/v1, kind: ATemplate, namespace: ns, name: b}
  order: 2
  timeout: 5m`},
		{"a cluster-scoped template without namespace", `remediationTemplate: {namespace: null}`},
		{"matchLabels only", `selector: {matchExpressions: null, matchLabels: {node-role.kubernetes.io/worker: ""}}`},
		{"a negative healthyDelay", `healthyDelay: -1s`},
		{"a zero healthyDelay", `healthyDelay: "0"`},
		{"a positive healthyDelay", `healthyDelay: 1h30m`},
		{"a custom condition type", `unhealthyConditions: [{type: KernelDeadlock, status: "True", duration: 0s}, {type: Ready, status: "False", duration: 90s}]`},
		{"storm recovery", `{stormRecoveryThreshold: 0}`},
		{"storm recovery with a cooldown", `{stormRecoveryThreshold: 5, stormCooldownDuration: 30s}`},
		{"pause requests", `pauseRequests: ["cluster upgrade by @admin"]`},
		// The largest values the bounds allow.
		{"durations of a year", `{healthyDelay: 8760h, stormCooldownDuration: 8760h, unhealthyConditions: [{type: Ready, status: "False", duration: 8760h}]}`},
		{"a healthyDelay of minus a year", `healthyDelay: -8760h`},
		{"a duration of four groups", `unhealthyConditions: [{type: Ready, status: "False", duration: 1h2m3s4ms}]`},
		{"an escalation timeout of a year", twoEscalations + `
escalatingRemediations:
- remediationTemplate: {apiVersion: a.example.com/v1, kind: ATemplate, namespace: ns, name: a}
  order: 1000000
  timeout: 8760h
- remediationTemplate: {apiVersion: b.example.com/v1, kind: BTemplate, namespace: ns, name: b}
  order: -1000000
  timeout: 99999s`},
		{"the largest numbers", `{minHealthy: 1000000, stormRecoveryThreshold: 1000000}`},
		{"the largest string number", `minHealthy: "1000000"`},
		{"64 pause requests of 256 characters", `pauseRequests: [` + strings.TrimSuffix(strings.Repeat(fmt.Sprintf("%q, ", strings.Repeat("p", 256)), 64), ", ") + `]`},
		{"64 matchLabels", `selector: {matchLabels: {` + manyLabels(64) + `}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := createNHC(t, tc.specPatch)
			require.NoError(t, err)
		})
	}
}
