// Package license identifies the licences of Go modules from their licence
// files, by the licences' full texts: what an SBOM states is then what the
// files say, not a guess from a few words.
package license

import (
	"embed"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// The licence texts a module's licence files are matched against, whole:
// a file is a licence's only when that licence's full text is in it, with
// only names, years and formatting differing. <<var>> stands for a name
// (the copyright holder's), up to maxVar words.
//
//go:embed texts/*.txt
var licenseTexts embed.FS

// licenseFiles are the SPDX identifiers of the texts; "" is boilerplate
// that grants nothing (Apache's how-to-apply appendix).
var licenseFiles = map[string]string{
	"apache-2.0.txt":          "Apache-2.0",
	"apache-2.0-notice.txt":   "Apache-2.0",
	"apache-2.0-appendix.txt": "",
	"bsd-3-clause.txt":        "BSD-3-Clause",
	// The third clause as go-difflib words it.
	"bsd-3-clause-names.txt": "BSD-3-Clause",
	"bsd-2-clause.txt":       "BSD-2-Clause",
	"mit.txt":                "MIT",
	"isc.txt":                "ISC",
	"0bsd.txt":               "0BSD",
}

// maxVar is the most words a <<var>> stands for.
const maxVar = 12

// legalWords in text no known licence covers mean terms nobody checked.
var legalWords = []string{"granted", "permitted", "redistribution", "redistributions", "warranty", "warranties", "liable", "restriction", "restrictions", "prohibited", "shall", "must"}

// licenseFileName is a module's licence file at its root: LICENSE,
// LICENSE.txt, LICENCE, COPYING, LICENSE.libyaml, LICENSE-MIT.
var licenseFileName = regexp.MustCompile(`(?i)^(licen[cs]e|copying)([.-].*)?$`)

// word is a token of a text and the line it is on.
type word struct {
	text string
	line int
}

// words splits a text into lower-case words of letters and digits.
func words(text string) []word {
	var found []word
	for i, line := range strings.Split(strings.ToLower(text), "\n") {
		for _, w := range strings.FieldsFunc(line, func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '<' || r == '>') }) {
			// Numbers and single letters are years and list markers, which
			// copies of a licence number differently or leave out.
			if len(w) > 1 && strings.Trim(w, "0123456789") != "" {
				if w == "https" {
					w = "http"
				}
				found = append(found, word{w, i})
			}
		}
	}
	return found
}

// template is a licence text as words, "<<var>>" among them.
type template struct {
	id    string
	words []string
}

func templates() ([]template, error) {
	var all []template
	for file, id := range licenseFiles {
		data, err := licenseTexts.ReadFile("texts/" + file)
		if err != nil {
			return nil, err
		}
		var t template
		t.id = id
		for _, w := range words(string(data)) {
			t.words = append(t.words, w.text)
		}
		all = append(all, t)
	}
	// Longest first: Apache's notice is also in its appendix.
	slices.SortFunc(all, func(a, b template) int { return len(b.words) - len(a.words) })
	return all, nil
}

// matchAt returns where the template ends when it matches the text's words
// from at, or -1.
func matchAt(t []string, text []word, at int) int {
	if len(t) == 0 {
		return at
	}
	if t[0] == "<<var>>" {
		for n := 0; n <= maxVar && at+n <= len(text); n++ {
			if end := matchAt(t[1:], text, at+n); end >= 0 {
				return end
			}
		}
		return -1
	}
	if at >= len(text) || text[at].text != t[0] {
		return -1
	}
	return matchAt(t[1:], text, at+1)
}

// Identify names the licences whose full texts a licence file holds, and
// fails when it holds none, or legal terms none of them covers.
func Identify(text string) ([]string, error) {
	all, err := templates()
	if err != nil {
		return nil, err
	}
	ws := words(text)
	covered := make([]bool, len(ws))
	var ids []string
	for _, t := range all {
		for at := 0; at < len(ws); at++ {
			if covered[at] {
				continue
			}
			end := matchAt(t.words, ws, at)
			if end < 0 {
				continue
			}
			for i := at; i < end; i++ {
				covered[i] = true
			}
			if t.id != "" && !slices.Contains(ids, t.id) {
				ids = append(ids, t.id)
			}
			at = end - 1
		}
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("no known licence's full text")
	}
	lines := strings.Split(text, "\n")
	var left []string
	for i, w := range ws {
		if !covered[i] && !copyrightLine(lines[w.line]) && slices.Contains(legalWords, w.text) {
			left = append(left, w.text)
		}
	}
	if len(left) > 0 {
		return nil, fmt.Errorf("%s, and terms no known licence covers (%s)", strings.Join(ids, " and "), strings.Join(left, ", "))
	}
	slices.Sort(ids)
	return ids, nil
}

// copyrightLine is a line that states a copyright, not a licence's terms.
func copyrightLine(line string) bool {
	l := strings.ToLower(strings.TrimSpace(line))
	return strings.HasPrefix(l, "copyright") && !strings.HasPrefix(l, "copyright notice") || strings.HasPrefix(l, "(c)") || strings.Contains(l, "all rights reserved")
}

// Module identifies the licences of a module's files at its root: one
// SPDX identifier, or an expression of several ("Apache-2.0 AND MIT"), and
// the files it read.
func Module(dir string) (string, []string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", nil, err
	}
	var ids, files []string
	for _, e := range entries {
		if !e.Type().IsRegular() || !licenseFileName.MatchString(e.Name()) {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return "", nil, err
		}
		found, err := Identify(string(data))
		if err != nil {
			return "", nil, fmt.Errorf("%s: %w", e.Name(), err)
		}
		files = append(files, e.Name())
		for _, id := range found {
			if !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	if len(ids) == 0 {
		return "", nil, fmt.Errorf("%s has no licence file", dir)
	}
	slices.Sort(ids)
	return strings.Join(ids, " AND "), files, nil
}

// holds says whether a text holds the full text of the licence id.
func holds(id, text string) (bool, error) {
	all, err := templates()
	if err != nil {
		return false, err
	}
	ws := words(text)
	for _, t := range all {
		if t.id != id {
			continue
		}
		for at := range ws {
			if matchAt(t.words, ws, at) >= 0 {
				return true, nil
			}
		}
	}
	return false, nil
}

// Verify checks what an SBOM states of a module's licence against the
// module's licence files: each licence it names is in full in one of
// them, and each of them holds one it names.
func Verify(claim, dir string) error {
	ids := strings.Split(claim, " AND ")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	found := map[string]bool{}
	files := 0
	for _, e := range entries {
		if !e.Type().IsRegular() || !licenseFileName.MatchString(e.Name()) {
			continue
		}
		files++
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return err
		}
		named := false
		for _, id := range ids {
			ok, err := holds(id, string(data))
			if err != nil {
				return err
			}
			found[id] = found[id] || ok
			named = named || ok
		}
		if !named {
			return fmt.Errorf("%s holds none of %s", e.Name(), claim)
		}
	}
	if files == 0 {
		return fmt.Errorf("%s has no licence file", dir)
	}
	for _, id := range ids {
		if !found[id] {
			return fmt.Errorf("no licence file holds %s's text", id)
		}
	}
	return nil
}
