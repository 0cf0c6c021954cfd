// Package docs checks the documentation against itself and against what
// ships: no section twice, no alert that advises the opposite of its
// runbook, counts and sizes that agree with the manifests, and workflows
// that do what docs/verify.md says a release is: tested, signed and
// attested, with every action pinned by commit.
package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/nodehealthcheck/nhc-controller/test/controlplane"
)

// headings are a Markdown file's headings, outside code blocks.
func headings(text string) []string {
	var found []string
	inCode := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "```") {
			inCode = !inCode
			continue
		}
		if !inCode && strings.HasPrefix(line, "#") {
			found = append(found, strings.TrimSpace(line))
		}
	}
	return found
}

// userDocs are the paths of the docs a user reads: docs/*.md, the README
// and the chart's README.
func userDocs(t *testing.T) []string {
	t.Helper()
	root := controlplane.RepoRoot()
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	require.NoError(t, err)
	return append(files, filepath.Join(root, "README.md"), filepath.Join(root, "charts", "nhc-controller", "README.md"))
}

// Every section heading appears once in its file: a second copy goes
// stale.
func TestEverySectionHeadingAppearsOnce(t *testing.T) {
	files := userDocs(t)
	require.NotEmpty(t, files)
	for _, file := range files {
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		seen := map[string]bool{}
		for _, h := range headings(string(data)) {
			assert.False(t, seen[h], "%s has %q twice", file, h)
			seen[h] = true
		}
	}
}

// advice is a direction an alert or runbook gives a setting: "raise
// `stormRecoveryThreshold`", "lowering --kube-api-qps".
var advice = regexp.MustCompile("\\b((?i:rais(?:e|es|ing)|increas(?:e|es|ing)|lower(?:s|ing)?|decreas(?:e|es|ing)|reduc(?:e|es|ing)))\\s+`?((?:--)?[a-z][a-zA-Z.-]*[A-Z-][a-zA-Z.-]*)`?")

// directions maps each setting the text advises on to "up" or "down".
func directions(text string) map[string]string {
	found := map[string]string{}
	for _, m := range advice.FindAllStringSubmatch(text, -1) {
		direction := "down"
		if verb := strings.ToLower(m[1]); strings.HasPrefix(verb, "rais") || strings.HasPrefix(verb, "increas") {
			direction = "up"
		}
		found[m[2]] = direction
	}
	return found
}

// Every alert has a runbook section, and every setting its text advises
// to raise or lower, the runbook advises the same way.
func TestEveryAlertsAdviceAgreesWithItsRunbook(t *testing.T) {
	root := controlplane.RepoRoot()
	data, err := os.ReadFile(filepath.Join(root, "manifests", "monitoring", "prometheus-rule.yaml"))
	require.NoError(t, err)
	var rule struct {
		Spec struct {
			Groups []struct {
				Rules []struct {
					Alert       string            `json:"alert"`
					Annotations map[string]string `json:"annotations"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"spec"`
	}
	require.NoError(t, yaml.Unmarshal(data, &rule))
	runbooks, err := os.ReadFile(filepath.Join(root, "docs", "runbooks.md"))
	require.NoError(t, err)
	sections := map[string]string{}
	for _, section := range strings.Split("\n"+string(runbooks), "\n## ")[1:] {
		name, body, _ := strings.Cut(section, "\n")
		sections[strings.TrimSpace(name)] = body
	}
	alerts := 0
	for _, group := range rule.Spec.Groups {
		for _, r := range group.Rules {
			if r.Alert == "" {
				continue
			}
			alerts++
			runbook, ok := sections[r.Alert]
			if !assert.True(t, ok, "docs/runbooks.md has a section ## %s", r.Alert) {
				continue
			}
			assert.True(t, strings.HasSuffix(r.Annotations["runbook_url"], "#"+strings.ToLower(r.Alert)), "%s's runbook_url points at its section", r.Alert)
			says := directions(runbook)
			for setting, direction := range directions(r.Annotations["summary"] + "\n" + r.Annotations["description"]) {
				assert.Equal(t, direction, says[setting], "%s advises %s %s; its runbook advises %q", r.Alert, direction, setting, says[setting])
			}
		}
	}
	assert.Positive(t, alerts)
}

func TestDirectionsReadsAdvice(t *testing.T) {
	assert.Equal(t, map[string]string{"stormRecoveryThreshold": "down", "--kube-api-qps": "up"},
		directions("lowering stormRecoveryThreshold or the budget; raise `--kube-api-qps` if"))
	assert.Equal(t, map[string]string{"stormRecoveryThreshold": "up"}, directions("raise\n`stormRecoveryThreshold` (check"))
	assert.Empty(t, directions("lower the load, raise it"), "plain words are no settings")
}
