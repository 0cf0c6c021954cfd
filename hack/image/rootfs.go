package main

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// rootfsLayer is the image's only layer: the binary, its licence, the
// nonroot user and group for tools that look names up, and a /tmp. Entries
// are in a fixed order, owned by root, with the commit's time, so the
// layer's digest depends on the binary and the licence alone.
func rootfsLayer(binary, license string, modified time.Time) (v1.Layer, error) {
	bin, err := os.ReadFile(binary)
	if err != nil {
		return nil, err
	}
	licenseText, err := os.ReadFile(license)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	w := tar.NewWriter(&buf)
	entries := []struct {
		name    string
		mode    int64
		content []byte
		dir     bool
	}{
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/group", mode: 0o644, content: []byte("root:x:0:\nnonroot:x:65532:\n")},
		{name: "etc/passwd", mode: 0o644, content: []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")},
		{name: "home/", mode: 0o755, dir: true},
		{name: "home/nonroot/", mode: 0o700, dir: true},
		{name: "licenses/", mode: 0o755, dir: true},
		{name: "licenses/LICENSE", mode: 0o644, content: licenseText},
		{name: "nhc-controller", mode: 0o755, content: bin},
		{name: "tmp/", mode: 0o1777, dir: true},
	}
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, ModTime: modified, Format: tar.FormatPAX, Typeflag: tar.TypeReg, Size: int64(len(e.content))}
		if e.dir {
			h.Typeflag, h.Size = tar.TypeDir, 0
		}
		if e.name == "home/nonroot/" {
			h.Uid, h.Gid = nonroot, nonroot
		}
		if err := w.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := w.Write(e.content); err != nil {
			return nil, err
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
}
