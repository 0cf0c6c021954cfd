#!/usr/bin/env bash
# Fails when a Go file is not gofmt-formatted.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
unformatted="$(git ls-files --cached --others --exclude-standard '*.go' | xargs -r gofmt -l)"
if [[ -n "${unformatted}" ]]; then
  echo "These files need gofmt -w:" >&2
  echo "${unformatted}" >&2
  exit 1
fi
echo "Go files are gofmt-formatted."
