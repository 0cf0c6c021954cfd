// Package gate decides what make release may build, before anything is
// built: a version only from a clean tree whose HEAD carries its tag, with
// go.mod's toolchain or a newer one; anything else only as a snapshot,
// whose version says it is one.
package gate

import (
	"fmt"
	"go/version"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"golang.org/x/mod/modfile"

	"github.com/nodehealthcheck/nhc-controller/hack/internal/changelog"
)

// Snapshot is the version to ask for a build of whatever the tree holds.
const Snapshot = "snapshot"

// UnreleasedSection is the CHANGELOG.md section a snapshot's notes come from.
const UnreleasedSection = "Unreleased"

// Release is what make release builds.
type Release struct {
	// Version is vX.Y.Z, or a snapshot's v0.0.0-snapshot.<time>.g<commit>.
	Version string
	// Snapshot is true when the tree is not a release's tag.
	Snapshot bool
	// Commit and Time are HEAD's: what the release is built from, and the
	// time every generated file states.
	Commit string
	Time   time.Time
	// Toolchain is the Go that builds it, go1.X.Y.
	Toolchain string
}

// Notes is the CHANGELOG.md section the release's notes are.
func (r Release) Notes() string {
	if r.Snapshot {
		return UnreleasedSection
	}
	return r.Version
}

// Check says what make release builds for the version asked for, or why
// it refuses.
func Check(requested string) (Release, error) {
	var r Release
	var err error
	if r.Toolchain, err = checkToolchain("go.mod"); err != nil {
		return r, err
	}
	if r.Commit, r.Time, err = head(); err != nil {
		return r, err
	}
	dirty, err := changes()
	if err != nil {
		return r, err
	}
	if requested == Snapshot {
		r.Snapshot = true
		r.Version = SnapshotVersion(r.Time, r.Commit, dirty != "")
		return r, nil
	}
	r.Version = requested
	if err := changelog.Check(requested); err != nil {
		return r, err
	}
	if dirty != "" {
		return r, fmt.Errorf("the tree has changes git has not committed (%s): a release is built from a clean checkout of its tag; make release VERSION=snapshot builds what the tree holds", dirty)
	}
	out, err := git("tag", "--points-at", "HEAD")
	if err != nil {
		return r, err
	}
	for _, tag := range strings.Fields(out) {
		if tag == requested {
			return r, nil
		}
	}
	return r, fmt.Errorf("HEAD (%.12s) is not tagged %s: tag the release's commit (git tag %s), or make release VERSION=snapshot to build what the tree holds", r.Commit, requested, requested)
}

// SnapshotVersion names a snapshot by its commit's time and hash, a valid
// semantic version that sorts before any release: v0.0.0-snapshot.
// 20261127153012.g4933fef1a2b3, .dirty when the tree had changes.
func SnapshotVersion(at time.Time, commit string, dirty bool) string {
	v := fmt.Sprintf("v0.0.0-snapshot.%s.g%.12s", at.UTC().Format("20060102150405"), commit)
	if dirty {
		v += ".dirty"
	}
	return v
}

// checkToolchain refuses a go command older than go.mod's toolchain line:
// the release would ship an older standard library than the one named.
func checkToolchain(gomod string) (string, error) {
	data, err := os.ReadFile(gomod)
	if err != nil {
		return "", err
	}
	f, err := modfile.Parse(gomod, data, nil)
	if err != nil {
		return "", err
	}
	if f.Toolchain == nil {
		return "", fmt.Errorf("%s names no toolchain: a release states the Go it is built with", gomod)
	}
	want := f.Toolchain.Name
	out, err := exec.Command("go", "env", "GOVERSION").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOVERSION: %w", err)
	}
	have := strings.TrimSpace(string(out))
	if version.Compare(have, want) < 0 {
		return "", fmt.Errorf("the go command is %s, older than go.mod's toolchain %s: install %s, or unset GOTOOLCHAIN=local so that go fetches it", have, want, want)
	}
	return have, nil
}

// head is HEAD's commit and its commit time.
func head() (string, time.Time, error) {
	out, err := git("log", "-1", "--format=%H %ct")
	if err != nil {
		return "", time.Time{}, err
	}
	hash, stamp, _ := strings.Cut(strings.TrimSpace(out), " ")
	seconds, err := strconv.ParseInt(stamp, 10, 64)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("git log: %q: %w", out, err)
	}
	return hash, time.Unix(seconds, 0).UTC(), nil
}

// changes names the first few paths that differ from HEAD, untracked ones
// included (a new file in a package is built in); "" when clean.
func changes() (string, error) {
	out, err := git("status", "--porcelain")
	if err != nil {
		return "", err
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if lines[0] == "" {
		return "", nil
	}
	var paths []string
	for i, line := range lines {
		if i == 3 {
			paths = append(paths, fmt.Sprintf("and %d more", len(lines)-i))
			break
		}
		paths = append(paths, strings.TrimSpace(line[2:]))
	}
	return strings.Join(paths, ", "), nil
}

func git(args ...string) (string, error) {
	out, err := exec.Command("git", args...).Output()
	if err != nil {
		var stderr string
		if exit, ok := err.(*exec.ExitError); ok {
			stderr = strings.TrimSpace(string(exit.Stderr))
		}
		return "", fmt.Errorf("git %s: %w %s (a release is built from a git checkout)", strings.Join(args, " "), err, stderr)
	}
	return string(out), nil
}
