// Command release-notes checks a release's version and prints its section
// of CHANGELOG.md, or says why there is none. make release runs it before
// anything is built, so that a missing section fails in seconds.
//
//	go run ./hack/release-notes vX.Y.Z
package main

import (
	"fmt"
	"os"

	"github.com/nodehealthcheck/nhc-controller/hack/internal/changelog"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: release-notes vX.Y.Z")
		os.Exit(2)
	}
	version := os.Args[1]
	notes, err := notes(version)
	if err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
	fmt.Print(notes)
}

func notes(version string) (string, error) {
	if err := changelog.Check(version); err != nil {
		return "", err
	}
	return changelog.Notes("CHANGELOG.md", version)
}
