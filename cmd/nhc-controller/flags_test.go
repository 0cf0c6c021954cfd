package main

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	logsapi "k8s.io/component-base/logs/api/v1"
)

// documentedFlag is a flag in the first column of docs/operating.md's flag
// table: `--name`, or `-v`.
var documentedFlag = regexp.MustCompile("`(--?[a-z][a-z0-9-]*)`")

// TestEveryFlagIsDocumented: every flag the binary registers has a row in
// docs/operating.md's table, and every flag named there exists.
func TestEveryFlagIsDocumented(t *testing.T) {
	data, err := os.ReadFile("../../docs/operating.md")
	require.NoError(t, err)
	_, table, found := strings.Cut(string(data), "\n## Flags\n")
	require.True(t, found, "docs/operating.md has a ## Flags section")
	table, _, _ = strings.Cut(table, "\n## ")
	documented := map[string]bool{}
	for _, line := range strings.Split(table, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 3 || !strings.HasPrefix(line, "| `") {
			continue
		}
		for _, m := range documentedFlag.FindAllStringSubmatch(cells[1], -1) {
			documented[m[1]] = true
		}
	}

	fs, _ := flagSet(defaultOptions(), logsapi.NewLoggingConfiguration())
	exists := map[string]bool{}
	fs.VisitAll(func(f *pflag.Flag) {
		exists["--"+f.Name] = true
		if f.Shorthand != "" {
			exists["-"+f.Shorthand] = true
		}
		assert.True(t, documented["--"+f.Name] || f.Shorthand != "" && documented["-"+f.Shorthand],
			"--%s is registered but not in docs/operating.md's flag table", f.Name)
	})
	for name := range documented {
		assert.True(t, exists[name], "docs/operating.md documents %s, which the binary does not have", name)
	}
}
