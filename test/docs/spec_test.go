package docs

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nodehealthcheck/nhc-controller/test/controlplane"
)

// The spec is a checked table: docs/spec.md has a row for every normative
// sentence and every example block of the spec vendored under
// docs/upstream-spec, and every test a row names exists. A sentence the
// spec gains, or a test renamed, fails here instead of going unread.

const (
	specDir   = "docs/upstream-spec"
	specTable = "docs/spec.md"
)

// specItem is a sentence or an example block (a fenced code block) of the
// spec, known by its file and the line it starts on.
type specItem struct {
	file    string
	line    int
	text    string // the sentence, as written; empty for an example
	example bool
}

func (i specItem) String() string {
	if i.example {
		return fmt.Sprintf("%s:%d example block", i.file, i.line)
	}
	return fmt.Sprintf("%s:%d %q", i.file, i.line, i.text)
}

var (
	// normativeWord marks a sentence that says what must happen.
	normativeWord = regexp.MustCompile(`(?i)\b(must|should|will|never|only)\b`)
	whenThen      = regexp.MustCompile(`(?i)\bwhen\b.*\bthen\b`)
	listMarker    = regexp.MustCompile(`^([-*+•]|\d+[.)])\s+`)
	tableRule     = regexp.MustCompile(`^\|[\s|:-]*$`)
	heading       = regexp.MustCompile(`^#{1,6}(\s|$)`)
	mdLink        = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
	// abbreviation ends a word whose period ends no sentence.
	abbreviation = regexp.MustCompile(`(?i)(\be\.g|\bi\.e|\beg|\bie|\betc|\bvs)\.$`)
)

// normative tells whether a sentence must have a row.
func (i specItem) normative() bool {
	if i.example {
		return true
	}
	s := normalize(i.text)
	return normativeWord.MatchString(s) || whenThen.MatchString(s)
}

// normalize makes a sentence and its quote comparable: link targets,
// emphasis, code marks, quotes and line breaks do not count.
func normalize(s string) string {
	s = mdLink.ReplaceAllString(s, "$1")
	s = strings.NewReplacer("*", "", "_", "", "`", "", `\`, "", `"`, "", "“", "", "”", "", "'", "", "’", "").Replace(s)
	return strings.ToLower(strings.Join(strings.Fields(s), " "))
}

// unit is a paragraph, list item or table cell: text joined from lines,
// with where each line starts.
type unit struct {
	text   strings.Builder
	starts []int // offset in text of each line
	lines  []int // its line number
}

func (u *unit) add(line int, s string) {
	if u.text.Len() > 0 {
		u.text.WriteByte(' ')
	}
	u.starts = append(u.starts, u.text.Len())
	u.lines = append(u.lines, line)
	u.text.WriteString(s)
}

// lineAt is the line of the text at offset.
func (u *unit) lineAt(offset int) int {
	i := 0
	for i+1 < len(u.starts) && u.starts[i+1] <= offset {
		i++
	}
	return u.lines[i]
}

// sentences splits a unit at a period, question or exclamation mark
// followed by a space and no lower-case letter, unless it ends an
// abbreviation.
func (u *unit) sentences(file string) []specItem {
	text := u.text.String()
	var items []specItem
	start := 0
	emit := func(end int) {
		s := strings.TrimSpace(text[start:end])
		if s != "" {
			lead := start + strings.Index(text[start:end], s)
			items = append(items, specItem{file: file, line: u.lineAt(lead), text: s})
		}
		start = end
	}
	for i := 0; i+1 < len(text); i++ {
		if !strings.ContainsRune(".!?", rune(text[i])) || text[i+1] != ' ' {
			continue
		}
		rest := strings.TrimLeft(text[i+1:], " ")
		if rest == "" || (rest[0] >= 'a' && rest[0] <= 'z') || abbreviation.MatchString(text[start:i+1]) {
			continue
		}
		emit(i + 1)
	}
	emit(len(text))
	return items
}

// specItems reads a spec file: its sentences outside code blocks (each
// paragraph, list item and table cell on its own; headings are the
// sections' titles, YAML front matter is metadata) and its example blocks.
func specItems(file, text string) []specItem {
	var items []specItem
	u := &unit{}
	flush := func() {
		items = append(items, u.sentences(file)...)
		u = &unit{}
	}
	lines := strings.Split(text, "\n")
	frontMatter := len(lines) > 0 && lines[0] == "---"
	inCode := false
	for i, raw := range lines {
		n := i + 1
		line := strings.TrimSpace(raw)
		switch {
		case frontMatter:
			frontMatter = i == 0 || line != "---"
		case inCode:
			inCode = !strings.HasPrefix(line, "```")
		case strings.HasPrefix(line, "```"):
			flush()
			inCode = true
			items = append(items, specItem{file: file, line: n, example: true})
		default:
			for strings.HasPrefix(line, ">") {
				line = strings.TrimSpace(line[1:])
			}
			switch {
			case line == "" || heading.MatchString(line):
				flush()
			case strings.HasPrefix(line, "|"):
				flush()
				if tableRule.MatchString(line) {
					continue
				}
				for _, cell := range specCells(line) {
					u.add(n, cell)
					flush()
				}
			case listMarker.MatchString(line):
				flush()
				u.add(n, listMarker.ReplaceAllString(line, ""))
			default:
				u.add(n, line)
			}
		}
	}
	flush()
	return items
}

// specCells are a table row's cells, trimmed; a `\|` stays in its cell.
func specCells(row string) []string {
	rest := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(row), "|"), "|")
	var cells []string
	for i := nextBar(rest); i >= 0; i = nextBar(rest) {
		cells = append(cells, strings.TrimSpace(rest[:i]))
		rest = rest[i+1:]
	}
	return append(cells, strings.TrimSpace(rest))
}

