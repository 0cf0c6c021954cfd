package main

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// A use is an edge of a package's file graph: file from names decl, a
// package-level declaration (a func, type, method, field, var or const)
// of file to.
type use struct {
	from, to, decl string
}

// exportImporter imports the packages that the given ones import from the
// compiler's export data, which go list -export compiles once and then
// finds in the build cache: no dependency is type-checked from its source.
func exportImporter(fset *token.FileSet, paths []string) (types.Importer, error) {
	args := append([]string{"list", "-export", "-deps", "-f", "{{.ImportPath}}\t{{.Export}}"}, paths...)
	out, err := exec.Command("go", args...).Output()
	if exit, ok := err.(*exec.ExitError); ok {
		return nil, fmt.Errorf("go list -export: %w: %s", err, exit.Stderr)
	} else if err != nil {
		return nil, fmt.Errorf("go list -export: %w", err)
	}
	exports := map[string]string{}
	for sc := bufio.NewScanner(bytes.NewReader(out)); sc.Scan(); {
		if path, file, ok := strings.Cut(sc.Text(), "\t"); ok && file != "" {
			exports[path] = file
		}
	}
	return importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		file, ok := exports[path]
		if !ok {
			return nil, fmt.Errorf("no export data of %s", path)
		}
		return os.Open(file)
	}), nil
}

// checkFiles places the files of each package of fileTables, and says
// which of their uses its table does not allow.
func checkFiles(packages []listed) ([]string, error) {
	var placed []listed
	var paths []string
	for _, p := range packages {
		if _, ok := fileTables[strings.TrimPrefix(p.ImportPath, module)]; ok {
			placed = append(placed, p)
			paths = append(paths, p.ImportPath)
		}
	}
	if len(placed) == 0 {
		return nil, nil
	}
	fset := token.NewFileSet()
	imp, err := exportImporter(fset, paths)
	if err != nil {
		return nil, err
	}
	var problems []string
	for _, p := range placed {
		uses, declaring, err := fileUses(fset, imp, p.Dir, p.GoFiles)
		if err != nil {
			return nil, err
		}
		path := strings.TrimPrefix(p.ImportPath, module)
		problems = append(problems, checkFileTable(path, fileTables[path], declaring, uses)...)
	}
	return problems, nil
}

// fileUses type-checks the files of one package in dir, named relative to
// it, and returns which of them names which other one's declarations, once
// a pair, in the order of the files and of their first use; and which of
// them declare anything.
func fileUses(fset *token.FileSet, imp types.Importer, dir string, files []string) ([]use, []string, error) {
	var parsed []*ast.File
	var declaring []string
	for _, name := range files {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, nil, err
		}
		parsed = append(parsed, f)
		if slices.ContainsFunc(f.Decls, declares) {
			declaring = append(declaring, name)
		}
	}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
	conf := types.Config{Importer: imp}
	pkg, err := conf.Check(dir, fset, parsed, info)
	if err != nil {
		return nil, nil, fmt.Errorf("type-checking %s: %w", dir, err)
	}
	var uses []use
	seen := map[[2]string]bool{}
	for i, f := range parsed {
		from := files[i]
		ast.Inspect(f, func(n ast.Node) bool {
			id, ok := n.(*ast.Ident)
			if !ok {
				return true
			}
			obj := info.Uses[id]
			if obj == nil || obj.Pkg() != pkg || !declared(obj) {
				return true
			}
			to := filepath.Base(fset.Position(obj.Pos()).Filename)
			if to == from || seen[[2]string{from, to}] {
				return true
			}
			seen[[2]string{from, to}] = true
			uses = append(uses, use{from, to, declName(obj)})
			return true
		})
	}
	return uses, declaring, nil
}

// declares tells whether a declaration of a file is more than its imports.
func declares(d ast.Decl) bool {
	g, ok := d.(*ast.GenDecl)
	return !ok || g.Tok != token.IMPORT
}

// declared tells whether an object is a package-level declaration, or a
// method or field of one.
func declared(obj types.Object) bool {
	switch o := obj.(type) {
	case *types.Func:
		return o.Signature().Recv() != nil || o.Parent() == o.Pkg().Scope()
	case *types.Var:
		return o.IsField() || o.Parent() == o.Pkg().Scope()
	case *types.TypeName, *types.Const:
		return obj.Parent() == obj.Pkg().Scope()
	}
	return false
}

// declName names a declaration as a reader looks for it: a method as
// Type.Method, a field as Type.field where its struct is a named type's.
func declName(obj types.Object) string {
	switch o := obj.(type) {
	case *types.Func:
		if recv := o.Signature().Recv(); recv != nil {
			return recvName(recv.Type()) + o.Name()
		}
	case *types.Var:
		if o.IsField() {
			return fieldOwner(o) + o.Name()
		}
	}
	return obj.Name()
}

// recvName is a receiver's type name and a dot, or nothing for an
// interface's method.
func recvName(t types.Type) string {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	if n, ok := t.(*types.Named); ok {
		return n.Obj().Name() + "."
	}
	return ""
}

// fieldOwner is the name of the named struct type that declares a field,
// and a dot, or nothing when none in its package's scope does.
func fieldOwner(field *types.Var) string {
	scope := field.Pkg().Scope()
	for _, name := range scope.Names() {
		tn, ok := scope.Lookup(name).(*types.TypeName)
		if !ok {
			continue
		}
		if s, ok := tn.Type().Underlying().(*types.Struct); ok {
			for f := range s.Fields() {
				if f == field.Origin() {
					return name + "."
				}
			}
		}
	}
	return ""
}
