#!/usr/bin/env bash
# Runs golangci-lint, pinned in hack/tools/lint/go.mod (a module of its own,
# so that its dependencies never move the controller's), with the curated
# linters of .golangci.yaml. Built into bin/lint once; go install rebuilds it
# only when the pin changes.
set -euo pipefail
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
(cd "${repo_root}/hack/tools/lint" && GOBIN="${repo_root}/bin/lint" go install tool)
cd "${repo_root}"
bin/lint/golangci-lint run ./...
