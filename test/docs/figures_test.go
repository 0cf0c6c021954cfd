package docs

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nodehealthcheck/nhc-controller/test/controlplane"
)

// The figures `make scale` measures have one home, the table under
// "Today's figures" in docs/performance.md: a figure restated elsewhere is
// not updated with it and ends up contradicting it.

// markdownTable is the first table under a heading: its header's cells,
// its rows' cells, and the lines it spans (0-based, both included).
type markdownTable struct {
	header      []string
	rows        [][]string
	first, last int
}

// tableSeparator is the line between a table's header and its rows.
var tableSeparator = regexp.MustCompile(`^\|[-:| ]+\|$`)

// tableCells splits a table row into its trimmed cells.
func tableCells(line string) []string {
	cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
	for i := range cells {
		cells[i] = strings.TrimSpace(cells[i])
	}
	return cells
}

// tableUnder reads the first table after the line heading.
func tableUnder(t *testing.T, text, heading string) markdownTable {
	t.Helper()
	lines := strings.Split(text, "\n")
	start := -1
	for i, line := range lines {
		if strings.TrimSpace(line) == heading {
			start = i
			break
		}
	}
	require.GreaterOrEqual(t, start, 0, "no heading %q", heading)
	table := markdownTable{first: -1}
	for i := start + 1; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		switch {
		case strings.HasPrefix(line, "#") && table.first < 0:
			require.Fail(t, "no table under "+heading)
		case !strings.HasPrefix(line, "|"):
			if table.first >= 0 {
				return table
			}
		case table.first < 0:
			table.first, table.last, table.header = i, i, tableCells(line)
		default:
			table.last = i
			if !tableSeparator.MatchString(line) {
				table.rows = append(table.rows, tableCells(line))
			}
		}
	}
	require.GreaterOrEqual(t, table.first, 0, "no table under %q", heading)
	return table
}

// nodeColumn is the node count a column of today's figures is measured at:
// "50,000 nodes (`QUIET=30s ...`)" is "50,000".
var nodeColumn = regexp.MustCompile(`^([0-9,]+) nodes\b`)

// todaysFigures reads performance.md's table of figures: row label, then
// node count, then the cell as written ("69 MiB").
func todaysFigures(t *testing.T) map[string]map[string]string {
	t.Helper()
	table := tableUnder(t, readRepo(t, "docs/performance.md"), "## Today's figures")
	nodes := make([]string, len(table.header))
	for i, cell := range table.header {
		if m := nodeColumn.FindStringSubmatch(cell); m != nil {
			require.NotContains(t, nodes, m[1], "performance.md's figures have two columns headed %q: the sizing table would quote either", m[0])
			nodes[i] = m[1]
		}
	}
	figures := map[string]map[string]string{}
	for _, row := range table.rows {
		byNodes := map[string]string{}
		for i := 1; i < len(row) && i < len(nodes); i++ {
			if nodes[i] != "" {
				byNodes[nodes[i]] = row[i]
			}
		}
		figures[row[0]] = byNodes
	}
	require.NotEmpty(t, figures["peak RSS"], "performance.md's figures have a peak RSS row by node count")
	return figures
}

// The sizing table's measured peaks are today's figures, cell for cell.
func TestTheSizingTableQuotesTodaysPeakRSS(t *testing.T) {
	peaks := todaysFigures(t)["peak RSS"]
	table := tableUnder(t, readRepo(t, "docs/operating.md"), "### Sizing the pod")
	nodesAt, peakAt := -1, -1
	for i, cell := range table.header {
		switch cell {
		case "nodes":
			nodesAt = i
		case "peak RSS measured":
			peakAt = i
		}
	}
	require.True(t, nodesAt >= 0 && peakAt >= 0, "the sizing table has columns nodes and peak RSS measured: %q", table.header)
	require.NotEmpty(t, table.rows)
	for _, row := range table.rows {
		require.Greater(t, len(row), peakAt, "sizing row %q", row)
		nodes := row[nodesAt]
		want, measured := peaks[nodes]
		// A cell of the bench's table may follow its median with the range.
		want, _, _ = strings.Cut(want, " (")
		if assert.True(t, measured, "performance.md's table has no peak RSS at %s nodes, which the sizing table sizes", nodes) {
			assert.Equal(t, want, row[peakAt], "operating.md's sizing table, peak RSS at %s nodes: it must be performance.md's (\"Today's figures\")", nodes)
		}
	}
}

// mebibytes is a memory figure as the measurements state it ("69 MiB");
// the manifests' quantities ("160Mi") are settings, not measurements.
var mebibytes = regexp.MustCompile(`[0-9][0-9.,–-]*\s*MiB\b`)

// The manifests' comments on memory point to performance.md and state no
// measured peak of their own.
func TestTheManifestsPointToTheMeasuredPeaks(t *testing.T) {
	for _, file := range []string{"charts/nhc-controller/values.yaml", "manifests/deploy/deployment.yaml"} {
		var comments []string
		for _, line := range strings.Split(readRepo(t, file), "\n") {
			if _, comment, found := strings.Cut(line, "#"); found {
				comments = append(comments, comment)
			}
		}
		text := strings.Join(strings.Fields(strings.Join(comments, " ")), " ")
		assert.True(t, strings.Contains(text, "Measured peak resident memory: docs/performance.md"), "%s's comment on memory points to docs/performance.md", file)
		assert.Empty(t, mebibytes.FindAllString(text, -1), "%s states a measured peak: leave it to docs/performance.md's table", file)
	}
}

