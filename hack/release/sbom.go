package main

import (
	"archive/tar"
	"bytes"
	"debug/buildinfo"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/uuid"

	"github.com/nodehealthcheck/nhc-controller/hack/release/license"
)

// The SBOM is CycloneDX, written from the shipped binaries themselves:
// their build information names the modules, the Go and the build
// settings; each module's licence is identified from its own licence
// files, in full (licenses.go). Nothing in it depends on the machine or
// the moment: its timestamp is the commit's and its serial number is
// derived from its content, so that a second run writes the same bytes.

type bom struct {
	BOMFormat    string       `json:"bomFormat"`
	SpecVersion  string       `json:"specVersion"`
	SerialNumber string       `json:"serialNumber"`
	Version      int          `json:"version"`
	Metadata     bomMetadata  `json:"metadata"`
	Components   []component  `json:"components"`
	Dependencies []dependency `json:"dependencies"`
}

type bomMetadata struct {
	Timestamp  string              `json:"timestamp"`
	Lifecycles []map[string]string `json:"lifecycles"`
	Tools      struct {
		Components []component `json:"components"`
	} `json:"tools"`
	Component component `json:"component"`
}

type component struct {
	BOMRef     string          `json:"bom-ref,omitempty"`
	Type       string          `json:"type"`
	Group      string          `json:"group,omitempty"`
	Name       string          `json:"name"`
	Version    string          `json:"version"`
	Scope      string          `json:"scope,omitempty"`
	Hashes     []hash          `json:"hashes,omitempty"`
	Licenses   []licenseChoice `json:"licenses,omitempty"`
	PURL       string          `json:"purl,omitempty"`
	CPE        string          `json:"cpe,omitempty"`
	Properties []property      `json:"properties,omitempty"`
}

type hash struct {
	Alg     string `json:"alg"`
	Content string `json:"content"`
}

// licenseChoice is one licence by its SPDX identifier, or an expression
// of several, which CycloneDX wants alone.
type licenseChoice struct {
	License         *spdxLicense `json:"license,omitempty"`
	Expression      string       `json:"expression,omitempty"`
	Acknowledgement string       `json:"acknowledgement,omitempty"`
}

type spdxLicense struct {
	ID              string `json:"id"`
	Acknowledgement string `json:"acknowledgement,omitempty"`
}

type property struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type dependency struct {
	Ref       string   `json:"ref"`
	DependsOn []string `json:"dependsOn"`
}

// sbomInput is what the SBOM is written from.
type sbomInput struct {
	version, commit string
	time            time.Time
	// binaries are the shipped controller's build information, one per
	// platform.
	binaries []*buildinfo.BuildInfo
	// moduleDir finds a module's files, the standard library's as "std".
	moduleDir func(path, version string) (string, error)
	// mainDir is the controller's own source.
	mainDir string
}

// licenseChoices states the licences of the files in a module's folder:
// what its authors declared, as its files say it in full.
func licenseChoices(dir string) ([]licenseChoice, error) {
	ids, _, err := license.Module(dir)
	if err != nil {
		return nil, err
	}
	if strings.Contains(ids, " AND ") {
		return []licenseChoice{{Expression: ids, Acknowledgement: "declared"}}, nil
	}
	return []licenseChoice{{License: &spdxLicense{ID: ids, Acknowledgement: "declared"}}}, nil
}

// h1ToSHA256 turns a go.sum hash (h1:, base64 of a SHA-256) into hex.
func h1ToSHA256(sum string) []hash {
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(sum, "h1:"))
	if !strings.HasPrefix(sum, "h1:") || err != nil || len(raw) != 32 {
		return nil
	}
	return []hash{{Alg: "SHA-256", Content: hex.EncodeToString(raw)}}
}

