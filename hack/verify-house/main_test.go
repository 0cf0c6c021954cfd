package main

import (
	"go/importer"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"slices"
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
	problems, err = checkFile(write("long_test.go", maxFuncLines+1, maxTestFileLines), false)
	require.NoError(t, err)
	assert.Empty(t, problems, "a test's function and file may run longer")
	problems, err = checkFile(write("longer_test.go", maxFuncLines, maxTestFileLines+1), false)
	require.NoError(t, err)
	assert.Len(t, problems, 1)
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

func TestAFileNamingAFileAboveItOrAcrossRoomsIsAProblem(t *testing.T) {
	table := fileTable{
		tiers: [][]side{
			{{"top", []string{"top.go"}}},
			{{"left", []string{"left.go", "left2.go"}}, {"right", []string{"right.go"}}},
			{{"ground", []string{"ground.go", "types.go"}}},
		},
		apart: [][2]string{{"left", "right"}},
	}
	// Each file declares a function of its own name unless a case says
	// otherwise; "" leaves the file out.
	files := map[string]string{
		"top.go":    "package p\n\nfunc Top() {}\n",
		"left.go":   "package p\n\nfunc Left() {}\n",
		"left2.go":  "package p\n\nfunc Left2() {}\n",
		"right.go":  "package p\n\nfunc Right() {}\n",
		"ground.go": "package p\n\nfunc Ground() {}\n",
		"types.go":  "package p\n\ntype T struct{ f int }\n",
	}
	cases := []struct {
		name  string
		files map[string]string
		// want are the problems, each by words it holds.
		want []string
	}{
		{"down", map[string]string{
			"top.go":  "package p\n\nfunc Top() { Left(); Right(); Ground() }\n",
			"left.go": "package p\n\nfunc Left() { Ground(); _ = T{f: 1} }\n",
		}, nil},
		{"beside, on one side", map[string]string{
			"left.go": "package p\n\nfunc Left() { Left2() }\n",
		}, nil},
		{"up", map[string]string{
			"ground.go": "package p\n\nfunc Ground() { Left() }\n",
		}, []string{"p/ground.go names Left of left.go, a file of a tier above its own"}},
		{"a method, declared above its type", map[string]string{
			"types.go": "package p\n\ntype T struct{ f int }\n\nfunc Ground2() { T{}.M() }\n",
			"top.go":   "package p\n\nfunc Top() {}\n\nfunc (t T) M() { _ = t.f }\n",
		}, []string{"p/types.go names T.M of top.go, a file of a tier above its own", "a cycle: top.go names T of types.go, types.go names T.M of top.go"}},
		{"a cycle on one side", map[string]string{
			"left.go":  "package p\n\nfunc Left() { Left2() }\n",
			"left2.go": "package p\n\nfunc Left2() { Left() }\n",
		}, []string{"p: files that name each other, a cycle: left.go names Left2 of left2.go, left2.go names Left of left.go"}},
		{"across rooms", map[string]string{
			"left.go": "package p\n\nfunc Left() { Right() }\n",
		}, []string{"p/left.go (left) names Right of right.go (right), a side it must not see"}},
		{"a file of no tier", map[string]string{
			"newcomer.go": "package p\n\nconst Newcomer = 1\n",
		}, []string{"p/newcomer.go: in no tier"}},
		{"a file that declares nothing", map[string]string{
			"doc.go": "// Package p is a test's.\npackage p\n\nimport _ \"embed\"\n",
		}, nil},
		{"a listed file gone", map[string]string{"right.go": ""}, []string{"p/right.go: in hack/verify-house's fileTables, but the package has no such file"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			var names []string
			for name, src := range mergeMaps(files, tc.files) {
				if src != "" {
					names = append(names, name)
					require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644))
				}
			}
			slices.Sort(names)
			fset := token.NewFileSet()
			uses, declaring, err := fileUses(fset, importer.ForCompiler(fset, "source", nil), dir, names)
			require.NoError(t, err)
			problems := checkFileTable("p", table, declaring, uses)
			require.Len(t, problems, len(tc.want), "%q", problems)
			for i, want := range tc.want {
				assert.Contains(t, problems[i], want)
			}
		})
	}
}

func mergeMaps(a, b map[string]string) map[string]string {
	merged := maps.Clone(a)
	maps.Copy(merged, b)
	return merged
}

func TestACycleIsToldByItsShortestRound(t *testing.T) {
	uses := []use{
		{"a.go", "b.go", "B"}, {"b.go", "c.go", "C"}, {"c.go", "a.go", "A"},
		{"b.go", "a.go", "A2"}, {"c.go", "d.go", "D"}, {"e.go", "d.go", "D"},
	}
	found := cycles(uses)
	require.Len(t, found, 1, "a, b and c are one component; d and e are in none")
	assert.Equal(t, []use{{"a.go", "b.go", "B"}, {"b.go", "a.go", "A2"}}, found[0])
}

func TestTheRemediationRoomsAreApart(t *testing.T) {
	assert.True(t, fileTables["pkg/remediation"].isApart("the Writer", "the Observer"))
}
