// Command verify-house checks the house rules that docs/architecture.md and
// CONTRIBUTING.md state, so that the build keeps them rather than a
// reviewer: each package imports only from the rows below its own, the
// pure packages link no client-go, no function is longer than maxFuncLines
// and no file than maxFileLines (a test's, maxTestFileLines). Inside pkg/health and pkg/remediation it
// checks the files alike (files.go), where a file uses another when it
// names one of its declarations (a func, type, method, field, var or
// const): no file uses one of a tier above its own (fileTables, after the
// packages' diagrams), the Observer's files and the Writer's use nothing of
// each other, and no files use each other, even through others.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

const module = "github.com/nodehealthcheck/nhc-controller/"

const (
	// maxFuncLines is the longest function, its signature and braces
	// included, but in tests, whose stories may run longer.
	maxFuncLines = 80
	// maxFileLines is the longest production Go file, and
	// maxTestFileLines the longest test file.
	maxFileLines     = 400
	maxTestFileLines = 450
)

// rows are the packages, topmost first (docs/architecture.md's diagram):
// a package imports only from the rows below its own. A row names packages
// by path; one ending in "/..." names the packages under it too, which may
// import one another.
var rows = [][]string{
	{"cmd/nhc-controller", "cmd/kubectl-nhc"},
	{"pkg/election", "pkg/serving", "pkg/memlimit", "pkg/cli"},
	{"pkg/controller"},
	{"pkg/gather/listing"},
	{"pkg/remediation"},
	{"pkg/gather"},
	{"pkg/remediation/internal/inflight", "pkg/remediation/internal/kinds", "pkg/remediation/nodeleases", "pkg/remediation/templates", "pkg/nodecache"},
	{"pkg/remediation/internal/served", "pkg/remediation/internal/watcherrors", "pkg/remediation/resource"},
	{"pkg/health"},
	{"pkg/nodeview"},
	{"pkg/generated/..."},
	{"pkg/apis/...", "pkg/kubeclient", "pkg/version"},
}

// pure are the packages that decide: they link no client-go, so that they
// run in a test, the simulation and kubectl nhc alike.
var pure = []string{"pkg/health", "pkg/nodeview"}

// readOnce are the packages that read the cluster once and keep nothing
// running (kubectl nhc), and the packages of the controller's informers and
// writes that they do not link.
var (
	readOnce   = []string{"cmd/kubectl-nhc", "pkg/cli", "pkg/gather/listing"}
	longLiving = []string{"pkg/remediation", "pkg/remediation/internal/kinds", "pkg/remediation/internal/inflight", "pkg/nodecache", "pkg/controller"}
)

type listed struct {
	ImportPath, Dir string
	Imports, Deps   []string
	GoFiles         []string
	TestGoFiles     []string
	XTestGoFiles    []string
}

func main() {
	problems, err := check()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	for _, p := range problems {
		fmt.Fprintln(os.Stderr, p)
	}
	if len(problems) > 0 {
		os.Exit(1)
	}
	fmt.Println("The packages keep their rows and their files their tiers, with no cycle; the pure ones link no client-go, and no function or file is over its length.")
}

func check() ([]string, error) {
	packages, err := list("./...")
	if err != nil {
		return nil, err
	}
	var problems []string
	for _, p := range packages {
		path := strings.TrimPrefix(p.ImportPath, module)
		problems = append(problems, checkImports(path, p.Imports)...)
		for _, dep := range p.Deps {
			if isPure(path) && strings.HasPrefix(dep, "k8s.io/client-go/") {
				problems = append(problems, fmt.Sprintf("%s: links %s; a pure package decides without client-go", path, dep))
				break
			}
		}
		problems = append(problems, checkLinks(path, p.Deps)...)
		if strings.HasPrefix(path, "pkg/generated/") {
			continue
		}
		for i, files := range [][]string{p.GoFiles, p.TestGoFiles, p.XTestGoFiles} {
			for _, f := range files {
				found, err := checkFile(filepath.Join(p.Dir, f), i == 0)
				if err != nil {
					return nil, err
				}
				problems = append(problems, found...)
			}
		}
	}
	found, err := checkFiles(packages)
	if err != nil {
		return nil, err
	}
	return append(problems, found...), nil
}

