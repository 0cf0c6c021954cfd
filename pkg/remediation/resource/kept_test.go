package resource

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
)

// wellKnownFile holds the names the controller and remediators share on
// the wire: every annotation and label key, condition type and value.
const wellKnownFile = "../../apis/remediation/v1alpha1/well_known.go"

var wireNamesOnce = sync.OnceValues(func() ([]string, error) {
	file, err := parser.ParseFile(token.NewFileSet(), wellKnownFile, nil, 0)
	if err != nil {
		return nil, err
	}
	var names []string
	ast.Inspect(file, func(n ast.Node) bool {
		if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			if name, err := strconv.Unquote(lit.Value); err == nil {
				names = append(names, name)
			}
		}
		return true
	})
	return names, nil
})

// wireNames are the well-known names, read from their file rather than
// listed here: a reader that reads a new one draws it below, and fails when
// Keep drops it.
func wireNames(t testing.TB) (keys, words []string) {
	names, err := wireNamesOnce()
	require.NoError(t, err)
	for _, name := range names {
		if strings.Contains(name, "/") {
			keys = append(keys, name)
		} else {
			words = append(words, name)
		}
	}
	require.NotEmpty(t, keys)
	return append(keys, "example.com/note", "kubectl.kubernetes.io/last-applied-configuration"), append(words, "Other", "Ready")
}

// drawn is an object as anyone may store it in a remediation or template
// kind: a resource of ours or of someone else, a template, with the wire's
// annotations, labels and conditions at any value.
func drawn(t testing.TB, rng *rand.Rand) *unstructured.Unstructured {
	keys, words := wireNames(t)
	pick := func(s []string) string { return s[rng.IntN(len(s))] }
	value := func() string {
		switch rng.IntN(8) {
		case 0:
			return fmt.Sprintf("worker-%d", rng.IntN(3))
		case 1:
			return time.Date(2026, 3, 20, 15, rng.IntN(60), rng.IntN(60), 0, time.UTC).Format(time.RFC3339)
		case 2:
			return "yesterday"
		case 3:
			return ""
		case 4:
			return strings.Repeat("v", maxKeptValue+1+rng.IntN(100))
		default:
			return pick(words)
		}
	}
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetAPIVersion("test.medik8s.io/v1alpha1")
	u.SetKind(pick([]string{"TestRemediation", "TestRemediationTemplate"}))
	u.SetNamespace("remediators")
	u.SetName(fmt.Sprintf("worker-%d-%d", rng.IntN(3), rng.IntN(100)))
	u.SetUID(types.UID("uid-" + strconv.Itoa(rng.IntN(100))))
	u.SetResourceVersion(strconv.Itoa(rng.IntN(1000)))
	u.SetGeneration(rng.Int64N(5))
	u.SetCreationTimestamp(metav1.NewTime(time.Date(2026, 3, 20, 15, 0, rng.IntN(60), 0, time.UTC)))
	if rng.IntN(3) == 0 {
		deleted := metav1.NewTime(time.Date(2026, 3, 20, 16, 0, 0, 0, time.UTC))
		u.SetDeletionTimestamp(&deleted)
		u.SetFinalizers([]string{"remediator.example.com/fence"})
	}
	annotations, labels := map[string]string{}, map[string]string{}
	for _, key := range keys {
		if rng.IntN(2) == 0 {
			annotations[key] = value()
		}
		if rng.IntN(4) == 0 {
			labels[key] = pick([]string{"", "true", "x"})
		}
	}
	u.SetAnnotations(annotations)
	u.SetLabels(labels)
	var owners []metav1.OwnerReference
	for range rng.IntN(4) {
		owners = append(owners, metav1.OwnerReference{
			APIVersion: pick([]string{v1alpha1.SchemeGroupVersion.String(), "remediation.medik8s.io/v1", "apps/v1"}),
			Kind:       pick([]string{"NodeHealthCheck", "Deployment"}),
			Name:       pick([]string{"workers", "control-plane"}), UID: types.UID("nhc-" + strconv.Itoa(rng.IntN(3))),
		})
	}
	u.SetOwnerReferences(owners)
	var conditions []any
	for range rng.IntN(5) {
		conditions = append(conditions, map[string]any{
			"type": pick(words), "status": pick([]string{"True", "False", "Unknown", ""}),
			"reason": "Drawn", "message": strings.Repeat("m", rng.IntN(200)),
		})
	}
	u.Object["status"] = map[string]any{"conditions": conditions, "phase": pick(words)}
	switch rng.IntN(4) {
	case 0:
		u.Object["spec"] = map[string]any{"fill": value()}
	case 1:
		u.Object["spec"] = map[string]any{"template": map[string]any{"spec": "not an object"}}
	default:
		u.Object["spec"] = map[string]any{"template": map[string]any{
			"metadata": map[string]any{"labels": map[string]any{"team": "infra"}},
			"spec":     map[string]any{"strategy": pick(words), "fill": strings.Repeat("x", rng.IntN(2*MaxTemplateBytes))},
		}, "other": value()}
	}
	return u
}

