#!/usr/bin/env bash
# Fails when go.mod or go.sum is not what go mod tidy makes of them.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
go mod tidy -diff
echo "go.mod and go.sum are tidy."
