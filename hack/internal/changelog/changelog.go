// Package changelog reads a release's version and notes from CHANGELOG.md,
// for make release's first check and for the release itself.
package changelog

import (
	"fmt"
	"os"
	"strings"

	"golang.org/x/mod/semver"
)

// Check says why a version cannot be released: it is not
// vMAJOR.MINOR.PATCH in full (a pre-release allowed, no build metadata).
func Check(version string) error {
	if !semver.IsValid(version) || semver.Canonical(version) != version {
		return fmt.Errorf("version %q is not vMAJOR.MINOR.PATCH: tag the release, then make release VERSION=vX.Y.Z", version)
	}
	return nil
}

// Notes returns the section of the changelog headed with the version.
func Notes(path, version string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	var section []string
	in := false
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "## ") {
			if in {
				break
			}
			in = strings.Fields(line)[1] == version
		}
		if in {
			section = append(section, line)
		}
	}
	if len(section) < 2 {
		return "", fmt.Errorf("%s has no section \"## %s\": write the release's notes first", path, version)
	}
	return strings.TrimSpace(strings.Join(section, "\n")) + "\n", nil
}
