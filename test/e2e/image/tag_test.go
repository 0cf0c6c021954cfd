package image

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nodehealthcheck/nhc-controller/test/controlplane"
)

// TestMakeImageTagsTheImageTheManifestsDeploy: the README's path without a
// registry: make image, load _output/image/nhc-controller.tar into the
// nodes, kubectl apply -k manifests/. The image in the tarball must be the
// one the rendered manifests deploy, or the pod ends in ErrImagePull.
func TestMakeImageTagsTheImageTheManifestsDeploy(t *testing.T) {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		t.Skip("needs kubectl from KUBEBUILDER_ASSETS (make test sets it)")
	}
	root := controlplane.RepoRoot()
	build := exec.Command("make", "image")
	build.Dir = root
	output, err := build.CombinedOutput()
	require.NoError(t, err, "%s", output)
	manifest, err := tarball.LoadManifest(func() (io.ReadCloser, error) {
		return os.Open(filepath.Join(root, "_output/image/nhc-controller.tar"))
	})
	require.NoError(t, err)
	require.Len(t, manifest, 1)
	require.Len(t, manifest[0].RepoTags, 1)

	rendered, err := exec.Command(filepath.Join(assets, "kubectl"), "kustomize", filepath.Join(root, "manifests")).Output()
	require.NoError(t, err)
	images := deploymentImages(t, rendered)
	assert.Equal(t, normalized(manifest[0].RepoTags), normalized(images), "the image make image wrote is the one the manifests deploy")
}

// normalized spells image references as the tarball does: with registry
// and repository path.
func normalized(images []string) []string {
	out := make([]string, len(images))
	for i, image := range images {
		ref, err := name.ParseReference(image)
		if err != nil {
			out[i] = image
			continue
		}
		out[i] = ref.Name()
	}
	return out
}
