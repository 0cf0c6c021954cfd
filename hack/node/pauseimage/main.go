// Command pauseimage builds the sandbox ("pause") image that containerd
// starts each pod with, from hack/node/pause, without a registry: a static
// binary on an empty base, written as a tarball that `ctr images import`
// reads. containerd pulls registry.k8s.io/pause otherwise, which a machine
// without that network cannot.
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func main() {
	output := flag.String("output", "_output/node/pause.tar", "the image tarball to write")
	tag := flag.String("tag", "nhc.local/pause:1", "the image's reference, containerd's sandbox_image")
	flag.Parse()
	if err := build(*output, *tag); err != nil {
		fmt.Fprintln(os.Stderr, "pauseimage:", err)
		os.Exit(1)
	}
}

func build(output, tag string) error {
	ref, err := name.NewTag(tag)
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "nhc-pause-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	binary := filepath.Join(work, "pause")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w -buildid=", "-o", binary, "./hack/node/pause")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building the pause binary: %w", err)
	}
	data, err := os.ReadFile(binary)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	w := tar.NewWriter(&buf)
	if err := w.WriteHeader(&tar.Header{Name: "pause", Mode: 0o755, Size: int64(len(data)), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	if _, err := w.Write(data); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil })
	if err != nil {
		return err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return err
	}
	// The sandbox runs as 65535, as registry.k8s.io/pause does: a pod of
	// the restricted profile never needs root in its sandbox.
	img, err = mutate.Config(img, v1.Config{Entrypoint: []string{"/pause"}, User: "65535:65535"})
	if err != nil {
		return err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(output), 0o755); err != nil {
		return err
	}
	return tarball.WriteToFile(output, ref, img)
}
