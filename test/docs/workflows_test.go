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
	Environment any               `json:"environment"`
	Permissions map[string]string `json:"permissions"`
	Steps       []step            `json:"steps"`
}

type step struct {
	Name string         `json:"name"`
	Uses string         `json:"uses"`
	Run  string         `json:"run"`
	With map[string]any `json:"with"`
}

// needs are the jobs a job waits for.
func (j job) needs() []any {
	if one, ok := j.Needs.(string); ok {
		return []any{one}
	}
	needs, _ := j.Needs.([]any)
	return needs
}

// stepAt finds the first step from index from on that matches, or -1.
func (j job) stepAt(from int, match func(step) bool) int {
	for i := from; i < len(j.Steps); i++ {
		if match(j.Steps[i]) {
			return i
		}
	}
	return -1
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

// govulncheck, a module pinned by version.
var govulncheck = regexp.MustCompile(`go run golang\.org/x/vuln/cmd/govulncheck@v\d+\.\d+\.\d+ `)

// CI looks for known vulnerabilities in the source and in the shipped
// binaries (the image holds nothing else), and keeps bin/ and Go's caches
// between runs: the control plane and helm are built or fetched once.
func TestCIScansForVulnerabilitiesAndCaches(t *testing.T) {
	_, parsed := readWorkflows(t)
	ci := parsed["ci.yaml"]
	var source, binaries, binCache bool
	for _, j := range ci.Jobs {
		for _, s := range j.Steps {
			source = source || govulncheck.MatchString(s.Run) && strings.Contains(s.Run, " ./...")
			binaries = binaries || govulncheck.MatchString(s.Run) && strings.Contains(s.Run, "-mode=binary") && strings.Contains(s.Run, "nhc-controller")
			if strings.HasPrefix(s.Uses, "actions/setup-go@") {
				assert.Equal(t, true, s.With["cache"], "setup-go keeps the module and build caches")
			}
			if strings.HasPrefix(s.Uses, "actions/cache@") && s.With["path"] == "bin" {
				binCache = true
				assert.Contains(t, s.With["key"], "hashFiles('hack/build-k8s-binaries.sh', 'hack/build-helm.sh')", "keyed on the scripts that pin the versions")
			}
		}
	}
	assert.True(t, source, "govulncheck ./...")
	assert.True(t, binaries, "govulncheck -mode=binary of the controller")
	assert.True(t, binCache, "bin/ cached")
}

// Every workflow builds with go.mod's toolchain line, which names the
// newest patch (the release refuses an older one): setup-go reads it.
func TestTheWorkflowsBuildWithGoModsToolchain(t *testing.T) {
	assert.Regexp(t, `(?m)^toolchain go1\.\d+\.\d+$`, readRepo(t, "go.mod"))
	_, parsed := readWorkflows(t)
	setups := 0
	for file, w := range parsed {
		for name, j := range w.Jobs {
			for _, s := range j.Steps {
				if strings.HasPrefix(s.Uses, "actions/setup-go@") {
					setups++
					assert.Equal(t, "go.mod", s.With["go-version-file"], "%s %s", file, name)
					assert.NotContains(t, s.With, "go-version", "%s %s: the version is go.mod's", file, name)
				}
			}
		}
	}
	assert.GreaterOrEqual(t, setups, 3)
	// The Dockerfile, for those who build with Docker, uses the same minor;
	// Dependabot moves its digest to the newest patch.
	toolchain := regexp.MustCompile(`(?m)^toolchain go(\d+\.\d+)\.\d+$`).FindStringSubmatch(readRepo(t, "go.mod"))
	require.NotNil(t, toolchain)
	assert.Regexp(t, `(?m)^FROM golang:`+regexp.QuoteMeta(toolchain[1])+`@sha256:`, readRepo(t, "Dockerfile"))
}

// pinnedTool installs a Go tool at a version.
var pinnedTool = regexp.MustCompile(`^go install [\w./-]+@v\d+\.\d+\.\d+$`)

// The release: CI passes on the tagged commit; build, with no write right,
// checks that the tag is on main's history and writes every file; publish,
// in the protected environment, only downloads those files, checks them
// against their checksums, then pushes, signs and attests them by digest
// with the workflow's own identity (the image, its SBOM and provenance;
// the chart; SHA256SUMS, and every file it lists), and only then
// publishes the assets.
func TestTheReleaseIsBuiltReadOnlyAndPublishedSigned(t *testing.T) {
	_, parsed := readWorkflows(t)
	release, ok := parsed["release.yaml"]
	require.True(t, ok, ".github/workflows/release.yaml")
	assert.Equal(t, map[string]any{}, release.Permissions, "no permission but those a job asks for")
	assert.Equal(t, "./.github/workflows/ci.yaml", release.Jobs["ci"].Uses)
	assert.Equal(t, map[string]string{"contents": "read"}, release.Jobs["ci"].Permissions)

	build, ok := release.Jobs["build"]
	require.True(t, ok, "the build job")
	checkTheBuildIsReadOnly(t, build)
	publish, ok := release.Jobs["publish"]
	require.True(t, ok, "the publish job")
	checkThePublishSignsBeforeItPublishes(t, publish)
}

// checkTheBuildIsReadOnly checks the release's build job: after CI, with no
// write right and no secret, on main's history, compiled afresh.
func checkTheBuildIsReadOnly(t *testing.T, build job) {
	t.Helper()
	assert.Contains(t, build.needs(), "ci")
	assert.Equal(t, map[string]string{"contents": "read"}, build.Permissions, "the build has no write right")
	onMain := build.stepAt(0, func(s step) bool {
		return strings.Contains(s.Run, `git merge-base --is-ancestor "${GITHUB_SHA}" origin/main`)
	})
	made := build.stepAt(0, func(s step) bool { return s.Run == `make release VERSION="${GITHUB_REF_NAME}"` })
	uploaded := build.stepAt(0, func(s step) bool { return strings.HasPrefix(s.Uses, "actions/upload-artifact@") })
	assert.True(t, onMain >= 0 && onMain < made, "the tag is checked to be on main before the build")
	assert.True(t, made >= 0 && made < uploaded, "make release, then its files uploaded")
	for _, s := range build.Steps {
		assert.NotContains(t, s.Run, "secrets.", "the build sees no secret")
		if strings.HasPrefix(s.Uses, "actions/setup-go@") {
			assert.Equal(t, false, s.With["cache"], "the release is compiled afresh")
		}
		if strings.HasPrefix(s.Uses, "actions/cache") {
			assert.True(t, strings.HasPrefix(s.Uses, "actions/cache/restore@"), "the build restores bin/, and saves nothing")
		}
	}
}

// checkThePublishSignsBeforeItPublishes checks the release's publish job:
// it builds nothing, checks the build's files, then pushes, signs and
// attests them by digest, and publishes the assets last.
func checkThePublishSignsBeforeItPublishes(t *testing.T, publish job) {
	t.Helper()
	assert.Equal(t, []any{"build"}, publish.needs())
	assert.Equal(t, "release", publish.Environment, "behind the protected environment")
	assert.Equal(t, map[string]string{"contents": "write", "packages": "write", "id-token": "write", "attestations": "write"}, publish.Permissions)
	for _, s := range publish.Steps {
		assert.False(t, strings.HasPrefix(s.Uses, "actions/checkout@"), "publish builds nothing: no checkout")
		for _, line := range strings.Split(s.Run, "\n") {
			// A pinned tool, its checksum the Go checksum database's, is all
			// it installs.
			if pinnedTool.MatchString(strings.TrimSpace(line)) {
				continue
			}
			assert.NotRegexp(t, `^\s*(make|go) `, line, "publish builds nothing")
		}
	}
	at := map[string]int{}
	for want, match := range map[string]func(step) bool{
		"download": func(s step) bool { return strings.HasPrefix(s.Uses, "actions/download-artifact@") },
		"check":    func(s step) bool { return strings.Contains(s.Run, "sha256sum --check --strict SHA256SUMS") },
		"cosign":   func(s step) bool { return strings.HasPrefix(s.Uses, "sigstore/cosign-installer@") },
		"push": func(s step) bool {
			return strings.Contains(s.Run, `crane" push _output/release/oci "${IMAGE}:${GITHUB_REF_NAME}"`)
		},
		"sign": func(s step) bool {
			return strings.HasPrefix(s.Run, "cosign sign ") && strings.Contains(s.Run, `"${IMAGE}@${DIGEST}"`)
		},
		"sbom": func(s step) bool {
			return strings.Contains(s.Run, "--type cyclonedx --predicate _output/release/nhc-controller.sbom.cdx.json")
		},
		"provenance": func(s step) bool { return s.With["subject-digest"] == "${{ steps.files.outputs.digest }}" },
		"chart":      func(s step) bool { return strings.Contains(s.Run, `helm push "_output/release/${CHART}"`) },
		"sign chart": func(s step) bool {
			return strings.HasPrefix(s.Run, "cosign sign ") && strings.Contains(s.Run, `"${CHARTS}/nhc-controller@${DIGEST}"`)
		},
		"sign sums": func(s step) bool {
			return strings.Contains(s.Run, "cosign sign-blob --yes --bundle _output/release/SHA256SUMS.sigstore.json _output/release/SHA256SUMS")
		},
		"every file": func(s step) bool { return s.With["subject-checksums"] == "_output/release/SHA256SUMS" },
		"publish":    func(s step) bool { return strings.Contains(s.Run, "gh release create") },
	} {
		at[want] = publish.stepAt(0, match)
		require.GreaterOrEqual(t, at[want], 0, "a step: %s", want)
	}
	for _, s := range publish.Steps {
		if strings.HasPrefix(s.Uses, "actions/attest-build-provenance@") && s.With["subject-digest"] != nil {
			assert.Equal(t, "ghcr.io/nodehealthcheck/nhc-controller", s.With["subject-name"])
			assert.Equal(t, true, s.With["push-to-registry"])
		}
	}
	for _, order := range [][2]string{{"download", "check"}, {"check", "push"}, {"cosign", "sign"}, {"push", "sign"}, {"push", "sbom"}, {"push", "provenance"}, {"chart", "sign chart"}} {
		assert.Less(t, at[order[0]], at[order[1]], "%s before %s", order[0], order[1])
	}
	for _, signed := range []string{"sign", "sbom", "provenance", "sign chart", "sign sums", "every file"} {
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
