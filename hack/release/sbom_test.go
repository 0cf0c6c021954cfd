package main

import (
	"bytes"
	"debug/buildinfo"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nodehealthcheck/nhc-controller/hack/release/license"
)

// binaryOf is the build information of a controller built for an
// architecture, with a few of its modules.
func binaryOf(arch string) *buildinfo.BuildInfo {
	return &buildinfo.BuildInfo{
		GoVersion: "go1.26.8",
		Path:      "github.com/nodehealthcheck/nhc-controller/cmd/nhc-controller",
		Main:      debug.Module{Path: "github.com/nodehealthcheck/nhc-controller", Version: "(devel)"},
		Deps: []*debug.Module{
			{Path: "golang.org/x/net", Version: "v0.59.0", Sum: "h1:5zfYln+w5XCxwrnMMJPufRgNoXEaGxl0wo5GqPXyues="},
			{Path: "github.com/davecgh/go-spew", Version: "v1.1.2-0.20180830191138-d8f796af33cc"},
			{Path: "go.yaml.in/yaml/v2", Version: "v2.4.4"},
		},
		Settings: []debug.BuildSetting{{Key: "-trimpath", Value: "true"}, {Key: "CGO_ENABLED", Value: "0"}, {Key: "GOARCH", Value: arch}, {Key: "GOOS", Value: "linux"}},
	}
}

// The SBOM names the controller at the release's version, the standard
// library and every module with the licences their files hold, the
// shipped builds' settings, and nothing of the moment it was written:
// twice written, it is the same bytes.
func TestTheSBOM(t *testing.T) {
	binaries := []*buildinfo.BuildInfo{binaryOf("amd64"), binaryOf("arm64")}
	dirs, err := moduleDirs(binaries)
	require.NoError(t, err)
	goroot, err := dirs("std", "go1.26.8")
	require.NoError(t, err)
	in := sbomInput{
		version: "v1.2.3", commit: "4933fef16bff1c6e3ac5cf4a9cf1bb5dc1a0e1f2", time: time.Date(2026, 11, 27, 15, 30, 12, 0, time.UTC),
		binaries: binaries, mainDir: "../..",
		moduleDir: func(path, version string) (string, error) {
			if path == "std" {
				return goroot, nil
			}
			return dirs(path, version)
		},
	}
	first, second := filepath.Join(t.TempDir(), "first.json"), filepath.Join(t.TempDir(), "second.json")
	require.NoError(t, writeSBOM(first, in))
	require.NoError(t, writeSBOM(second, in))
	data, err := os.ReadFile(first)
	require.NoError(t, err)
	again, err := os.ReadFile(second)
	require.NoError(t, err)
	assert.Equal(t, data, again, "the same bytes twice")

	var b bom
	require.NoError(t, json.Unmarshal(data, &b))
	assert.Equal(t, "2026-11-27T15:30:12Z", b.Metadata.Timestamp, "the commit's time")
	assert.Regexp(t, `^urn:uuid:[0-9a-f-]{36}$`, b.SerialNumber)
	main := b.Metadata.Component
	assert.Equal(t, "v1.2.3", main.Version)
	assert.Equal(t, "pkg:golang/github.com/nodehealthcheck/nhc-controller@v1.2.3?type=module#cmd/nhc-controller", main.PURL)
	assert.Equal(t, "Apache-2.0", main.Licenses[0].License.ID)
	for _, p := range []property{{"cdx:gomod:build:env:CGO_ENABLED", "0"}, {"cdx:gomod:build:env:GOOS", "linux"},
		{"cdx:gomod:build:env:GOARCH", "amd64"}, {"cdx:gomod:build:env:GOARCH", "arm64"}, {"cdx:gomod:build:flag:trimpath", "true"}} {
		assert.Contains(t, main.Properties, p, "the shipped builds' settings")
	}
	assert.NotContains(t, main.Properties, property{"cdx:gomod:build:env:CGO_ENABLED", "1"})

	byName := map[string]component{}
	for _, c := range b.Components {
		byName[c.Name] = c
	}
	std := byName["stdlib"]
	assert.Equal(t, "go1.26.8", std.Version)
	assert.Equal(t, "pkg:golang/stdlib@1.26.8", std.PURL)
	assert.Equal(t, "cpe:2.3:a:golang:go:1.26.8:-:*:*:*:*:*:*", std.CPE)
	for name, want := range map[string]licenseChoice{
		"stdlib":                     {License: &spdxLicense{ID: "BSD-3-Clause", Acknowledgement: "declared"}},
		"golang.org/x/net":           {License: &spdxLicense{ID: "BSD-3-Clause", Acknowledgement: "declared"}},
		"github.com/davecgh/go-spew": {License: &spdxLicense{ID: "ISC", Acknowledgement: "declared"}},
		"go.yaml.in/yaml/v2":         {Expression: "Apache-2.0 AND MIT", Acknowledgement: "declared"},
	} {
		assert.Equal(t, []licenseChoice{want}, byName[name].Licenses, name)
	}
	assert.Equal(t, []hash{{"SHA-256", "e737d8967fb0e570b1c2b9cc3093ee7d180da1711a1b1974c28e46a8f5f2b9eb"}}, byName["golang.org/x/net"].Hashes, "go.sum's h1 in hex")
	assert.Len(t, b.Components, 4)
	require.Len(t, b.Dependencies, 1)
	assert.Len(t, b.Dependencies[0].DependsOn, 4)
	assert.True(t, slices.IsSorted(b.Dependencies[0].DependsOn[1:]))
	for _, c := range b.Components {
		path := c.Name
		if path == "stdlib" {
			path = "std"
		}
		dir, err := in.moduleDir(path, c.Version)
		require.NoError(t, err)
		claim := c.Licenses[0].Expression
		if claim == "" {
			claim = c.Licenses[0].License.ID
		}
		assert.NoError(t, license.Verify(claim, dir), c.Name)
	}
	assert.False(t, bytes.Contains(data, []byte(`\u0026`)), "package URLs as written")
}
