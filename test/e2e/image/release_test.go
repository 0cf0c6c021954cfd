package image

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/nodehealthcheck/nhc-controller/test/controlplane"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

// TestMakeRelease: make release VERSION=v0.3.0 PUSH=1, to a registry, on
// a clean copy of the tree tagged v0.3.0, writes what a release publishes,
// each file with its checksum: an install file whose image is the
// version's, pinned to the digest the registry serves, and which a real
// API server accepts; the Helm chart, its version the release's and its
// image the same; the images of both architectures tagged with the
// version, their controller built with go.mod's toolchain; kubectl-nhc for
// five platforms and the krew manifest that names their checksums; the
// SBOM, whose every licence its module's files hold; and the release
// notes. Changed or untagged, the copy is refused in seconds.
func TestMakeRelease(t *testing.T) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Skip("needs kubectl from KUBEBUILDER_ASSETS (make test sets it)")
	}
	helm, err := controlplane.Helm()
	require.NoError(t, err)
	const version = "v0.3.0"
	root := taggedCopy(t, version)
	registry := httptest.NewServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	defer registry.Close()
	repository := strings.TrimPrefix(registry.URL, "http://") + "/nhc-controller"
	build := exec.Command("make", "release", "VERSION="+version, "IMAGE_REPO="+repository, "PUSH=1", "HELM="+helm)
	build.Dir = root
	output, err := build.CombinedOutput()
	require.NoError(t, err, "%s", output)
	assert.Contains(t, string(output), "release: [12/12] ", "progress, task by task")
	dir := filepath.Join(root, "_output/release")

	listed := releaseChecksums(t, dir, version)
	checkReleaseImages(t, dir, repository, version)
	images := checkPinnedInstallImage(t, dir, repository, version)
	checkReleaseChart(t, dir, version, images)
	checkPluginArchives(t, dir, version)
	checkShippedToolchain(t, dir, version)
	env, err := framework.StartEnv()
	require.NoError(t, err)
	defer env.Stop()
	out, err := env.Cluster.Kubectl("apply", "-f", filepath.Join(dir, "nhc-controller.yaml"))
	require.NoError(t, err, "the API server accepts the install file: %s", out)
	out, err = env.Cluster.Kubectl("apply", "-f", filepath.Join(dir, "nhc-controller.crds.yaml"))
	require.NoError(t, err, "the API server accepts the CRD alone: %s", out)
	uninstallKeepsTheLeaseNamespace(t, env, filepath.Join(dir, "nhc-controller.yaml"))

	checkKrewManifest(t, dir, version, listed)
	checkSBOM(t, root, dir, version)

	notes, err := os.ReadFile(filepath.Join(dir, "release-notes.md"))
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(notes), "## "+version+"\n"))
	checkRefusals(t, root)
}

// releaseChecksums checks SHA256SUMS: it lists every file a release
// publishes, each with its checksum. It returns the checksums by file name.
func releaseChecksums(t *testing.T, dir, version string) map[string]string {
	sums, err := os.ReadFile(filepath.Join(dir, "SHA256SUMS"))
	require.NoError(t, err)
	listed := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(sums)), "\n") {
		sum, name, ok := strings.Cut(line, "  ")
		require.True(t, ok, line)
		listed[name] = sum
		assert.Equal(t, sum, sha256Of(t, filepath.Join(dir, name)), name)
	}
	for _, name := range []string{"nhc-controller.yaml", "nhc-controller.crds.yaml", "nhc-controller.sbom.cdx.json", "image-digest", "release-notes.md", "nhc-controller-0.3.0.tgz", "nhc.yaml", "nhc-controller-" + version + "-oci.tar",
		"nhc-controller-linux-amd64.tar", "nhc-controller-linux-arm64.tar",
		"kubectl-nhc_" + version + "_linux_amd64.tar.gz", "kubectl-nhc_" + version + "_linux_arm64.tar.gz",
		"kubectl-nhc_" + version + "_darwin_amd64.tar.gz", "kubectl-nhc_" + version + "_darwin_arm64.tar.gz",
		"kubectl-nhc_" + version + "_windows_amd64.tar.gz"} {
		assert.Contains(t, listed, name)
	}
	return listed
}

// checkReleaseImages checks that the image tarballs of both architectures
// are tagged with the version.
func checkReleaseImages(t *testing.T, dir, repository, version string) {
	for _, arch := range []string{"amd64", "arm64"} {
		manifest, err := tarball.LoadManifest(func() (io.ReadCloser, error) {
			return os.Open(filepath.Join(dir, "nhc-controller-linux-"+arch+".tar"))
		})
		require.NoError(t, err)
		assert.Equal(t, []string{repository + ":" + version}, manifest[0].RepoTags, arch)
	}
}

// checkPinnedInstallImage checks that the registry has the version's index
// of two platforms, that image-digest names it, and that the install file's
// one image is the repository's, pinned to the index's digest, and pulls
// back. It returns the install file's images.
func checkPinnedInstallImage(t *testing.T, dir, repository, version string) []string {
	pushed, err := remote.Index(mustTag(t, repository+":"+version))
	require.NoError(t, err, "the index is in the registry")
	digest, err := pushed.Digest()
	require.NoError(t, err)
	platforms, err := pushed.IndexManifest()
	require.NoError(t, err)
	require.Len(t, platforms.Manifests, 2, "amd64 and arm64")
	install, err := os.ReadFile(filepath.Join(dir, "nhc-controller.yaml"))
	require.NoError(t, err)
	images := deploymentImages(t, install)
	require.Len(t, images, 1)
	assert.True(t, strings.HasPrefix(images[0], repository), images[0])
	assert.True(t, strings.HasSuffix(images[0], "@"+digest.String()), "pinned to the digest the registry serves: %s", images[0])
	recorded, err := os.ReadFile(filepath.Join(dir, "image-digest"))
	require.NoError(t, err)
	assert.Equal(t, digest.String()+"\n", string(recorded), "image-digest, which the release workflow signs, is the digest the registry serves")
	pinned, err := name.ParseReference(images[0])
	require.NoError(t, err)
	pulled, err := remote.Get(pinned)
	require.NoError(t, err, "the install file's image reference pulls back from the registry")
	assert.Equal(t, digest, pulled.Digest)
	return images
}

