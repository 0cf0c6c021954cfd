package image

import (
	"archive/tar"
	"bytes"
	"debug/buildinfo"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/mod/modfile"

	"github.com/nodehealthcheck/nhc-controller/hack/release/license"
	"github.com/nodehealthcheck/nhc-controller/test/controlplane"
)

// gitIn runs git in a folder.
func gitIn(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=release test", "-c", "user.email=release@example.com"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %v: %s", args, out)
}

// taggedCopy copies the tree as it is (what git would commit, untracked
// files included) into a new repository, commits it and tags the commit:
// a clean checkout of a release's tag, of the code under test.
func taggedCopy(t *testing.T, version string) string {
	root := controlplane.RepoRoot()
	list := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	list.Dir = root
	out, err := list.Output()
	require.NoError(t, err)
	dir := t.TempDir()
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		info, err := os.Lstat(filepath.Join(root, name))
		if os.IsNotExist(err) {
			continue
		}
		require.NoError(t, err)
		if !info.Mode().IsRegular() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(root, name))
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), data, info.Mode().Perm()))
	}
	gitIn(t, dir, "init", "-q")
	gitIn(t, dir, "add", "-A")
	gitIn(t, dir, "commit", "-q", "-m", "release "+version)
	gitIn(t, dir, "tag", version)
	return dir
}

// checkRefusals: make release refuses, in seconds and before anything is
// built, a version that is not one, a commit not tagged with it, a tree
// with changes, and a version CHANGELOG.md has no notes for.
func checkRefusals(t *testing.T, root string) {
	for _, tt := range []struct {
		name, version, want string
		prepare, undo       func()
	}{
		{name: "not a version", version: "v0.1", want: `version "v0.1" is not vMAJOR.MINOR.PATCH`},
		{name: "untagged", version: "v0.2.0", want: "is not tagged v0.2.0: tag the release's commit"},
		{
			name: "changed", version: "v0.3.0", want: "the tree has changes git has not committed (README.md)",
			prepare: func() { require.NoError(t, os.WriteFile(filepath.Join(root, "README.md"), []byte("changed\n"), 0o644)) },
			undo:    func() { gitIn(t, root, "checkout", "--", "README.md") },
		},
		{
			name: "no notes", version: "v9.9.9", want: `CHANGELOG.md has no section "## v9.9.9"`,
			prepare: func() { gitIn(t, root, "tag", "v9.9.9") },
			undo:    func() { gitIn(t, root, "tag", "-d", "v9.9.9") },
		},
	} {
		t.Run("refuses "+tt.name, func(t *testing.T) {
			if tt.prepare != nil {
				tt.prepare()
				defer tt.undo()
			}
			refused := exec.Command("make", "release", "VERSION="+tt.version)
			refused.Dir = root
			start := time.Now()
			output, err := refused.CombinedOutput()
			took := time.Since(start)
			assert.Error(t, err)
			assert.Contains(t, string(output), tt.want)
			assert.NotContains(t, string(output), "hack/release ", "the release itself never ran")
			assert.Less(t, took, 30*time.Second, "refused within 30 s")
		})
	}
}

// toolchain is go.mod's toolchain line.
func toolchain(t *testing.T, root string) string {
	data, err := os.ReadFile(filepath.Join(root, "go.mod"))
	require.NoError(t, err)
	f, err := modfile.Parse("go.mod", data, nil)
	require.NoError(t, err)
	require.NotNil(t, f.Toolchain, "go.mod names the release's toolchain")
	return f.Toolchain.Name
}

// checkShippedToolchain: what go version -m reads of the shipped binaries,
// the controller in each image and kubectl-nhc, is go.mod's toolchain,
// statically linked, for the platform shipped.
func checkShippedToolchain(t *testing.T, dir, version string) {
	want := toolchain(t, filepath.Dir(filepath.Dir(dir)))
	for _, arch := range []string{"amd64", "arm64"} {
		img, err := tarball.ImageFromPath(filepath.Join(dir, "nhc-controller-linux-"+arch+".tar"), nil)
		require.NoError(t, err)
		layers, err := img.Layers()
		require.NoError(t, err)
		require.Len(t, layers, 1)
		rc, err := layers[0].Uncompressed()
		require.NoError(t, err)
		binary := fileInTar(t, rc, "nhc-controller")
		rc.Close()
		info, err := buildinfo.Read(bytes.NewReader(binary))
		require.NoError(t, err)
		assert.Equal(t, want, info.GoVersion, "the %s controller's Go", arch)
		settings := map[string]string{}
		for _, s := range info.Settings {
			settings[s.Key] = s.Value
		}
		assert.Equal(t, "0", settings["CGO_ENABLED"], arch)
		assert.Equal(t, arch, settings["GOARCH"])
	}
	plugin := archivedFile(t, filepath.Join(dir, "kubectl-nhc_"+version+"_linux_amd64.tar.gz"), "kubectl-nhc")
	info, err := buildinfo.Read(strings.NewReader(plugin))
	require.NoError(t, err)
	assert.Equal(t, want, info.GoVersion, "kubectl-nhc's Go")
}

