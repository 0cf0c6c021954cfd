package docs

import (
	"fmt"
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

// readRepo reads a file of the repository.
func readRepo(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(controlplane.RepoRoot(), path))
	require.NoError(t, err)
	return string(data)
}

// numberWords spell the counts the docs write in words.
var numberWords = []string{"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"}

// The README and operating.md count the install's admission policies as
// the manifests hold them.
func TestTheDocsCountTheInstallsAdmissionPolicies(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(controlplane.RepoRoot(), "manifests/admission/*.yaml"))
	require.NoError(t, err)
	policies := 0
	for _, file := range files {
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		policies += len(regexp.MustCompile(`(?m)^kind: ValidatingAdmissionPolicy$`).FindAll(data, -1))
	}
	require.Less(t, policies, len(numberWords))
	count := numberWords[policies]
	kustomization := readRepo(t, "manifests/kustomization.yaml")
	for _, file := range files {
		assert.Contains(t, kustomization, "admission/"+filepath.Base(file), "the install holds every policy")
	}
	readme := strings.Join(strings.Fields(readRepo(t, "README.md")), " ")
	assert.Contains(t, readme, count+" admission policies", "README.md")
	operating := strings.Join(strings.Fields(readRepo(t, "docs/operating.md")), " ")
	assert.Contains(t, operating, "the install's "+count+" admission policies", "docs/operating.md")
}

// sizingRow is one row of operating.md's sizing table.
type sizingRow struct {
	nodes, request, limit string
}

// sizingTable reads operating.md's table of memory by cluster size; its
// measured peaks are TestTheSizingTableQuotesTodaysPeakRSS's.
func sizingTable(t *testing.T) []sizingRow {
	var rows []sizingRow
	row := regexp.MustCompile(`(?m)^\| ([0-9,]+) \| [^|]+ \| ([0-9]+Mi) \| ([0-9]+Mi)[^|]*\|$`)
	for _, m := range row.FindAllStringSubmatch(readRepo(t, "docs/operating.md"), -1) {
		rows = append(rows, sizingRow{nodes: m[1], request: m[2], limit: m[3]})
	}
	require.Len(t, rows, 3, "the sizing table's rows")
	return rows
}

// The Deployment's and the chart's resources are the sizing table's
// 10,000-node row, and their comments quote its other rows.
func TestTheResourcesFollowTheSizingTable(t *testing.T) {
	rows := sizingTable(t)
	others := fmt.Sprintf("For %s nodes it says %s and %s, for %s %s and %s", rows[0].nodes, rows[0].request, rows[0].limit, rows[2].nodes, rows[2].request, rows[2].limit)
	def := rows[1]
	require.Equal(t, "10,000", def.nodes)

	var values struct {
		Resources struct {
			Requests struct{ Memory string } `json:"requests"`
			Limits   struct{ Memory string } `json:"limits"`
		} `json:"resources"`
	}
	valuesYAML := readRepo(t, "charts/nhc-controller/values.yaml")
	require.NoError(t, yaml.Unmarshal([]byte(valuesYAML), &values))
	assert.Equal(t, def.request, values.Resources.Requests.Memory, "the chart's memory request")
	assert.Equal(t, def.limit, values.Resources.Limits.Memory, "the chart's memory limit")

	deployment := readRepo(t, "manifests/deploy/deployment.yaml")
	assert.Contains(t, deployment, "memory: "+def.request, "the Deployment's memory request")
	assert.Contains(t, deployment, "memory: "+def.limit, "the Deployment's memory limit")
	for file, text := range map[string]string{"values.yaml": valuesYAML, "deployment.yaml": deployment} {
		comments := strings.Join(strings.Fields(strings.NewReplacer("#", " ").Replace(text)), " ")
		assert.Contains(t, comments, others, "%s quotes the sizing table's other rows", file)
	}
}