// nextBar is the offset of the next unescaped bar, or -1.
func nextBar(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] == '|' && (i == 0 || s[i-1] != '\\') {
			return i
		}
	}
	return -1
}

// specRow is a row of docs/spec.md.
type specRow struct {
	at      int // its line in docs/spec.md
	file    string
	line    int
	quote   string // empty for an example
	example bool
	reading string
	tests   []string // empty with "—"
}

var (
	rowKey    = regexp.MustCompile("^`([A-Za-z0-9.-]+\\.md):([0-9]+)`\\s*(.*)$")
	testName  = regexp.MustCompile("`((?:Test|Fuzz)[A-Za-z0-9_]*(?:/[^`]+)?)`")
	testFuncs = regexp.MustCompile(`(?m)^func ((?:Test|Fuzz)[A-Za-z0-9_]*)\(`)
)

// specRows reads docs/spec.md's rows: a table row whose first cell starts
// with `file.md:line`. A malformed one is a problem, not a row.
func specRows(text string) (rows []specRow, problems []string) {
	for i, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "|") {
			continue
		}
		cells := specCells(line)
		m := rowKey.FindStringSubmatch(cells[0])
		if m == nil {
			continue
		}
		where := fmt.Sprintf("%s:%d", specTable, i+1)
		if len(cells) != 4 {
			problems = append(problems, fmt.Sprintf("%s: %d cells, want 4 (Spec, Our reading, Upstream, Tests)", where, len(cells)))
			continue
		}
		r := specRow{at: i + 1, file: m[1], reading: cells[1]}
		r.line, _ = strconv.Atoi(m[2])
		rest := strings.TrimSpace(m[3])
		open, closing := strings.Index(rest, "“"), strings.LastIndex(rest, "”")
		switch {
		case strings.HasPrefix(rest, "Example"):
			r.example = true
		case open >= 0 && closing > open:
			r.quote = rest[open+len("“") : closing]
		default:
			problems = append(problems, where+": the Spec cell holds neither “a quote” nor Example")
			continue
		}
		tests := strings.TrimSpace(cells[3])
		if tests == "—" {
			if !strings.Contains(r.reading, "No test:") {
				problems = append(problems, where+": a row without tests says why in its reading (No test: ...)")
			}
		} else {
			for _, t := range testName.FindAllStringSubmatch(tests, -1) {
				r.tests = append(r.tests, t[1])
			}
			if strings.Trim(testName.ReplaceAllString(tests, ""), ", ") != "" || len(r.tests) == 0 {
				problems = append(problems, where+": the Tests cell holds `TestName`s separated by commas, or — with a reason")
			}
		}
		rows = append(rows, r)
	}
	return rows, problems
}

