// Command release-notes prints a release's notes, its section of
// CHANGELOG.md, after the checks make release makes (hack/release/gate): a
// version only from a clean tree at its tag, with go.mod's toolchain;
// "snapshot" for the tree as it is, with the Unreleased notes.
//
//	go run ./hack/release-notes vX.Y.Z
//	go run ./hack/release-notes snapshot
package main

import (
	"fmt"
	"os"

	"github.com/nodehealthcheck/nhc-controller/hack/internal/changelog"
	"github.com/nodehealthcheck/nhc-controller/hack/release/gate"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: release-notes vX.Y.Z|snapshot")
		os.Exit(2)
	}
	r, err := gate.Check(os.Args[1])
	if err == nil {
		var notes string
		if notes, err = changelog.Notes("CHANGELOG.md", r.Notes()); err == nil {
			fmt.Fprintf(os.Stderr, "release: %s from %.12s, built with %s\n", r.Version, r.Commit, r.Toolchain)
			fmt.Print(notes)
			return
		}
	}
	fmt.Fprintln(os.Stderr, "release:", err)
	os.Exit(1)
}
