package docs

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nodehealthcheck/nhc-controller/test/controlplane"
)

// The extractor reads what a reader reads: sentences of paragraphs, list
// items, quotes and table cells, each at the line it starts on, and every
// code block as an example; front matter and headings are no sentences.
func TestSpecItemsAreReadAsWritten(t *testing.T) {
	text := "---\ntitle: it will\n---\n# A heading should not count\n\n" +
		"One sentence. Another must hold, e.g. this\none too! When x, then y.\n\n" +
		"- a list item will\ncontinue here\n> - a quoted one should\n\n" +
		"| Field | Description |\n|---|---|\n| _a_ | Cell one. Cell `x\\|y` must. |\n\n" +
		" ```yaml\nkey: must\n  ```\nAfter [the link](https://example.com/a.b). Never.\n"
	want := []specItem{
		{file: "f.md", line: 6, text: "One sentence."},
		{file: "f.md", line: 6, text: "Another must hold, e.g. this one too!"},
		{file: "f.md", line: 7, text: "When x, then y."},
		{file: "f.md", line: 9, text: "a list item will continue here"},
		{file: "f.md", line: 11, text: "a quoted one should"},
		{file: "f.md", line: 13, text: "Field"},
		{file: "f.md", line: 13, text: "Description"},
		{file: "f.md", line: 15, text: "_a_"},
		{file: "f.md", line: 15, text: "Cell one."},
		{file: "f.md", line: 15, text: "Cell `x\\|y` must."},
		{file: "f.md", line: 17, example: true},
		{file: "f.md", line: 20, text: "After [the link](https://example.com/a.b)."},
		{file: "f.md", line: 20, text: "Never."},
	}
	items := specItems("f.md", text)
	assert.Equal(t, want, items)
	var normative []int
	for i, item := range items {
		if item.normative() {
			normative = append(normative, i)
		}
	}
	assert.Equal(t, []int{1, 2, 3, 4, 9, 10, 12}, normative)

	row := specRow{file: "f.md", line: 6, quote: "another must … one too"}
	assert.True(t, row.matches(items[1]), "a quote may leave words out")
	row.quote = "one too … another must"
	assert.False(t, row.matches(items[1]), "but keeps their order")
	row.quote = "Another **must** hold, e.g. this one too! And more."
	assert.True(t, row.matches(items[1]), "a quote may hold the whole sentence and more")
	row.line = 7
	assert.False(t, row.matches(items[1]), "at the line the sentence starts on")
}

// A row names tests, or says why none applies.
func TestSpecRowsAreReadAsWritten(t *testing.T) {
	rows, problems := specRows("| Spec | Our reading | Upstream | Tests |\n|---|---|---|---|\n" +
		"| `f.md:6` “Another must” | as written | same | `TestA`, `TestB/a,_b` |\n" +
		"| `f.md:17` Example: a block | No test: a remediator's duty. | | — |\n" +
		"| `f.md:20` “Never.” | as written | | — |\n" +
		"| `f.md:20` “Never.” | as written | | TestC |\n" +
		"| `f.md:20` Never. | as written | | `TestC` |\n")
	require.Len(t, rows, 4)
	assert.Equal(t, specRow{at: 3, file: "f.md", line: 6, quote: "Another must", reading: "as written", tests: []string{"TestA", "TestB/a,_b"}}, rows[0])
	assert.Equal(t, specRow{at: 4, file: "f.md", line: 17, example: true, reading: "No test: a remediator's duty."}, rows[1])
	assert.Equal(t, []string{
		"docs/spec.md:5: a row without tests says why in its reading (No test: ...)",
		"docs/spec.md:6: the Tests cell holds `TestName`s separated by commas, or — with a reason",
		"docs/spec.md:7: the Spec cell holds neither “a quote” nor Example",
	}, problems)

	tests := map[string]string{"TestB": `t.Run("a, b", nil)`}
	assert.True(t, testExists(tests, "TestB"))
	assert.True(t, testExists(tests, "TestB/a,_b"))
	assert.False(t, testExists(tests, "TestB/c"))
	assert.False(t, testExists(tests, "TestA"))
}

// The vendored spec is the shared one, byte for byte, where it can be
// read (a clean clone has only the copy).
func TestTheVendoredSpecIsTheSharedOne(t *testing.T) {
	shared := filepath.Join(controlplane.RepoRoot(), "..", "shared", "spec")
	if _, err := os.Stat(shared); err != nil {
		t.Skipf("no shared spec at %s", shared)
	}
	want, err := filepath.Glob(filepath.Join(shared, "*.md"))
	require.NoError(t, err)
	require.NotEmpty(t, want)
	vendored, err := filepath.Glob(filepath.Join(controlplane.RepoRoot(), specDir, "*.md"))
	require.NoError(t, err)
	names := []string{}
	for _, f := range vendored {
		if filepath.Base(f) != "README.md" {
			names = append(names, filepath.Base(f))
		}
	}
	wantNames := []string{}
	for _, f := range want {
		wantNames = append(wantNames, filepath.Base(f))
		theirs, err := os.ReadFile(f)
		require.NoError(t, err)
		ours, err := os.ReadFile(filepath.Join(controlplane.RepoRoot(), specDir, filepath.Base(f)))
		if assert.NoError(t, err, "%s is vendored", filepath.Base(f)) {
			assert.True(t, string(theirs) == string(ours), "%s/%s differs from %s: copy it again and check %s's rows", specDir, filepath.Base(f), f, specTable)
		}
	}
	assert.ElementsMatch(t, wantNames, names, "the vendored spec files")
}