// matches tells whether a row quotes an item: the quote's parts (split at
// "…") appear in order in the sentence, or the sentence is within the quote.
func (r specRow) matches(i specItem) bool {
	if r.file != i.file || r.line != i.line || r.example != i.example {
		return false
	}
	if r.example {
		return true
	}
	sentence, quote := normalize(i.text), normalize(r.quote)
	if quote != "" && strings.Contains(quote, sentence) {
		return true
	}
	rest := sentence
	for _, part := range strings.Split(quote, "…") {
		part = strings.TrimSpace(part)
		at := strings.Index(rest, part)
		if part == "" || at < 0 {
			return false
		}
		rest = rest[at+len(part):]
	}
	return true
}

// readSpec reads every vendored spec file's items.
func readSpec(t *testing.T) []specItem {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(controlplane.RepoRoot(), specDir, "*.md"))
	require.NoError(t, err)
	var items []specItem
	for _, f := range files {
		if filepath.Base(f) == "README.md" {
			continue
		}
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		items = append(items, specItems(filepath.Base(f), string(data))...)
	}
	require.NotEmpty(t, items, "the vendored spec")
	return items
}

// testsInRepo maps each Test and Fuzz function under pkg, test, cmd and
// hack to its file's text.
func testsInRepo(t *testing.T) map[string]string {
	t.Helper()
	found := map[string]string{}
	for _, dir := range []string{"pkg", "test", "cmd", "hack"} {
		err := filepath.WalkDir(filepath.Join(controlplane.RepoRoot(), dir), func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, "_test.go") {
				return err
			}
			data, err := os.ReadFile(path)
			for _, m := range testFuncs.FindAllStringSubmatch(string(data), -1) {
				found[m[1]] = string(data)
			}
			return err
		})
		require.NoError(t, err)
	}
	return found
}

// testExists tells whether a row's test exists: TestX as a function,
// TestX/sub as one whose file names the subtest.
func testExists(tests map[string]string, name string) bool {
	fn, sub, hasSub := strings.Cut(name, "/")
	src, ok := tests[fn]
	if !ok || !hasSub {
		return ok
	}
	return strings.Contains(src, sub) || strings.Contains(src, strings.ReplaceAll(sub, "_", " "))
}

// Every normative sentence and example block of the spec has a row in
// docs/spec.md; every row quotes the spec where it says, and names tests
// that exist.
func TestTheSpecTableCoversTheSpec(t *testing.T) {
	items := readSpec(t)
	rows, problems := specRows(readRepo(t, specTable))
	require.NotEmpty(t, rows, specTable)
	tests := testsInRepo(t)
	for _, r := range rows {
		if !slices.ContainsFunc(items, r.matches) {
			what := fmt.Sprintf("“%s”", r.quote)
			if r.example {
				what = "an example block"
			}
			problems = append(problems, fmt.Sprintf("%s:%d: %s:%d has no %s (line numbers are the vendored copy's)", specTable, r.at, r.file, r.line, what))
		}
		for _, name := range r.tests {
			if !testExists(tests, name) {
				problems = append(problems, fmt.Sprintf("%s:%d: no test %s under pkg, test, cmd or hack", specTable, r.at, name))
			}
		}
	}
	for _, i := range items {
		if i.normative() && !slices.ContainsFunc(rows, func(r specRow) bool { return r.matches(i) }) {
			problems = append(problems, "no row for "+i.String())
		}
	}
	if len(problems) > 0 {
		t.Errorf("%s against %s, %d problems:\n%s", specTable, specDir, len(problems), strings.Join(problems, "\n"))
	}
}