// sbomComponent is what the release test reads of an SBOM's component.
type sbomComponent struct {
	Name     string `json:"name"`
	Version  string `json:"version"`
	PURL     string `json:"purl"`
	Licenses []struct {
		License struct {
			ID string `json:"id"`
		} `json:"license"`
		Expression string `json:"expression"`
	} `json:"licenses"`
	Properties []struct{ Name, Value string } `json:"properties"`
}

// checkSBOM checks the CycloneDX SBOM: it names the controller at the
// release's version with the shipped builds' settings, the standard
// library at go.mod's toolchain, and the modules it is built from, each
// with the licences its own licence files hold.
func checkSBOM(t *testing.T, root, dir, version string) {
	var bom struct {
		BOMFormat string `json:"bomFormat"`
		Metadata  struct {
			Component sbomComponent `json:"component"`
		} `json:"metadata"`
		Components []sbomComponent `json:"components"`
	}
	data, err := os.ReadFile(filepath.Join(dir, "nhc-controller.sbom.cdx.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &bom))
	assert.Equal(t, "CycloneDX", bom.BOMFormat)
	main := bom.Metadata.Component
	assert.Equal(t, "github.com/nodehealthcheck/nhc-controller", main.Name)
	assert.Equal(t, version, main.Version, "the controller at the release's version")
	assert.Contains(t, main.PURL, "@"+version, "its package URL too")
	require.NotEmpty(t, main.Licenses)
	assert.Equal(t, "Apache-2.0", main.Licenses[0].License.ID)
	var settings []string
	for _, p := range main.Properties {
		settings = append(settings, p.Name+"="+p.Value)
	}
	for _, want := range []string{"cdx:gomod:build:env:CGO_ENABLED=0", "cdx:gomod:build:env:GOOS=linux", "cdx:gomod:build:env:GOARCH=amd64", "cdx:gomod:build:env:GOARCH=arm64"} {
		assert.Contains(t, settings, want, "the shipped builds' settings")
	}

	modules := []string{"mod", "download", "-json"}
	std := false
	for _, c := range bom.Components {
		if c.Name == "stdlib" {
			std = true
			assert.Equal(t, toolchain(t, root), c.Version, "the standard library at the toolchain's version")
			continue
		}
		modules = append(modules, c.Name+"@"+c.Version)
	}
	assert.True(t, std, "the standard library is a component")
	assert.Greater(t, len(modules), 50, "the modules the controller is built from")
	download := exec.Command("go", modules...)
	download.Dir = root
	out, err := download.Output()
	require.NoError(t, err)
	dirs := map[string]string{}
	for dec := json.NewDecoder(bytes.NewReader(out)); ; {
		var m struct{ Path, Version, Dir string }
		err := dec.Decode(&m)
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		dirs[m.Path+"@"+m.Version] = m.Dir
	}
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	require.NoError(t, err)
	for _, c := range bom.Components {
		require.Len(t, c.Licenses, 1, c.Name)
		claim := c.Licenses[0].Expression
		if claim == "" {
			claim = c.Licenses[0].License.ID
		}
		moduleDir := dirs[c.Name+"@"+c.Version]
		if c.Name == "stdlib" {
			moduleDir = strings.TrimSpace(string(goroot))
		}
		assert.NoError(t, license.Verify(claim, moduleDir), "%s@%s's licence %s: its licence files say otherwise", c.Name, c.Version, claim)
	}
}

// fileInTar is a file's content in a tar stream.
func fileInTar(t *testing.T, r io.Reader, name string) []byte {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		require.NoError(t, err, "%s in the layer", name)
		if strings.TrimPrefix(h.Name, "/") == name {
			content, err := io.ReadAll(tr)
			require.NoError(t, err)
			return content
		}
	}
}