// headlineSubject is what the bench's headline figures measure (and GOGC,
// whose measured effect decisions.md records), and headlineFigure a number
// in their units: a sentence with both restates one. "heartbeat" alone
// would take in the keepalive's timeouts.
var (
	headlineSubject = regexp.MustCompile(`(?i)\bp99\b|peak RSS|per heartbeat|heartbeat costs|per change|start-up|\bGOGC\b`)
	headlineFigure  = regexp.MustCompile(`[0-9]\s?(?:ms|s|MiB)\b`)
)

// sentenceEnd ends a sentence: a stop followed by a space, not a decimal
// point.
var sentenceEnd = regexp.MustCompile(`[.!?]\s+`)

// sentence is a sentence of a Markdown file and the line it starts on
// (1-based).
type sentence struct {
	line int
	text string
}

// listItem is a list item's text without its marker.
func listItem(line string) (string, bool) {
	for _, marker := range []string{"- ", "* "} {
		if item, found := strings.CutPrefix(line, marker); found {
			return item, true
		}
	}
	return line, false
}

// proseSentences splits a Markdown file into sentences, a table's cells
// each on their own, skipping code blocks and the lines skip says.
func proseSentences(text string, skip func(line int) bool) []sentence {
	var found []sentence
	split := func(paragraph string, line int) {
		at := 0
		for _, end := range append(sentenceEnd.FindAllStringIndex(paragraph, -1), []int{len(paragraph), len(paragraph)}) {
			if s := strings.TrimSpace(paragraph[at:end[0]]); s != "" {
				found = append(found, sentence{line: line + strings.Count(paragraph[:at], "\n"), text: strings.Join(strings.Fields(s), " ")})
			}
			at = end[1]
		}
	}
	var paragraph []string
	paragraphLine := 0
	flush := func() {
		split(strings.Join(paragraph, "\n"), paragraphLine)
		paragraph = nil
	}
	inCode := false
	for i, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, "```"):
			flush()
			inCode = !inCode
		case inCode || skip(i):
		case strings.HasPrefix(trimmed, "|"):
			flush()
			for _, cell := range tableCells(trimmed) {
				split(cell, i+1)
			}
		case trimmed == "" || strings.HasPrefix(trimmed, "#"):
			flush()
		default:
			if item, isItem := listItem(trimmed); isItem {
				flush()
				trimmed = item
			}
			if paragraph == nil {
				paragraphLine = i + 1
			}
			paragraph = append(paragraph, trimmed)
		}
	}
	flush()
	return found
}

// sectionLines are the lines (0-based) of a Markdown section: from its
// heading to the next heading of its level or above.
func sectionLines(t *testing.T, text, heading string) (first, last int) {
	t.Helper()
	lines := strings.Split(text, "\n")
	level := len(heading) - len(strings.TrimLeft(heading, "#"))
	first = -1
	for i, line := range lines {
		switch {
		case first < 0 && strings.TrimSpace(line) == heading:
			first = i
		case first >= 0 && strings.HasPrefix(line, "#") && len(line)-len(strings.TrimLeft(line, "#")) <= level:
			return first, i - 1
		}
	}
	require.GreaterOrEqual(t, first, 0, "no heading %q", heading)
	return first, len(lines) - 1
}

// No doc restates the bench's headline figures in prose, performance.md's
// own prose included: its table of today's figures is their one home, and
// its trend section states how far they move between runs. decisions.md
// and CHANGELOG.md are exempt: they record figures as they were, the
// reasons of what was decided then.
func TestOnlyPerformanceMdStatesTheBenchsFigures(t *testing.T) {
	root := controlplane.RepoRoot()
	files := userDocs(t)
	sizing := tableUnder(t, readRepo(t, "docs/operating.md"), "### Sizing the pod")
	performance := readRepo(t, "docs/performance.md")
	today := tableUnder(t, performance, "## Today's figures")
	trendFirst, trendLast := sectionLines(t, performance, "## The trend")
	checked := 0
	for _, file := range files {
		rel, err := filepath.Rel(root, file)
		require.NoError(t, err)
		if rel == "docs/decisions.md" {
			continue
		}
		skip := func(int) bool { return false }
		switch rel {
		case "docs/operating.md":
			// Held to performance.md's figures by TestTheSizingTableQuotesTodaysPeakRSS.
			skip = func(line int) bool { return line >= sizing.first && line <= sizing.last }
		case "docs/performance.md":
			skip = func(line int) bool {
				return line >= today.first && line <= today.last || line >= trendFirst && line <= trendLast
			}
		}
		for _, s := range proseSentences(readRepo(t, rel), skip) {
			if headlineSubject.MatchString(s.text) && headlineFigure.MatchString(s.text) {
				t.Errorf("%s:%d restates a figure of make scale: %q; state it in docs/performance.md's table and link there", rel, s.line, s.text)
			}
		}
		checked++
	}
	assert.Greater(t, checked, 5, "the docs checked")
}