// writeSBOM writes the controller's SBOM.
func writeSBOM(out string, in sbomInput) error {
	if len(in.binaries) == 0 {
		return errors.New("no binary to describe")
	}
	main, modules, err := mainComponent(in)
	if err != nil {
		return err
	}
	components, deps, err := libraries(in, main, modules)
	if err != nil {
		return err
	}
	b := bom{BOMFormat: "CycloneDX", SpecVersion: "1.6", Version: 1, Components: components, Dependencies: []dependency{deps}}
	b.Metadata.Timestamp = in.time.UTC().Format(time.RFC3339)
	b.Metadata.Lifecycles = []map[string]string{{"phase": "build"}}
	b.Metadata.Tools.Components = []component{{Type: "application", Group: "github.com/nodehealthcheck/nhc-controller", Name: "hack/release", Version: in.version}}
	b.Metadata.Component = main
	// The serial number is the content's: the same SBOM, the same number.
	unnumbered, err := encodeJSON(b)
	if err != nil {
		return err
	}
	b.SerialNumber = "urn:uuid:" + uuid.NewSHA1(uuid.NameSpaceURL, unnumbered).String()
	data, err := encodeJSON(b)
	if err != nil {
		return err
	}
	return os.WriteFile(out, data, 0o644)
}

// mainComponent describes the controller, with the build settings of its
// binaries, and returns the modules they are built of, by path@version.
func mainComponent(in sbomInput) (component, map[string]component, error) {
	first := in.binaries[0]
	main := component{
		Type: "application", Name: first.Main.Path, Version: in.version,
		PURL: "pkg:golang/" + first.Main.Path + "@" + in.version + "?type=module#" + strings.TrimPrefix(first.Path, first.Main.Path+"/"),
	}
	main.BOMRef = main.PURL
	var err error
	if main.Licenses, err = licenseChoices(in.mainDir); err != nil {
		return component{}, nil, fmt.Errorf("the controller's licence: %w", err)
	}
	main.Properties = append(main.Properties, property{"cdx:gomod:build:vcs:revision", in.commit})
	modules := map[string]component{}
	for _, bi := range in.binaries {
		if bi.GoVersion != first.GoVersion {
			return component{}, nil, fmt.Errorf("the binaries are built with %s and %s", first.GoVersion, bi.GoVersion)
		}
		for _, s := range bi.Settings {
			name := "cdx:gomod:build:env:" + s.Key
			if strings.HasPrefix(s.Key, "-") {
				name = "cdx:gomod:build:flag:" + strings.TrimPrefix(s.Key, "-")
			}
			if p := (property{name, s.Value}); !slices.Contains(main.Properties, p) {
				main.Properties = append(main.Properties, p)
			}
		}
		for _, m := range bi.Deps {
			if m.Replace != nil {
				m = m.Replace
			}
			modules[m.Path+"@"+m.Version] = component{
				Type: "library", Name: m.Path, Version: m.Version, Scope: "required", Hashes: h1ToSHA256(m.Sum),
				PURL: "pkg:golang/" + m.Path + "@" + m.Version + "?type=module",
			}
		}
	}
	slices.SortFunc(main.Properties, func(a, b property) int { return strings.Compare(a.Name+"="+a.Value, b.Name+"="+b.Value) })
	return main, modules, nil
}

// libraries lists the standard library and the modules, in order, each
// with its licences, and the controller's dependency on each.
func libraries(in sbomInput, main component, modules map[string]component) ([]component, dependency, error) {
	goVersion := in.binaries[0].GoVersion
	std := strings.TrimPrefix(goVersion, "go")
	components := []component{{
		Type: "library", Name: "stdlib", Version: goVersion, Scope: "required",
		PURL: "pkg:golang/stdlib@" + std, CPE: "cpe:2.3:a:golang:go:" + std + ":-:*:*:*:*:*:*",
	}}
	for _, key := range slices.Sorted(maps.Keys(modules)) {
		components = append(components, modules[key])
	}
	deps := dependency{Ref: main.BOMRef, DependsOn: []string{}}
	for i := range components {
		c := &components[i]
		c.BOMRef = c.PURL
		path, version := c.Name, c.Version
		if c.Name == "stdlib" {
			path = "std"
		}
		dir, err := in.moduleDir(path, version)
		if err != nil {
			return nil, dependency{}, err
		}
		if c.Licenses, err = licenseChoices(dir); err != nil {
			return nil, dependency{}, fmt.Errorf("the licence of %s@%s: %w", path, version, err)
		}
		deps.DependsOn = append(deps.DependsOn, c.BOMRef)
	}
	return components, deps, nil
}

