package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	"sigs.k8s.io/yaml"
)

// execute runs kubectl nhc on the fixture cluster, or on none.
func execute(t *testing.T, c *cluster, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	o := &Options{IOStreams: genericiooptions.IOStreams{Out: &out, ErrOut: &errOut}, configFlags: configFlags(), now: func() time.Time { return now }}
	o.connect = o.cluster
	if c != nil {
		o.connect = func() (*cluster, error) { return c, nil }
	}
	cmd := newCommand(o)
	cmd.SetArgs(args)
	err = cmd.Execute()
	return out.String(), errOut.String(), err
}

// forbiddenRemediations is the fixture cluster where the remediation kind
// cannot be listed.
func forbiddenRemediations() *cluster {
	c := fixtureCluster()
	c.dynamic.(*dynamicfake.FakeDynamicClient).PrependReactor("list", "testremediations", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "test.medik8s.io", Resource: "testremediations"}, "", nil)
	})
	return c
}

// What kubectl nhc cannot read it says on standard error in every output
// format, in the report too where the report has fields, and then fails
// with ErrIncomplete (the plugin exits 3): a script never takes an
// incomplete verdict as whole.
func TestWarningsInEveryFormat(t *testing.T) {
	const warning = "Warning: cannot list testremediations in every namespace, so their remediations are not shown"
	for _, format := range []string{"", "wide", "json", "yaml", "name", "jsonpath={.summary}", "custom-columns=NAME:.name", "--no-headers"} {
		t.Run(format, func(t *testing.T) {
			args := []string{"status"}
			if strings.HasPrefix(format, "--") {
				args = append(args, format)
			} else if format != "" {
				args = append(args, "-o", format)
			}
			out, errOut, err := execute(t, forbiddenRemediations(), args...)
			require.ErrorIs(t, err, ErrIncomplete)
			assert.Contains(t, errOut, warning)
			assert.NotEmpty(t, out, "the report is printed all the same")
			var report StatusReport
			switch format {
			case "json":
				require.NoError(t, json.Unmarshal([]byte(out), &report))
			case "yaml":
				require.NoError(t, yaml.Unmarshal([]byte(out), &report))
			default:
				return
			}
			require.Len(t, report.Warnings, 1)
			assert.Contains(t, "Warning: "+report.Warnings[0], warning)
		})
	}
	_, errOut, err := execute(t, fixtureCluster(), "status", "-o", "json")
	assert.NoError(t, err, "whole: no error")
	assert.Empty(t, errOut)
}

// JSON and YAML say what they are, as kubectl's objects do.
func TestReportsHaveAPIVersionAndKind(t *testing.T) {
	whatIf := filepath.Join(t.TempDir(), "nhc.yaml")
	require.NoError(t, os.WriteFile(whatIf, []byte("apiVersion: remediation.medik8s.io/v1alpha1\nkind: NodeHealthCheck\nmetadata:\n  name: w\nspec:\n  selector: {}\n"), 0o600))
	for _, tt := range []struct {
		args []string
		kind string
	}{
		{[]string{"status"}, "StatusReport"},
		{[]string{"history"}, "HistoryReport"},
		{[]string{"why", "worker-1"}, "WhyReport"},
		{[]string{"what-if", "-f", whatIf}, "WhatIfReport"},
	} {
		for _, format := range []string{"json", "yaml"} {
			out, _, err := execute(t, fixtureCluster(), append(tt.args, "-o", format)...)
			require.NoError(t, err)
			var meta ReportMeta
			require.NoError(t, yaml.Unmarshal([]byte(out), &meta), out)
			assert.Equal(t, ReportMeta{APIVersion: ReportAPIVersion, Kind: tt.kind}, meta, "%v -o %s", tt.args, format)
		}
	}
}

func TestOutputFormatsAreCheckedFirst(t *testing.T) {
	for _, tt := range []struct {
		format, want string
	}{
		{"xml", `unknown output format "xml": use wide, json, yaml, name, jsonpath=TEMPLATE or custom-columns=SPEC`},
		{"jsonpath={.x", "error parsing jsonpath {.x"},
		{"custom-columns=", "custom-columns needs a spec"},
		{"custom-columns=NAME", `custom-columns: "NAME" is not HEADER:PATH`},
	} {
		_, _, err := execute(t, nil, "status", "-o", tt.format)
		require.Error(t, err, tt.format)
		assert.Contains(t, err.Error(), tt.want)
	}
}

// Without a kubeconfig that names a cluster, kubectl nhc says so, rather
// than client-go's refused localhost:8080.
func TestNoClusterConfigured(t *testing.T) {
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
	t.Setenv("HOME", t.TempDir())
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	_, _, err := execute(t, nil, "status")
	require.ErrorIs(t, err, errNoCluster)

	_, _, err = execute(t, nil, "status", "--server", "https://127.0.0.1:1", "--request-timeout", "1s")
	require.Error(t, err)
	assert.NotErrorIs(t, err, errNoCluster, "--server names one")
}

// -n is not a flag: nothing kubectl nhc reads is in one namespace.
func TestNamespaceIsNoFlag(t *testing.T) {
	_, _, err := execute(t, fixtureCluster(), "status", "-n", "default")
	assert.EqualError(t, err, "unknown shorthand flag: 'n' in -n")
}

// -o completes to the formats, --node to the cluster's nodes.
func TestCompletion(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{[]string{"__complete", "status", "-o", ""}, append(append([]string{}, outputFormats...), ":4")},
		{[]string{"__complete", "status", "-o", "j"}, []string{"json", "jsonpath=", "jsonpath-as-json=", "jsonpath-file=", ":4"}},
		{[]string{"__complete", "status", "-o", "custom"}, []string{"custom-columns=", ":6"}},
		{[]string{"__complete", "history", "--node", ""}, []string{"worker-1", "worker-2", "worker-3", ":4"}},
	} {
		out, _, err := execute(t, fixtureCluster(), tt.args...)
		require.NoError(t, err)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		assert.Equal(t, tt.want, lines, "%v", tt.args)
	}
}
