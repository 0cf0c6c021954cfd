// Package image proves the container image, not just the binary: it builds
// the image as `make image` does, unpacks its filesystem, and runs its
// entrypoint as the image's user with only that filesystem against a real
// API server.
package image

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nodehealthcheck/nhc-controller/test/controlplane"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

func TestTheImageRemediatesAsItsNonrootUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("running the image's entrypoint in its own filesystem as uid 65532 needs root (chroot, setuid); run as root to prove the image")
	}
	out := t.TempDir()
	build := exec.Command("go", "run", "./hack/image", "--output", out, "--tag", "nhc-controller:test")
	build.Dir = controlplane.RepoRoot()
	output, err := build.CombinedOutput()
	require.NoError(t, err, "%s", output)

	index, err := layout.ImageIndexFromPath(filepath.Join(out, "oci"))
	require.NoError(t, err)
	manifest, err := index.IndexManifest()
	require.NoError(t, err)
	require.Len(t, manifest.Manifests, 1)
	img, err := index.Image(manifest.Manifests[0].Digest)
	require.NoError(t, err)
	config, err := img.ConfigFile()
	require.NoError(t, err)
	assert.Equal(t, "65532:65532", config.Config.User, "a nonroot user")
	assert.Equal(t, []string{"/nhc-controller"}, config.Config.Entrypoint)
	assert.Equal(t, "linux", config.OS)

	rootfs := filepath.Join(t.TempDir(), "rootfs")
	require.NoError(t, unpack(mutate.Extract(img), rootfs))
	entries, err := os.ReadDir(rootfs)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.Equal(t, []string{"etc", "home", "licenses", "nhc-controller", "tmp"}, names, "nothing but the binary, its licence and its user")
	license, err := os.ReadFile(filepath.Join(rootfs, "licenses", "LICENSE"))
	require.NoError(t, err)
	assert.Equal(t, repoLicense(t), string(license), "the image carries the licence")

	cluster, err := controlplane.Start("manifests/crd", "test/crds/remediators")
	require.NoError(t, err)
	defer func() { _ = cluster.Stop() }()
	env, err := framework.NewEnv(cluster)
	require.NoError(t, err)
	kubeconfig, err := os.ReadFile(cluster.Kubeconfig)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(rootfs, "tmp", "kubeconfig"), kubeconfig, 0o644))

	args := append([]string{config.Config.Entrypoint[0]}, "--kubeconfig=/tmp/kubeconfig", "--leader-elect=false",
		"--metrics-bind-address=0", "--health-probe-bind-address=0", "-v=2")
	var log strings.Builder
	controller := &exec.Cmd{
		// The path is the entrypoint inside the image: exec follows the chroot.
		Path: config.Config.Entrypoint[0], Args: args, Dir: "/", Env: config.Config.Env,
		Stdout: &log, Stderr: &log,
		SysProcAttr: &syscall.SysProcAttr{Chroot: rootfs, Credential: &syscall.Credential{Uid: 65532, Gid: 65532}},
	}
	require.NoError(t, controller.Start())
	defer func() {
		_ = controller.Process.Signal(syscall.SIGTERM)
		_ = controller.Wait()
		if t.Failed() {
			fmt.Fprintln(os.Stderr, log.String())
		}
	}()

	const scenario = "image"
	env.CreateTemplate(t, scenario, nil)
	nodes := env.CreateNodes(t, scenario, 3)
	env.CreateNHC(t, scenario, nil)
	env.Fail(t, time.Hour, nodes[0])
	framework.Eventually(t, 30*time.Second, "the image's controller to remediate", func() bool {
		return len(env.Remediations(t, scenario)[nodes[0]]) == 1
	})
}

// unpack writes a flattened image filesystem to a folder, keeping modes and
// owners.
func unpack(r io.ReadCloser, dir string) error {
	defer r.Close()
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		path := filepath.Join(dir, filepath.Clean("/"+h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(path, os.FileMode(h.Mode).Perm()); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(h.Mode).Perm())
			if err != nil {
				return err
			}
			if _, err := io.Copy(f, tr); err != nil {
				_ = f.Close()
				return err
			}
			if err := f.Close(); err != nil {
				return err
			}
		default:
			continue
		}
		// Modes with the sticky bit (/tmp) and owners as the image has them.
		if err := os.Chmod(path, os.FileMode(h.Mode&0o777)|modeBits(h.Mode)); err != nil {
			return err
		}
		if err := os.Lchown(path, h.Uid, h.Gid); err != nil {
			return err
		}
	}
}

func modeBits(mode int64) os.FileMode {
	var m os.FileMode
	if mode&0o1000 != 0 {
		m |= os.ModeSticky
	}
	return m
}
