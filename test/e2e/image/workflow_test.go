package image

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nodehealthcheck/nhc-controller/test/controlplane"
)

// actionlint is the linter of GitHub workflows, run from the module proxy.
const actionlint = "github.com/rhysd/actionlint/cmd/actionlint@v1.7.12"

// The workflows pass actionlint (the one that tests, and the one that
// publishes a tag), and the release does what the README says a release
// is: make release, then the image pushed as built and the files as the
// release's assets with the changelog's notes. test/docs checks their
// pins, their permissions and the signing.
func TestTheReleaseWorkflowPassesActionlint(t *testing.T) {
	root := controlplane.RepoRoot()
	workflow := filepath.Join(".github", "workflows", "release.yaml")
	lint := exec.Command("go", "run", actionlint, "-shellcheck=", "-pyflakes=", filepath.Join(".github", "workflows", "ci.yaml"), workflow)
	lint.Dir = root
	out, err := lint.CombinedOutput()
	require.NoError(t, err, "actionlint: %s", out)

	data, err := os.ReadFile(filepath.Join(root, workflow))
	require.NoError(t, err)
	for _, want := range []string{`tags: ["v*.*.*"]`, `make release VERSION="${GITHUB_REF_NAME}"`, `crane" push _output/release/oci`, "gh release create", "--notes-file _output/release/release-notes.md", "packages: write", "environment: release"} {
		assert.Contains(t, string(data), want)
	}
}
