#!/usr/bin/env bash
# What make release may build, checked before anything is compiled (a cold
# build cache takes a minute to compile even a small Go program): a
# version only from a clean tree whose HEAD carries its tag, with its
# CHANGELOG.md section and a Go no older than go.mod's toolchain line;
# "snapshot" builds the tree as it is. hack/release checks the same again
# (hack/release/gate) before it builds.
#
#   hack/release/check.sh vX.Y.Z|snapshot
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

version="${1:-}"
fail() {
  echo "release: $*" >&2
  exit 1
}

toolchain="$(sed -n 's/^toolchain \(go[0-9.]*\)$/\1/p' go.mod)"
[[ -n "${toolchain}" ]] || fail "go.mod names no toolchain: a release states the Go it is built with"
have="$(go env GOVERSION)"
if [[ "$(printf '%s\n%s\n' "${toolchain#go}" "${have#go}" | sort -V | head -n 1)" != "${toolchain#go}" ]]; then
  fail "the go command is ${have}, older than go.mod's toolchain ${toolchain}: install ${toolchain}, or unset GOTOOLCHAIN=local so that go fetches it"
fi
[[ "${version}" == snapshot ]] && exit 0

# vMAJOR.MINOR.PATCH in full, a pre-release allowed, no build metadata.
semver='^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$'
[[ "${version}" =~ ${semver} ]] ||
  fail "version \"${version}\" is not vMAJOR.MINOR.PATCH: tag the release, then make release VERSION=vX.Y.Z (or VERSION=snapshot)"
changes="$(git status --porcelain)" || fail "git status failed: a release is built from a git checkout"
[[ -z "${changes}" ]] ||
  fail "the tree has changes git has not committed ($(cut -c4- <<<"${changes}" | head -n 3 | paste -sd, -)): a release is built from a clean checkout of its tag; make release VERSION=snapshot builds what the tree holds"
git tag --points-at HEAD | grep -qxF "${version}" ||
  fail "HEAD ($(git rev-parse --short=12 HEAD)) is not tagged ${version}: tag the release's commit (git tag ${version}), or make release VERSION=snapshot to build what the tree holds"
grep -qxF "## ${version}" CHANGELOG.md ||
  fail "CHANGELOG.md has no section \"## ${version}\": write the release's notes first"