// list lists the module's packages.
func list(pattern string) ([]listed, error) {
	out, err := exec.Command("go", "list", "-json", pattern).Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w", err)
	}
	var packages []listed
	for dec := json.NewDecoder(bytes.NewReader(out)); ; {
		var p listed
		if err := dec.Decode(&p); err == io.EOF {
			return packages, nil
		} else if err != nil {
			return nil, err
		}
		packages = append(packages, p)
	}
}

// rowOf is a package's row, and the pattern that placed it; -1 for a
// package of no row (the tests' and hack's, which may import anything).
func rowOf(path string) (int, string) {
	for i, row := range rows {
		for _, pattern := range row {
			if path == pattern || (strings.HasSuffix(pattern, "/...") && strings.HasPrefix(path+"/", strings.TrimSuffix(pattern, "..."))) {
				return i, pattern
			}
		}
	}
	return -1, ""
}

// checkImports says which of a package's imports are not below its row.
func checkImports(path string, imports []string) []string {
	row, pattern := rowOf(path)
	if row < 0 {
		if strings.HasPrefix(path, "pkg/") || strings.HasPrefix(path, "cmd/") {
			return []string{fmt.Sprintf("%s: in no row of hack/verify-house's rows; add it where docs/architecture.md puts it", path)}
		}
		return nil
	}
	var problems []string
	for _, imp := range imports {
		if !strings.HasPrefix(imp, module) {
			continue
		}
		imp = strings.TrimPrefix(imp, module)
		to, toPattern := rowOf(imp)
		switch {
		case to > row:
		case to == row && strings.HasSuffix(pattern, "/...") && toPattern == pattern:
		default:
			problems = append(problems, fmt.Sprintf("%s imports %s, which is not in a row below its own", path, imp))
		}
	}
	return problems
}

// checkLinks says which of the packages a read-once package links are the
// controller's long-living ones.
func checkLinks(path string, deps []string) []string {
	if !slices.Contains(readOnce, path) {
		return nil
	}
	var problems []string
	for _, dep := range deps {
		if dep := strings.TrimPrefix(dep, module); slices.Contains(longLiving, dep) {
			problems = append(problems, fmt.Sprintf("%s: links %s; kubectl nhc reads the cluster once, through no informer of the controller's", path, dep))
		}
	}
	return problems
}

func isPure(path string) bool {
	for _, p := range pure {
		if path == p {
			return true
		}
	}
	return false
}

// checkFile says whether a file is too long and, with funcs, which of its
// functions are.
func checkFile(name string, funcs bool) ([]string, error) {
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	rel, _ := filepath.Rel(mustGetwd(), name)
	var problems []string
	limit := maxFileLines
	if !funcs {
		limit = maxTestFileLines
	}
	if lines := fset.File(file.Pos()).LineCount(); lines > limit {
		problems = append(problems, fmt.Sprintf("%s: %d lines, over %d: split it by job", rel, lines, limit))
	}
	ast.Inspect(file, func(n ast.Node) bool {
		var body *ast.BlockStmt
		var what string
		switch fn := n.(type) {
		case *ast.FuncDecl:
			body, what = fn.Body, fn.Name.Name
		case *ast.FuncLit:
			body, what = fn.Body, "a function literal"
		default:
			return true
		}
		if body == nil || !funcs {
			return true
		}
		start, end := fset.Position(n.Pos()).Line, fset.Position(body.Rbrace).Line
		if lines := end - start + 1; lines > maxFuncLines {
			problems = append(problems, fmt.Sprintf("%s:%d: %s is %d lines, over %d", rel, start, what, lines, maxFuncLines))
		}
		return true
	})
	return problems, nil
}

func mustGetwd() string {
	wd, err := os.Getwd()
	if err != nil {
		return "."
	}
	return wd
}