// checkReleaseChart checks the Helm chart: it deploys the install file's
// images, its version is the release's, it carries the licence, and its
// alerts link to the release's runbooks.
func checkReleaseChart(t *testing.T, dir, version string, images []string) {
	helm, err := controlplane.Helm()
	require.NoError(t, err)
	chart, err := exec.Command(helm, "template", "nhc", filepath.Join(dir, "nhc-controller-0.3.0.tgz"), "--namespace", "nhc-system").Output()
	require.NoError(t, err)
	assert.Equal(t, images, deploymentImages(t, chart), "the chart deploys the install file's image")
	chartYAML, err := exec.Command(helm, "show", "chart", filepath.Join(dir, "nhc-controller-0.3.0.tgz")).Output()
	require.NoError(t, err)
	assert.Contains(t, string(chartYAML), "\nversion: 0.3.0\n")
	assert.Contains(t, string(chartYAML), "\nappVersion: v0.3.0\n")
	assert.Equal(t, repoLicense(t), archivedFile(t, filepath.Join(dir, "nhc-controller-0.3.0.tgz"), "nhc-controller/LICENSE"), "the chart carries the licence")
	rules, err := exec.Command(helm, "template", "nhc", filepath.Join(dir, "nhc-controller-0.3.0.tgz"), "--namespace", "nhc-system", "--set", "metrics.prometheusRule.enabled=true").Output()
	require.NoError(t, err)
	assert.Contains(t, string(rules), "/blob/"+version+"/docs/runbooks.md#", "the alerts link to the release's runbooks")
	assert.NotContains(t, string(rules), "/blob/main/", "not main's")
}

// checkPluginArchives checks kubectl-nhc's archives: the Windows one has an
// .exe, and each carries the licence.
func checkPluginArchives(t *testing.T, dir, version string) {
	assert.NotEmpty(t, archivedFile(t, filepath.Join(dir, "kubectl-nhc_"+version+"_windows_amd64.tar.gz"), "kubectl-nhc.exe"), "the Windows plugin is an .exe")
	for _, platform := range []string{"linux_amd64", "linux_arm64", "darwin_amd64", "darwin_arm64", "windows_amd64"} {
		assert.Equal(t, repoLicense(t), archivedFile(t, filepath.Join(dir, "kubectl-nhc_"+version+"_"+platform+".tar.gz"), "LICENSE"), "the plugin carries the licence")
	}
}

// checkKrewManifest checks the krew manifest: the version's, with how to
// put the completion helper on the PATH, and five platforms, each with the
// checksum SHA256SUMS lists for its archive.
func checkKrewManifest(t *testing.T, dir, version string, listed map[string]string) {
	var krew struct {
		Spec struct {
			Version   string `json:"version"`
			Caveats   string `json:"caveats"`
			Platforms []struct {
				URI    string `json:"uri"`
				Sha256 string `json:"sha256"`
			} `json:"platforms"`
		} `json:"spec"`
	}
	data, err := os.ReadFile(filepath.Join(dir, "nhc.yaml"))
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(data, &krew))
	assert.Equal(t, version, krew.Spec.Version)
	assert.Contains(t, krew.Spec.Caveats, "store/nhc/"+version+"/kubectl_complete-nhc", "how to put the completion helper on the PATH")
	require.Len(t, krew.Spec.Platforms, 5)
	for _, p := range krew.Spec.Platforms {
		assert.Equal(t, listed[filepath.Base(p.URI)], p.Sha256, p.URI)
	}
}

// repoLicense is the project's licence.
func repoLicense(t *testing.T) string {
	data, err := os.ReadFile(filepath.Join(controlplane.RepoRoot(), "LICENSE"))
	require.NoError(t, err)
	require.Contains(t, string(data), "Apache License")
	return string(data)
}

// archivedFile is a file's content in a .tar.gz, empty if it has none.
func archivedFile(t *testing.T, archive, name string) string {
	f, err := os.Open(archive)
	require.NoError(t, err)
	defer f.Close()
	gz, err := gzip.NewReader(f)
	require.NoError(t, err)
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return ""
		}
		require.NoError(t, err)
		if h.Name == name {
			data, err := io.ReadAll(tr)
			require.NoError(t, err)
			return string(data)
		}
	}
}

func mustTag(t *testing.T, ref string) name.Tag {
	tag, err := name.NewTag(ref)
	require.NoError(t, err)
	return tag
}

func sha256Of(t *testing.T, path string) string {
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// deploymentImages are the container images of the Deployments in a
// multi-document YAML.
func deploymentImages(t *testing.T, data []byte) []string {
	decoder := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var images []string
	for {
		doc, err := decoder.Read()
		if err == io.EOF {
			return images
		}
		require.NoError(t, err)
		var deployment appsv1.Deployment
		require.NoError(t, yaml.Unmarshal(doc, &deployment))
		if deployment.Kind != "Deployment" {
			continue
		}
		for _, c := range deployment.Spec.Template.Spec.Containers {
			images = append(images, c.Image)
		}
	}
}
