package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// builtFromFile, in the output, names what it was built from (treeKey):
// --reuse keeps an output whose key is the tree's.
const builtFromFile = ".built-from"

// treeKey names the content of the tree as git sees it (every file, tracked
// or not, but the ignored ones), the toolchain and the options that shape
// the output: two builds of one key write the same files.
func treeKey(o options, version string) (string, error) {
	index, err := os.CreateTemp("", "release-index-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(index.Name())
	if err := index.Close(); err != nil {
		return "", err
	}
	env := append(os.Environ(), "GIT_INDEX_FILE="+index.Name())
	var tree string
	for _, args := range [][]string{{"read-tree", "HEAD"}, {"add", "-A"}, {"write-tree"}} {
		cmd := exec.Command("git", args...)
		cmd.Env = env
		var out, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &stderr
		if err := cmd.Run(); err != nil {
			return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, stderr.String())
		}
		tree = strings.TrimSpace(out.String())
	}
	goVersion, err := exec.Command("go", "env", "GOVERSION").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOVERSION: %w", err)
	}
	return fmt.Sprintf("tree %s, %s, version %s, only %q, image %s\n", tree, strings.TrimSpace(string(goVersion)), version, o.only, o.repository), nil
}

// builtFrom reads the key an output was built from; "" when it has none.
func builtFrom(output string) string {
	data, err := os.ReadFile(filepath.Join(output, builtFromFile))
	if err != nil {
		return ""
	}
	return string(data)
}