// read is everything this package's readers read of an object.
type read struct {
	TargetNode                     string
	Owners                         []Owner
	OwnerUIDs                      any
	OwnerNames                     []string
	ControlPlane, Ours, Multiple   bool
	Summary                        health.Remediation
	Reference                      corev1.ObjectReference
	TemplateSpec                   map[string]any
	TemplateSpecErr, TemplateState string
}

func readAll(u *unstructured.Unstructured, template bool) read {
	r := read{
		TargetNode: TargetNode(u), Owners: Owners(u), OwnerUIDs: OwnerUIDs(u), OwnerNames: OwnerNames(u),
		ControlPlane: ForControlPlaneNode(u), Ours: Ours(u), Multiple: SupportsMultipleTemplates(u),
		Summary: normalizeTimes(Summarize(u)), Reference: Reference(u),
	}
	if template {
		spec, err := TemplateSpec(u)
		r.TemplateSpec = spec
		if err != nil {
			r.TemplateSpecErr = err.Error()
		}
	}
	return r
}

// withoutLongValues is an object without the annotation values too long to
// be any of ours, which Keep drops on purpose.
func withoutLongValues(u *unstructured.Unstructured) *unstructured.Unstructured {
	u = u.DeepCopy()
	annotations := u.GetAnnotations()
	for key, value := range annotations {
		if len(value) > maxKeptValue {
			delete(annotations, key)
		}
	}
	u.SetAnnotations(annotations)
	return u
}

// checkKeep checks that what is kept of an object reads as the object.
func checkKeep(t *testing.T, u *unstructured.Unstructured) {
	want := withoutLongValues(u)
	for _, named := range []bool{false, true} {
		kept := Keep(u, named)
		state, size := KeptTemplate(kept)
		_, hasTemplate, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "template")
		fits := encodedSize(u.Object["spec"].(map[string]any)["template"]) <= MaxTemplateBytes
		switch {
		case !hasTemplate:
			assert.Equal(t, TemplateKept, state, "no template, nothing dropped")
		case !named:
			assert.Equal(t, TemplateNotKept, state, "a template no one named is read with GET")
		case !fits:
			assert.Equal(t, TemplateTooLarge, state)
			assert.Greater(t, size, MaxTemplateBytes)
		default:
			require.Equal(t, TemplateKept, state)
			assert.Equal(t, u.Object["spec"].(map[string]any)["template"], kept.Object["spec"].(map[string]any)["template"],
				"a named template's spec.template is kept whole")
		}
		readsWhole := hasTemplate && named && fits
		if !assert.Equal(t, readAll(want, readsWhole), readAll(kept, readsWhole), "named %v", named) {
			t.Logf("drawn: %v", u.Object)
		}
		assert.Equal(t, kept, Keep(kept.DeepCopy(), named), "kept again, the same")
	}
	gvk := schema.GroupVersionKind{Group: "test.medik8s.io", Version: "v1alpha1", Kind: "TestRemediationTemplate"}
	metadata := KeepMetadata(u, gvk)
	state, _ := KeptTemplate(metadata)
	assert.Equal(t, TemplateNotKept, state, "a template kept as metadata is read with GET")
	assert.Equal(t, SupportsMultipleTemplates(want), SupportsMultipleTemplates(metadata))
	assert.Equal(t, gvk, metadata.GroupVersionKind())
}

// Every reader of this package reads the same of what Keep kept as of the
// object the API server has, for any object of the wire's names.
func TestWhatIsKeptReadsAsTheObject(t *testing.T) {
	for seed := range uint64(2000) {
		u := drawn(t, rand.New(rand.NewPCG(seed, 0)))
		if !t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) { checkKeep(t, u) }) {
			return
		}
	}
}

func FuzzKeep(f *testing.F) {
	f.Add(uint64(1), uint64(2))
	f.Fuzz(func(t *testing.T, a, b uint64) { checkKeep(t, drawn(t, rand.New(rand.NewPCG(a, b)))) })
}

// Keep keeps what the readers read and nothing else: whatever size an
// object has, what is kept of it is small but for the spec.template of a
// named template within the limit.
func TestWhatIsKeptIsSmall(t *testing.T) {
	for seed := range uint64(200) {
		u := drawn(t, rand.New(rand.NewPCG(seed, 0)))
		u.Object["spec"] = map[string]any{"fill": strings.Repeat("x", 1<<20)}
		u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "kubectl"}})
		assert.Less(t, encodedSize(Keep(u, true).Object), 4096)
	}
}
