package license

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// goBSD is the Go project's licence, as golang.org/x/net ships it.
const goBSD = `Copyright 2009 The Go Authors.

Redistribution and use in source and binary forms, with or without
modification, are permitted provided that the following conditions are
met:

   * Redistributions of source code must retain the above copyright
notice, this list of conditions and the following disclaimer.
   * Redistributions in binary form must reproduce the above
copyright notice, this list of conditions and the following disclaimer
in the documentation and/or other materials provided with the
distribution.
   * Neither the name of Google LLC nor the names of its
contributors may be used to endorse or promote products derived from
this software without specific prior written permission.

THIS SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS AND CONTRIBUTORS
"AS IS" AND ANY EXPRESS OR IMPLIED WARRANTIES, INCLUDING, BUT NOT
LIMITED TO, THE IMPLIED WARRANTIES OF MERCHANTABILITY AND FITNESS FOR
A PARTICULAR PURPOSE ARE DISCLAIMED. IN NO EVENT SHALL THE COPYRIGHT
OWNER OR CONTRIBUTORS BE LIABLE FOR ANY DIRECT, INDIRECT, INCIDENTAL,
SPECIAL, EXEMPLARY, OR CONSEQUENTIAL DAMAGES (INCLUDING, BUT NOT
LIMITED TO, PROCUREMENT OF SUBSTITUTE GOODS OR SERVICES; LOSS OF USE,
DATA, OR PROFITS; OR BUSINESS INTERRUPTION) HOWEVER CAUSED AND ON ANY
THEORY OF LIABILITY, WHETHER IN CONTRACT, STRICT LIABILITY, OR TORT
(INCLUDING NEGLIGENCE OR OTHERWISE) ARISING IN ANY WAY OUT OF THE USE
OF THIS SOFTWARE, EVEN IF ADVISED OF THE POSSIBILITY OF SUCH DAMAGE.
`

// spewISC is go-spew's licence.
const spewISC = `ISC License

Copyright (c) 2012-2016 Dave Collins <dave@davec.name>

Permission to use, copy, modify, and/or distribute this software for any
purpose with or without fee is hereby granted, provided that the above
copyright notice and this permission notice appear in all copies.

THE SOFTWARE IS PROVIDED "AS IS" AND THE AUTHOR DISCLAIMS ALL WARRANTIES
WITH REGARD TO THIS SOFTWARE INCLUDING ALL IMPLIED WARRANTIES OF
MERCHANTABILITY AND FITNESS. IN NO EVENT SHALL THE AUTHOR BE LIABLE FOR
ANY SPECIAL, DIRECT, INDIRECT, OR CONSEQUENTIAL DAMAGES OR ANY DAMAGES
WHATSOEVER RESULTING FROM LOSS OF USE, DATA OR PROFITS, WHETHER IN AN
ACTION OF CONTRACT, NEGLIGENCE OR OTHER TORTIOUS ACTION, ARISING OUT OF
OR IN CONNECTION WITH THE USE OR PERFORMANCE OF THIS SOFTWARE.
`

const zeroBSD = `Copyright (C) 2024 by Someone

Permission to use, copy, modify, and/or distribute this software for any purpose with or without fee is hereby granted.

THE SOFTWARE IS PROVIDED "AS IS" AND THE AUTHOR DISCLAIMS ALL WARRANTIES WITH REGARD TO THIS SOFTWARE INCLUDING ALL IMPLIED WARRANTIES OF MERCHANTABILITY AND FITNESS. IN NO EVENT SHALL THE AUTHOR BE LIABLE FOR ANY SPECIAL, DIRECT, INDIRECT, OR CONSEQUENTIAL DAMAGES OR ANY DAMAGES WHATSOEVER RESULTING FROM LOSS OF USE, DATA OR PROFITS, WHETHER IN AN ACTION OF CONTRACT, NEGLIGENCE OR OTHER TORTIOUS ACTION, ARISING OUT OF OR IN CONNECTION WITH THE USE OR PERFORMANCE OF THIS SOFTWARE.
`

const mit = `The MIT License (MIT)

Copyright (c) 2014 Sam Ghods

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
`

const apacheNotice = `Copyright 2014 The Kubernetes Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
`

// advertising is the BSD licence's fourth clause, which no text here holds.
const advertising = `
4. All advertising materials mentioning features or use of this software
   must display the following acknowledgement: This product includes
   software developed by the organization.
`

