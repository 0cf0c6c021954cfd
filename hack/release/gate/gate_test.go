package gate

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// repo makes a git repository with one commit of a go.mod naming the
// toolchain, and changes into it.
func repo(t *testing.T, toolchain string) {
	dir := t.TempDir()
	t.Chdir(dir)
	gomod := "module example.com/m\n\ngo 1.21.0\n"
	if toolchain != "" {
		gomod += "\ntoolchain " + toolchain + "\n"
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644))
	for _, args := range [][]string{
		{"init", "-q"}, {"add", "go.mod"},
		{"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "one", "--date=2026-11-27T15:30:12Z"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Env = append(os.Environ(), "GIT_COMMITTER_DATE=2026-11-27T15:30:12Z")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
}

func gitIn(t *testing.T, args ...string) {
	out, err := exec.Command("git", args...).CombinedOutput()
	require.NoError(t, err, "%s", out)
}

func TestCheck(t *testing.T) {
	snapshot := regexp.MustCompile(`^v0\.0\.0-snapshot\.20261127153012\.g[0-9a-f]{12}$`)
	for _, tt := range []struct {
		name, toolchain, version string
		tag, dirty, untracked    bool
		want                     *regexp.Regexp
		refused                  string
	}{
		{name: "a clean tree at its tag", toolchain: "go1.21.0", version: "v1.2.3", tag: true, want: regexp.MustCompile(`^v1\.2\.3$`)},
		{name: "untagged", toolchain: "go1.21.0", version: "v1.2.3", refused: "is not tagged v1.2.3"},
		{name: "tagged but changed", toolchain: "go1.21.0", version: "v1.2.3", tag: true, dirty: true, refused: "the tree has changes git has not committed (go.mod)"},
		{name: "tagged with a new file", toolchain: "go1.21.0", version: "v1.2.3", tag: true, untracked: true, refused: "has not committed (new.go)"},
		{name: "not a version", toolchain: "go1.21.0", version: "v1.2", tag: true, refused: `version "v1.2" is not vMAJOR.MINOR.PATCH`},
		{name: "a snapshot of a clean tree", toolchain: "go1.21.0", version: Snapshot, want: snapshot},
		{name: "a snapshot of a changed tree", toolchain: "go1.21.0", version: Snapshot, dirty: true, want: regexp.MustCompile(snapshot.String()[:len(snapshot.String())-1] + `\.dirty$`)},
		{name: "a go older than the toolchain", toolchain: "go1.999.0", version: Snapshot, refused: "older than go.mod's toolchain go1.999.0"},
		{name: "no toolchain", version: Snapshot, refused: "go.mod names no toolchain"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			repo(t, tt.toolchain)
			if tt.tag {
				gitIn(t, "tag", "v1.2.3")
			}
			if tt.dirty {
				require.NoError(t, os.WriteFile("go.mod", []byte("module example.com/m\n\ngo 1.21.0\n\ntoolchain "+tt.toolchain+"\n// changed\n"), 0o644))
			}
			if tt.untracked {
				require.NoError(t, os.WriteFile("new.go", []byte("package m\n"), 0o644))
			}
			r, err := Check(tt.version)
			if tt.refused != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.refused)
				return
			}
			require.NoError(t, err)
			assert.Regexp(t, tt.want, r.Version)
			assert.Equal(t, tt.version == Snapshot, r.Snapshot)
			assert.Equal(t, time.Date(2026, 11, 27, 15, 30, 12, 0, time.UTC), r.Time)
			assert.Len(t, r.Commit, 40)
		})
	}
}
