package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTheSBOMNamesTheControllerAtTheReleasesVersion(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sbom.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"metadata": {"component": {"name": "github.com/nodehealthcheck/nhc-controller",
		"version": "v0.0.0-20261125150111-bcac6146e309",
		"purl": "pkg:golang/github.com/nodehealthcheck/nhc-controller@v0.0.0-20261125150111-bcac6146e309?goarch=amd64&type=module#cmd/nhc-controller"}},
		"components": [{"name": "k8s.io/client-go", "version": "v0.37.2"}]}`), 0o644))

	require.NoError(t, setSBOMVersion(path, "v1.2.3"))
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var bom struct {
		Metadata struct {
			Component struct{ Version, PURL string } `json:"component"`
		} `json:"metadata"`
		Components []struct{ Version string } `json:"components"`
	}
	require.NoError(t, json.Unmarshal(data, &bom))
	assert.Equal(t, "v1.2.3", bom.Metadata.Component.Version)
	assert.Equal(t, "pkg:golang/github.com/nodehealthcheck/nhc-controller@v1.2.3?goarch=amd64&type=module#cmd/nhc-controller", bom.Metadata.Component.PURL)
	assert.Equal(t, "v0.37.2", bom.Components[0].Version, "the modules keep theirs")
	assert.NotContains(t, string(data), `\u0026`, "written as the generator writes it")
}
