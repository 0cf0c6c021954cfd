package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A build is kept while the tree's content is the same: any change to a
// file, tracked or not, makes a new key; an ignored file does not.
func TestTheReuseKeyIsTheTreesContent(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	git := func(args ...string) {
		out, err := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...).CombinedOutput()
		require.NoError(t, err, string(out))
	}
	write := func(name, content string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
	git("init", "-q")
	write(".gitignore", "_output/\n")
	write("main.go", "package main\n")
	git("add", "-A")
	git("commit", "-q", "-m", "first")
	o := options{only: installTask, repository: defaultRepository}
	key := func() string {
		k, err := treeKey(o, "v0.0.0-snapshot")
		require.NoError(t, err)
		return k
	}
	first := key()
	assert.Equal(t, first, key(), "the same tree, the same key")

	require.NoError(t, os.MkdirAll(filepath.Join(dir, "_output"), 0o755))
	write("_output/built", "anything")
	assert.Equal(t, first, key(), "an ignored file changes nothing")

	write("main.go", "package main\n\nfunc main() {}\n")
	changed := key()
	assert.NotEqual(t, first, changed, "a tracked file changed")
	write("new.go", "package main\n")
	untracked := key()
	assert.NotEqual(t, changed, untracked, "an untracked file")

	o.only = ""
	assert.NotEqual(t, untracked, key(), "other options")
}
