package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// The image lines of the chart's values.yaml that a release pins; the rest
// of the file, comments included, stays as written.
var (
	repositoryValue = regexp.MustCompile(`(?m)^  repository: .*$`)
	digestValue     = regexp.MustCompile(`(?m)^  digest: .*$`)
)

// runbookOnMain is where the alerts' runbook_url points in the tree.
const runbookOnMain = "/blob/main/docs/runbooks.md"

// pinRunbooks points the alerts' runbook URLs at the release's tag (a
// snapshot's commit), so an alert links to the runbook of the version that
// raised it, not main's.
func pinRunbooks(rules, ref string) error {
	data, err := os.ReadFile(rules)
	if err != nil {
		return err
	}
	if !strings.Contains(string(data), runbookOnMain) {
		return fmt.Errorf("%s has no runbook_url on main to pin", rules)
	}
	pinned := strings.ReplaceAll(string(data), runbookOnMain, "/blob/"+ref+"/docs/runbooks.md")
	return os.WriteFile(rules, []byte(pinned), 0o644)
}

// chartPackage packages charts/nhc-controller as nhc-controller-X.Y.Z.tgz:
// its version is the release's (without the v), its appVersion (the image's
// default tag) the release's, its image the release's repository, and
// digest, and its alerts' runbooks the release's (ref: its tag or commit).
func chartPackage(ctx context.Context, out io.Writer, helm, version, ref, image, output string, at time.Time) error {
	work, err := os.MkdirTemp("", "nhc-release-chart-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	chart := filepath.Join(work, "nhc-controller")
	if err := os.CopyFS(chart, os.DirFS("charts/nhc-controller")); err != nil {
		return err
	}
	values := filepath.Join(chart, "values.yaml")
	data, err := os.ReadFile(values)
	if err != nil {
		return err
	}
	reference, digest, _ := strings.Cut(image, "@")
	repository := reference[:strings.LastIndex(reference, ":")]
	if repositoryValue.FindIndex(data) == nil || digestValue.FindIndex(data) == nil {
		return fmt.Errorf("%s has no image repository or digest to pin", values)
	}
	data = repositoryValue.ReplaceAll(data, []byte("  repository: "+repository))
	if digest != "" {
		data = digestValue.ReplaceAll(data, []byte("  digest: "+digest))
	}
	if err := os.WriteFile(values, data, 0o644); err != nil {
		return err
	}
	if err := pinRunbooks(filepath.Join(chart, "files", "prometheus-rule.yaml"), ref); err != nil {
		return err
	}
	if err := command(ctx, out, nil, helm, "package", chart, "--version", strings.TrimPrefix(version, "v"), "--app-version", version, "--destination", output); err != nil {
		return err
	}
	return stampArchive(filepath.Join(output, "nhc-controller-"+strings.TrimPrefix(version, "v")+".tgz"), at)
}

// stampArchive rewrites a .tgz with every time the commit's: helm package
// stamps the moment it ran, and the same commit must give the same bytes.
func stampArchive(path string, at time.Time) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return err
	}
	var out bytes.Buffer
	zw, err := gzip.NewWriterLevel(&out, gzip.BestCompression)
	if err != nil {
		return err
	}
	zw.Header = gzip.Header{Name: zr.Name, Comment: zr.Comment, Extra: zr.Extra, OS: zr.OS}
	tr, tw := tar.NewReader(zr), tar.NewWriter(zw)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		h.ModTime, h.AccessTime, h.ChangeTime = at, time.Time{}, time.Time{}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := io.Copy(tw, tr); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return os.WriteFile(path, out.Bytes(), 0o644)
}
