package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/nodehealthcheck/nhc-controller/test/controlplane"
)

// workflow is what these tests read of a GitHub Actions workflow.
type workflow struct {
	// On is the triggers. The YAML 1.1 reader turns the key `on` into
	// true, so it is read under both names.
	On          map[string]any `json:"on"`
	OnAsBool    map[string]any `json:"true"`
	Permissions any            `json:"permissions"`
	Jobs        map[string]job `json:"jobs"`
}

type job struct {
	Uses        string            `json:"uses"`
	Needs       any               `json:"needs"`
	Permissions map[string]string `json:"permissions"`
	Steps       []step            `json:"steps"`
}

type step struct {
	Name string         `json:"name"`
	Uses string         `json:"uses"`
	Run  string         `json:"run"`
	With map[string]any `json:"with"`
}

func (w workflow) triggers() map[string]any {
	if w.On != nil {
		return w.On
	}
	return w.OnAsBool
}

// readWorkflows reads .github/workflows/, raw and parsed, by file name.
func readWorkflows(t *testing.T) (map[string]string, map[string]workflow) {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(controlplane.RepoRoot(), ".github", "workflows", "*.y*ml"))
	require.NoError(t, err)
	require.NotEmpty(t, paths)
	raw, parsed := map[string]string{}, map[string]workflow{}
	for _, path := range paths {
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		var w workflow
		require.NoError(t, yaml.Unmarshal(data, &w), path)
		raw[filepath.Base(path)], parsed[filepath.Base(path)] = string(data), w
	}
	return raw, parsed
}

// pinned is an action or reusable workflow of another repository named by
// a full commit SHA, the tag it was taken from in a comment beside it:
// a tag can be moved to other code, a commit cannot.
var pinned = regexp.MustCompile(`^\s*(?:-\s+)?uses:\s+[\w.-]+/[\w./-]+@[0-9a-f]{40}\s+#\s+v\d+\.\d+\.\d+\s*$`)

// usesLine is any line that names an action or a reusable workflow.
var usesLine = regexp.MustCompile(`^\s*(?:-\s+)?uses:\s+(\S+)`)

// Every action and reusable workflow of another repository is pinned by
// commit, with its tag in a comment; this repository's own are named by
// path.
func TestEveryWorkflowPinsItsActionsByCommit(t *testing.T) {
	raw, parsed := readWorkflows(t)
	for file, text := range raw {
		lines := 0
		for _, line := range strings.Split(text, "\n") {
			m := usesLine.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			lines++
			if strings.HasPrefix(m[1], "./") {
				continue
			}
			assert.Regexp(t, pinned, line, "%s: pinned by a 40-hex commit SHA, with # vX.Y.Z", file)
		}
		// The YAML agrees with the lines read: no uses: hides where the
		// line scan would miss it.
		named := 0
		for _, j := range parsed[file].Jobs {
			if j.Uses != "" {
				named++
			}
			for _, s := range j.Steps {
				if s.Uses != "" {
					named++
				}
			}
		}
		assert.Equal(t, named, lines, "%s: every uses: on a line of its own", file)
	}
}

// CI runs on pull requests and main with the project's own scripts and
// reads nothing but the repository; the release reuses it.
func TestCIRunsTheProjectsScripts(t *testing.T) {
	raw, parsed := readWorkflows(t)
	ci, ok := parsed["ci.yaml"]
	require.True(t, ok, ".github/workflows/ci.yaml")
	for _, trigger := range []string{"pull_request", "push", "workflow_call"} {
		assert.Contains(t, ci.triggers(), trigger)
	}
	assert.Contains(t, raw["ci.yaml"], "branches: [main]")
	assert.Equal(t, map[string]any{"contents": "read"}, ci.Permissions)
	var runs []string
	for _, j := range ci.Jobs {
		assert.Equal(t, map[string]string{"contents": "read"}, j.Permissions)
		for _, s := range j.Steps {
			runs = append(runs, s.Run)
		}
	}
	assert.Contains(t, runs, ".ci/run")
	assert.True(t, slices.ContainsFunc(runs, func(r string) bool { return strings.HasPrefix(r, "make sim SEEDS=") }), "make sim with its seeds: %q", runs)
}