func TestIdentify(t *testing.T) {
	for _, tt := range []struct {
		name, text string
		want       []string
		refused    string
	}{
		{name: "the Go licence", text: goBSD, want: []string{"BSD-3-Clause"}},
		{name: "ISC", text: spewISC, want: []string{"ISC"}},
		{name: "0BSD", text: zeroBSD, want: []string{"0BSD"}},
		{name: "MIT", text: mit, want: []string{"MIT"}},
		{name: "Apache's notice", text: apacheNotice, want: []string{"Apache-2.0"}},
		{name: "two licences", text: mit + "\n\n" + goBSD, want: []string{"BSD-3-Clause", "MIT"}},
		{name: "rewrapped and renumbered", text: strings.ReplaceAll(strings.ReplaceAll(goBSD, "\n", " "), "   * ", "\n1. "), want: []string{"BSD-3-Clause"}},
		{name: "a clause no licence here has", text: goBSD + advertising, refused: "terms no known licence covers (must)"},
		{name: "a changed term", text: strings.Replace(mit, "free of charge", "for a fee", 1), refused: "no known licence's full text"},
		{name: "nothing", text: "All rights reserved.", refused: "no known licence's full text"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Identify(tt.text)
			if tt.refused != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.refused)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

// Verify refuses what the SBOM of cyclonedx-gomod -assert-licenses said
// of golang.org/x/* and go-spew, and accepts what their files say.
func TestVerify(t *testing.T) {
	for _, tt := range []struct {
		name, claim string
		files       map[string]string
		refused     string
	}{
		{name: "x/net as its file says", claim: "BSD-3-Clause", files: map[string]string{"LICENSE": goBSD}},
		{name: "x/net as BSD-Source-Code", claim: "BSD-Source-Code", files: map[string]string{"LICENSE": goBSD}, refused: "holds none of BSD-Source-Code"},
		{name: "go-spew as its file says", claim: "ISC", files: map[string]string{"LICENSE": spewISC}},
		{name: "go-spew as 0BSD", claim: "0BSD", files: map[string]string{"LICENSE": spewISC}, refused: "holds none of 0BSD"},
		{name: "two files, both named", claim: "Apache-2.0 AND MIT", files: map[string]string{"LICENSE": apacheNotice, "LICENSE.libyaml": mit}},
		{name: "two files, one named", claim: "Apache-2.0", files: map[string]string{"LICENSE": apacheNotice, "LICENSE.libyaml": mit}, refused: "LICENSE.libyaml holds none of Apache-2.0"},
		{name: "a licence no file holds", claim: "MIT AND ISC", files: map[string]string{"LICENSE": mit}, refused: "no licence file holds ISC's text"},
		{name: "no licence file", claim: "MIT", files: map[string]string{"README.md": mit}, refused: "has no licence file"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, text := range tt.files {
				require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
			}
			err := Verify(tt.claim, dir)
			if tt.refused != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.refused)
				return
			}
			require.NoError(t, err)
		})
	}
}

// Every module the controller and the plugin are built from has licence
// files this package identifies, and what it identifies verifies: a new
// dependency under a licence nobody checked fails here, not in a release.
func TestEveryShippedModulesLicenceIsIdentified(t *testing.T) {
	root, err := filepath.Abs("../../..")
	require.NoError(t, err)
	list := exec.Command("go", "list", "-deps", "-f", "{{with .Module}}{{if not .Main}}{{.Path}}@{{.Version}} {{.Dir}}{{end}}{{end}}", "./cmd/nhc-controller", "./cmd/kubectl-nhc")
	list.Dir = root
	out, err := list.Output()
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		module, dir, ok := strings.Cut(line, " ")
		if !ok || seen[module] {
			continue
		}
		seen[module] = true
		claim, _, err := Module(dir)
		if assert.NoError(t, err, module) {
			assert.NoError(t, Verify(claim, dir), "%s: %s", module, claim)
		}
	}
	assert.Greater(t, len(seen), 50, "the modules read")
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	require.NoError(t, err)
	claim, _, err := Module(strings.TrimSpace(string(goroot)))
	require.NoError(t, err)
	assert.Equal(t, "BSD-3-Clause", claim, "the standard library")
}
