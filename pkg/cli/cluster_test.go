package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
)

var remediationGVR = schema.GroupVersionResource{Group: "test.medik8s.io", Version: "v1alpha1", Resource: "testremediations"}

// kubectl nhc reads remediation resources in every namespace, as the
// controller's informers do: a control-plane remediation outside the
// template's namespace holds the other control-plane nodes, and a
// NodeHealthCheck's own resource there is its.
func TestRemediationResourcesAreReadInEveryNamespace(t *testing.T) {
	c := fixtureCluster()
	ctx := context.Background()
	elsewhere := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": remediationGVK.GroupVersion().String(), "kind": remediationGVK.Kind,
		"metadata": map[string]any{
			"name": "cp-1", "namespace": "elsewhere", "uid": "uid-cp-1",
			"labels":          map[string]any{v1alpha1.ControlPlaneNodeLabel: ""},
			"annotations":     map[string]any{v1alpha1.NodeNameAnnotation: "cp-1", v1alpha1.TemplateNameAnnotation: "reboot"},
			"ownerReferences": []any{map[string]any{"apiVersion": v1alpha1.SchemeGroupVersion.String(), "kind": "NodeHealthCheck", "name": "workers", "uid": "uid-workers"}},
		},
	}}
	_, err := c.dynamic.Resource(remediationGVR).Namespace("elsewhere").Create(ctx, elsewhere, metav1.CreateOptions{})
	require.NoError(t, err)
	nhcs, err := c.nodeHealthChecks(ctx, "workers")
	require.NoError(t, err)
	nodes, err := c.nodes(ctx)
	require.NoError(t, err)

	in, err := c.input(ctx, &nhcs[0], nodes, now)
	require.NoError(t, err)
	assert.Equal(t, map[string]bool{"cp-1": true}, in.BusyControlPlaneNodes)
	assert.Len(t, in.Remediations["cp-1"], 1, "its own resource in another namespace")
	assert.Len(t, in.Remediations["worker-1"], 1)
}

// kubectl nhc picks the owner of a shared node as the controller does: an
// older NodeHealthCheck that is paused leaves it to one that can act.
func TestClaimsSayWhetherAPeerCanAct(t *testing.T) {
	c := fixtureCluster()
	ctx := context.Background()
	older, err := c.nhcs.RemediationV1alpha1().NodeHealthChecks().Get(ctx, "workers", metav1.GetOptions{})
	require.NoError(t, err)
	older.Name, older.UID, older.ResourceVersion = "older", "uid-older", ""
	older.CreationTimestamp = metav1.NewTime(now.Add(-72 * time.Hour))
	older.Status = v1alpha1.NodeHealthCheckStatus{}
	older.Spec.PauseRequests = []string{"upgrade"}
	_, err = c.nhcs.RemediationV1alpha1().NodeHealthChecks().Create(ctx, older, metav1.CreateOptions{})
	require.NoError(t, err)
	nhcs, err := c.nodeHealthChecks(ctx, "workers")
	require.NoError(t, err)
	nodes, err := c.nodes(ctx)
	require.NoError(t, err)

	in, err := c.input(ctx, &nhcs[0], nodes, now)
	require.NoError(t, err)
	require.Len(t, in.Claims["worker-3"], 1)
	assert.Equal(t, "paused", in.Claims["worker-3"][0].CannotAct)
	by, self := in.RemediatorOf("worker-3")
	assert.True(t, self, "the paused older one leaves the node to this one, not %s", by.Name)

	var out, errOut bytes.Buffer
	o := &Options{IOStreams: genericiooptions.IOStreams{Out: &out, ErrOut: &errOut}, configFlags: genericclioptions.NewConfigFlags(true), now: func() time.Time { return now }}
	o.connect = func() (*cluster, error) { return c, nil }
	cmd := newCommand(o)
	cmd.SetArgs([]string{"why", "worker-3"})
	require.NoError(t, cmd.Execute(), errOut.String())
	assert.True(t, strings.HasPrefix(out.String(), "WARNING: node worker-3 is selected by 2 NodeHealthChecks (older, workers): "+
		"only workers remediates it, which can act, where the older older cannot (paused); the others leave it alone."), out.String())
}