// The release publishes only a commit CI passed, signs the image it pushed
// by digest with the workflow's own identity, attests its SBOM and build
// provenance, and only then publishes the assets.
func TestTheReleaseIsTestedSignedAndAttested(t *testing.T) {
	_, parsed := readWorkflows(t)
	release, ok := parsed["release.yaml"]
	require.True(t, ok, ".github/workflows/release.yaml")
	assert.Equal(t, map[string]any{}, release.Permissions, "no permission but those a job asks for")
	assert.Equal(t, "./.github/workflows/ci.yaml", release.Jobs["ci"].Uses)
	assert.Equal(t, map[string]string{"contents": "read"}, release.Jobs["ci"].Permissions)

	publish, ok := release.Jobs["release"]
	require.True(t, ok, "the release job")
	needs := publish.Needs
	if one, ok := needs.(string); ok {
		needs = []any{one}
	}
	assert.Contains(t, needs, "ci", "the release job needs ci")
	assert.Equal(t, map[string]string{"contents": "write", "packages": "write", "id-token": "write", "attestations": "write"}, publish.Permissions)

	at := map[string]int{}
	for i, s := range publish.Steps {
		switch {
		case strings.Contains(s.Run, "make release") && strings.Contains(s.Run, "PUSH=1"):
			at["push"] = i
		case strings.HasPrefix(s.Uses, "sigstore/cosign-installer@"):
			at["cosign"] = i
		case strings.HasPrefix(s.Run, "cosign sign ") && strings.Contains(s.Run, `"${IMAGE}@${DIGEST}"`):
			at["sign"] = i
		case strings.HasPrefix(s.Run, "cosign attest ") && strings.Contains(s.Run, "--type cyclonedx --predicate _output/release/nhc-controller.sbom.cdx.json"):
			at["sbom"] = i
		case strings.HasPrefix(s.Uses, "actions/attest-build-provenance@"):
			at["provenance"] = i
			assert.Equal(t, "ghcr.io/nodehealthcheck/nhc-controller", s.With["subject-name"])
			assert.Equal(t, "${{ steps.image.outputs.digest }}", s.With["subject-digest"])
			assert.Equal(t, true, s.With["push-to-registry"])
		case strings.Contains(s.Run, "gh release create"):
			at["publish"] = i
		}
	}
	for _, want := range []string{"push", "cosign", "sign", "sbom", "provenance", "publish"} {
		require.Contains(t, at, want, "a step: %s", want)
	}
	assert.Less(t, at["cosign"], at["sign"])
	for _, signed := range []string{"sign", "sbom", "provenance"} {
		assert.Less(t, at["push"], at[signed], "%s after the push", signed)
		assert.Less(t, at[signed], at["publish"], "%s before the assets are published", signed)
	}
}

// fromLine is a Dockerfile's FROM instruction: its flags, its image.
var fromLine = regexp.MustCompile(`(?m)^FROM\s+(?:--\S+\s+)*(\S+)`)

// The Dockerfile's every base is empty or pinned by digest, and something
// moves the pins: Dependabot watches the actions, the Dockerfile and the
// Go modules.
func TestTheDockerfilePinsItsBasesAndDependabotMovesThePins(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(controlplane.RepoRoot(), "Dockerfile"))
	require.NoError(t, err)
	froms := fromLine.FindAllStringSubmatch(string(data), -1)
	require.NotEmpty(t, froms)
	for _, m := range froms {
		if m[1] == "scratch" {
			continue
		}
		assert.Regexp(t, `@sha256:[0-9a-f]{64}$`, m[1], "FROM %s: pinned by digest", m[1])
	}

	data, err = os.ReadFile(filepath.Join(controlplane.RepoRoot(), ".github", "dependabot.yml"))
	require.NoError(t, err)
	var config struct {
		Updates []struct {
			Ecosystem string `json:"package-ecosystem"`
		} `json:"updates"`
	}
	require.NoError(t, yaml.Unmarshal(data, &config))
	var ecosystems []string
	for _, u := range config.Updates {
		ecosystems = append(ecosystems, u.Ecosystem)
	}
	assert.ElementsMatch(t, []string{"github-actions", "docker", "gomod"}, ecosystems)
}
