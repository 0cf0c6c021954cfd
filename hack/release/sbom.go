package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// setSBOMVersion names the SBOM's main component, the controller, at the
// release's version, in its version and its package URL.
func setSBOMVersion(path, version string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var bom map[string]any
	if err := json.Unmarshal(data, &bom); err != nil {
		return fmt.Errorf("reading the SBOM: %w", err)
	}
	metadata, _ := bom["metadata"].(map[string]any)
	component, _ := metadata["component"].(map[string]any)
	if component == nil {
		return fmt.Errorf("the SBOM names no main component")
	}
	component["version"] = version
	if purl, ok := component["purl"].(string); ok {
		if at := strings.LastIndex(purl, "@"); at >= 0 {
			rest := ""
			if q := strings.IndexAny(purl[at:], "?#"); q >= 0 {
				rest = purl[at+q:]
			}
			component["purl"] = purl[:at+1] + version + rest
		}
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	// Package URLs hold '&': kept as it is, as the generator writes it.
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(bom); err != nil {
		return err
	}
	return os.WriteFile(path, out.Bytes(), 0o644)
}
