#!/usr/bin/env bash
# Fails when the k8s.io staging modules in the build list are not all on one
# version: mixing minors breaks at run time in ways the compiler cannot see.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# Staging modules are versioned v0.<minor>.<patch>; gengo, klog, kube-openapi
# and utils follow their own schemes.
versions="$(go list -m -f '{{.Path}} {{.Version}}' all | awk '$1 ~ /^k8s\.io\// && $2 ~ /^v0\.[0-9]+\.[0-9]+$/ {print $2}' | sort -u)"
if [[ "$(wc -l <<<"${versions}")" -ne 1 ]]; then
  echo "k8s.io staging modules are on several versions:" >&2
  go list -m -f '{{.Path}} {{.Version}}' all | grep '^k8s.io/' >&2
  exit 1
fi
echo "k8s.io staging modules are all on ${versions}."
