package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAnImportFromARowAboveIsAProblem(t *testing.T) {
	cases := []struct {
		name, from string
		imports    []string
		want       int
	}{
		{"down", "pkg/controller", []string{module + "pkg/health", "k8s.io/client-go/rest"}, 0},
		{"up", "pkg/health", []string{module + "pkg/remediation"}, 1},
		{"beside", "pkg/remediation/internal/kinds", []string{module + "pkg/remediation/nodeleases"}, 1},
		{"within a tree", "pkg/generated/listers/remediation/v1alpha1", []string{module + "pkg/generated/clientset/versioned"}, 0},
		{"a package of no row", "pkg/newcomer", nil, 1},
		{"a test's", "test/e2e", []string{module + "pkg/controller"}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Len(t, checkImports(tc.from, tc.imports), tc.want)
		})
	}
}

func TestKubectlNhcLinkingAnInformerIsAProblem(t *testing.T) {
	assert.Len(t, checkLinks("cmd/kubectl-nhc", []string{module + "pkg/gather", module + "pkg/remediation/templates", "k8s.io/client-go/dynamic"}), 0)
	assert.Len(t, checkLinks("pkg/cli", []string{module + "pkg/gather", module + "pkg/remediation/internal/kinds"}), 1)
	assert.Len(t, checkLinks("pkg/controller", []string{module + "pkg/remediation/internal/kinds"}), 0, "the controller runs informers")
}

func TestALongFunctionOrFileIsAProblem(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, funcLines, fileLines int) string {
		var b strings.Builder
		b.WriteString("package p\n\nfunc f() {\n")
		for range funcLines - 2 {
			b.WriteString("\t_ = 0\n")
		}
		b.WriteString("}\n")
		for range fileLines - funcLines - 2 {
			b.WriteString("// a line\n")
		}
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
		return path
	}
	problems, err := checkFile(write("short.go", maxFuncLines, maxFileLines), true)
	require.NoError(t, err)
	assert.Empty(t, problems)
	problems, err = checkFile(write("long.go", maxFuncLines+1, maxFileLines+1), true)
	require.NoError(t, err)
	assert.Len(t, problems, 2)
	problems, err = checkFile(write("long_test.go", maxFuncLines+1, maxFileLines), false)
	require.NoError(t, err)
	assert.Empty(t, problems, "a test's function may run longer")
}

// The tree keeps the rules.
func TestTheTreeKeepsTheHouseRules(t *testing.T) {
	if testing.Short() {
		t.Skip("lists every package")
	}
	t.Chdir("../..")
	problems, err := check()
	require.NoError(t, err)
	assert.Empty(t, problems)
}