func encodeJSON(v any) ([]byte, error) {
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	// Package URLs hold '&': kept as written.
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	err := enc.Encode(v)
	return out.Bytes(), err
}

// shippedBinaries reads the controller's build information from each
// image of an OCI layout's index: the binaries as they ship.
func shippedBinaries(dir string) ([]*buildinfo.BuildInfo, error) {
	outer, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, err
	}
	manifest, err := outer.IndexManifest()
	if err != nil {
		return nil, err
	}
	if len(manifest.Manifests) != 1 {
		return nil, fmt.Errorf("%s lists %d entries, not the one index", dir, len(manifest.Manifests))
	}
	index, err := outer.ImageIndex(manifest.Manifests[0].Digest)
	if err != nil {
		return nil, err
	}
	platforms, err := index.IndexManifest()
	if err != nil {
		return nil, err
	}
	var infos []*buildinfo.BuildInfo
	for _, m := range platforms.Manifests {
		img, err := index.Image(m.Digest)
		if err != nil {
			return nil, err
		}
		layers, err := img.Layers()
		if err != nil {
			return nil, err
		}
		var binary []byte
		for _, l := range layers {
			rc, err := l.Uncompressed()
			if err != nil {
				return nil, err
			}
			binary, err = fileInTar(rc, "nhc-controller")
			_ = rc.Close() // a layer read: closing it can lose nothing
			if err != nil {
				return nil, err
			}
			if binary != nil {
				break
			}
		}
		if binary == nil {
			return nil, fmt.Errorf("image %s holds no nhc-controller", m.Digest)
		}
		info, err := buildinfo.Read(bytes.NewReader(binary))
		if err != nil {
			return nil, fmt.Errorf("image %s: %w", m.Digest, err)
		}
		infos = append(infos, info)
	}
	return infos, nil
}

func fileInTar(r io.Reader, name string) ([]byte, error) {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		if strings.TrimPrefix(h.Name, "/") == name {
			return io.ReadAll(tr)
		}
	}
}

// moduleDirs finds the modules' folders in the module cache, downloading
// any that are missing, and the standard library's, GOROOT.
func moduleDirs(binaries []*buildinfo.BuildInfo) (func(path, version string) (string, error), error) {
	args := []string{"mod", "download", "-json"}
	for _, bi := range binaries {
		for _, m := range bi.Deps {
			if m.Replace != nil {
				m = m.Replace
			}
			args = append(args, m.Path+"@"+m.Version)
		}
	}
	out, err := exec.Command("go", args...).Output()
	if err != nil {
		return nil, fmt.Errorf("go mod download: %w", err)
	}
	dirs := map[string]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var m struct{ Path, Version, Dir, Error string }
		if err := dec.Decode(&m); err == io.EOF {
			break
		} else if err != nil {
			return nil, err
		}
		if m.Error != "" {
			return nil, fmt.Errorf("go mod download %s@%s: %s", m.Path, m.Version, m.Error)
		}
		dirs[m.Path+"@"+m.Version] = m.Dir
	}
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		return nil, err
	}
	dirs["std@"+binaries[0].GoVersion] = strings.TrimSpace(string(goroot))
	return func(path, version string) (string, error) {
		if dir, ok := dirs[path+"@"+version]; ok {
			return filepath.Clean(dir), nil
		}
		return "", fmt.Errorf("no folder for %s@%s", path, version)
	}, nil
}
