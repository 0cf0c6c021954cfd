package changelog

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheck(t *testing.T) {
	for _, tt := range []struct {
		version string
		valid   bool
	}{
		{"v1.2.3", true},
		{"v1.2.3-rc.1", true},
		{"v1.2", false},
		{"1.2.3", false},
		{"v1.2.3+build", false},
		{"", false},
	} {
		err := Check(tt.version)
		assert.Equal(t, tt.valid, err == nil, "%q: %v", tt.version, err)
	}
}

func TestNotes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "CHANGELOG.md")
	require.NoError(t, os.WriteFile(path, []byte("# Changelog\n\n## Unreleased\n\n- next\n\n## v1.1.0\n\n- one\n- two\n\n## v1.0.0\n\n- first\n"), 0o644))

	notes, err := Notes(path, "v1.1.0")
	require.NoError(t, err)
	assert.Equal(t, "## v1.1.0\n\n- one\n- two\n", notes)

	_, err = Notes(path, "v9.9.9")
	assert.EqualError(t, err, path+` has no section "## v9.9.9": write the release's notes first`)
}
