package memlimit

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/klog/v2"
)

func TestContainerMemoryLimit(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		assert.NoError(t, os.WriteFile(path, []byte(content), 0o600))
		return path
	}
	cases := []struct {
		name  string
		files []string
		want  int64
		ok    bool
	}{
		{"cgroup v2 limit", []string{write("v2", "268435456\n")}, 268435456, true},
		{"cgroup v2 without limit", []string{write("max", "max\n")}, 0, false},
		{"cgroup v1 unlimited", []string{filepath.Join(dir, "missing"), write("v1", "9223372036854771712\n")}, 0, false},
		{"cgroup v1 limit", []string{filepath.Join(dir, "missing"), write("v1-limit", "536870912\n")}, 536870912, true},
		{"no cgroup", []string{filepath.Join(dir, "missing")}, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := containerMemoryLimit(tc.files)
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestGCPercentUnlessGOGCIsSet(t *testing.T) {
	previous := debug.SetGCPercent(100)
	defer debug.SetGCPercent(previous)
	t.Setenv(goGCEnv, "")
	Set(klog.Background())
	assert.Equal(t, gcPercent, debug.SetGCPercent(100))

	t.Setenv(goGCEnv, "200")
	Set(klog.Background())
	assert.Equal(t, 100, debug.SetGCPercent(100), "GOGC wins")
}
