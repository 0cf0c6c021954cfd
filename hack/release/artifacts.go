package main

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/layout"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// installYAML renders the default install with its image set, into one
// file, with kustomize's Go API: what kubectl kustomize runs, without a
// kubectl to build.
func installYAML(image, out string) error {
	work, err := os.MkdirTemp("", "nhc-release-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	if err := os.CopyFS(filepath.Join(work, "manifests"), os.DirFS("manifests")); err != nil {
		return err
	}
	path := filepath.Join(work, "manifests", "kustomization.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var k map[string]any
	if err := yaml.Unmarshal(data, &k); err != nil {
		return err
	}
	pinned := map[string]string{"name": "nhc-controller"}
	reference, digest, _ := strings.Cut(image, "@")
	colon := strings.LastIndex(reference, ":")
	pinned["newName"], pinned["newTag"] = reference[:colon], reference[colon+1:]
	if digest != "" {
		pinned["digest"] = digest
	}
	k["images"] = []map[string]string{pinned}
	if data, err = yaml.Marshal(k); err != nil {
		return err
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return err
	}
	// Legacy order, as kubectl kustomize writes it: namespaces and CRDs
	// before what lives in them, so that kubectl apply -f takes the file in
	// one go.
	options := krusty.MakeDefaultOptions()
	options.Reorder = krusty.ReorderOptionLegacy
	resources, err := krusty.MakeKustomizer(options).Run(filesys.MakeFsOnDisk(), filepath.Join(work, "manifests"))
	if err != nil {
		return fmt.Errorf("rendering the manifests: %w", err)
	}
	rendered, err := resources.AsYaml()
	if err != nil {
		return fmt.Errorf("rendering the manifests: %w", err)
	}
	header := "# nhc-controller " + pinned["newTag"] + ": the default install in one file.\n#   kubectl apply -f nhc-controller.yaml\n"
	return os.WriteFile(out, append([]byte(header), rendered...), 0o644)
}

// pluginArchive builds kubectl-nhc for a platform into a .tar.gz with its
// completion helper and the licence.
func pluginArchive(ctx context.Context, out io.Writer, version string, platform [2]string, archive string) error {
	work, err := os.MkdirTemp("", "nhc-plugin-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	completion, err := os.ReadFile("plugin/kubectl_complete-nhc")
	if err != nil {
		return err
	}
	license, err := os.ReadFile("LICENSE")
	if err != nil {
		return err
	}
	binary := filepath.Join(work, pluginBinary(platform[0]))
	env := append(os.Environ(), "CGO_ENABLED=0", "GOOS="+platform[0], "GOARCH="+platform[1])
	if err := command(ctx, out, env, "go", "build", "-trimpath", "-buildvcs=false", "-ldflags", "-s -w -buildid= -X github.com/nodehealthcheck/nhc-controller/pkg/version.stamped="+version, "-o", binary, "./cmd/kubectl-nhc"); err != nil {
		return err
	}
	data, err := os.ReadFile(binary)
	if err != nil {
		return err
	}
	return writeArchive(archive, pluginFiles(platform[0], data, completion, license))
}

// pluginFiles are the files of kubectl-nhc's archive for an OS: the
// completion helper is a shell script, which Windows has no use for.
func pluginFiles(goos string, binary, completion, license []byte) []archived {
	files := []archived{{pluginBinary(goos), 0o755, binary}}
	if goos != "windows" {
		files = append(files, archived{"kubectl_complete-nhc", 0o755, completion})
	}
	return append(files, archived{"LICENSE", 0o644, license})
}

// archived is a file to archive.
type archived struct {
	name string
	mode int64
	data []byte
}

// writeArchive writes files into a .tar.gz whose bytes depend on nothing
// but their contents.
func writeArchive(path string, entries []archived) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	// After an error; the last Close's error is returned.
	defer func() { _ = f.Close() }()
	gz := gzip.NewWriter(f)
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		if err := tw.WriteHeader(&tar.Header{Name: e.name, Mode: e.mode, Size: int64(len(e.data)), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		if _, err := tw.Write(e.data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := gz.Close(); err != nil {
		return err
	}
	return f.Close()
}

// krewManifest writes the krew plugin manifest of the archives.
func krewManifest(version string, archives map[[2]string]string, out string) error {
	type platform struct {
		Selector struct {
			MatchLabels map[string]string `json:"matchLabels"`
		} `json:"selector"`
		URI    string              `json:"uri"`
		Sha256 string              `json:"sha256"`
		Bin    string              `json:"bin"`
		Files  []map[string]string `json:"files"`
	}
	var platforms []platform
	for _, p := range pluginPlatforms {
		name := archives[p]
		sum, err := sha256File(filepath.Join(filepath.Dir(out), name))
		if err != nil {
			return err
		}
		var entry platform
		entry.Selector.MatchLabels = map[string]string{"os": p[0], "arch": p[1]}
		entry.URI = "https://github.com/nodehealthcheck/nhc-controller/releases/download/" + version + "/" + name
		entry.Sha256, entry.Bin = sum, pluginBinary(p[0])
		for _, f := range pluginFiles(p[0], nil, nil, nil) {
			entry.Files = append(entry.Files, map[string]string{"from": f.name, "to": "."})
		}
		platforms = append(platforms, entry)
	}
	manifest := map[string]any{
		"apiVersion": "krew.googlecontainertools.github.com/v1alpha2",
		"kind":       "Plugin",
		"metadata":   map[string]string{"name": "nhc"},
		"spec": map[string]any{
			"version":          version,
			"homepage":         "https://github.com/nodehealthcheck/nhc-controller",
			"shortDescription": "See what nhc-controller does with your nodes, and why",
			"description":      "kubectl nhc shows NodeHealthChecks, their remediation history, why a node is or is not remediated, and what a NodeHealthCheck would do before you apply it. It only reads the cluster.",
			"platforms":        platforms,
			// krew puts one file of a plugin on the PATH, its bin, and
			// kubectl looks for the completion helper there alone; no
			// manifest field adds a second. A copy, not a link into the
			// store: the helper only calls kubectl-nhc, so it outlives
			// krew upgrade, which deletes the old version's store.
			"caveats": "Shell completion (kubectl nhc <TAB>) needs kubectl_complete-nhc on your PATH, where krew puts only kubectl-nhc. Copy it there once; it keeps working across upgrades:\n  cp \"${KREW_ROOT:-$HOME/.krew}/store/nhc/" + version + "/kubectl_complete-nhc\" \"${KREW_ROOT:-$HOME/.krew}/bin/\"\nkubectl krew uninstall nhc leaves it: remove it then.\n",
		},
	}
	data, err := yaml.Marshal(manifest)
	if err != nil {
		return err
	}
	return os.WriteFile(out, data, 0o644)
}

// checksums writes SHA256SUMS of the release's files, as sha256sum -c reads it.
func checksums(output string) error {
	names, err := files(output)
	if err != nil {
		return err
	}
	var lines strings.Builder
	for _, name := range names {
		sum, err := sha256File(filepath.Join(output, name))
		if err != nil {
			return err
		}
		fmt.Fprintf(&lines, "%s  %s\n", sum, name)
	}
	return os.WriteFile(filepath.Join(output, "SHA256SUMS"), []byte(lines.String()), 0o644)
}

func sha256File(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	// Read to its end: closing it can lose nothing.
	defer func() { _ = f.Close() }()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// ociArchive tars an OCI layout folder, as an oci-archive.
func ociArchive(dir, out string) error {
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	// After an error; the last Close's error is returned.
	defer func() { _ = f.Close() }()
	tw := tar.NewWriter(f)
	err = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		if d.IsDir() {
			return tw.WriteHeader(&tar.Header{Name: rel + "/", Mode: 0o755, ModTime: time.Unix(0, 0), Typeflag: tar.TypeDir})
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Name: rel, Mode: 0o644, Size: int64(len(data)), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err = tw.Write(data)
		return err
	})
	if err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return f.Close()
}

// indexDigest is the digest of the image index an OCI layout names.
func indexDigest(dir string) (string, error) {
	index, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return "", err
	}
	manifest, err := index.IndexManifest()
	if err != nil {
		return "", err
	}
	if len(manifest.Manifests) != 1 {
		return "", fmt.Errorf("%s lists %d entries, not the one index", dir, len(manifest.Manifests))
	}
	return manifest.Manifests[0].Digest.String(), nil
}
