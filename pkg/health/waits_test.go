package health

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every reason to wait declared (plan.go) has its one row in waits, which
// says it in words: a new gate cannot be left unsaid.
func TestEveryWaitReasonHasItsRow(t *testing.T) {
	file, err := parser.ParseFile(token.NewFileSet(), "plan.go", nil, 0)
	require.NoError(t, err)
	var declared []WaitReason
	ast.Inspect(file, func(n ast.Node) bool {
		spec, ok := n.(*ast.ValueSpec)
		if !ok {
			return true
		}
		if ident, typed := spec.Type.(*ast.Ident); typed && ident.Name == "WaitReason" {
			for i, name := range spec.Names {
				value, err := strconv.Unquote(spec.Values[i].(*ast.BasicLit).Value)
				require.NoError(t, err)
				if name.Name != "WaitNone" {
					declared = append(declared, WaitReason(value))
				}
			}
		}
		return true
	})
	require.NotEmpty(t, declared)
	rows := map[WaitReason]int{}
	for _, w := range waits {
		rows[w.reason]++
		assert.NotNil(t, w.because, w.reason)
	}
	for _, reason := range declared {
		assert.Equal(t, 1, rows[reason], "rows of %s", reason)
	}
	assert.Len(t, waits, len(declared), "a row of no declared reason")
}
