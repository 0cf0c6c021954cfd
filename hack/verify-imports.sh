#!/usr/bin/env bash
# Fails when the controller's binary imports a package that registers every
# built-in API group at start (k8s.io/client-go/kubernetes/scheme, through
# the clientset, typed clients, informers, discovery, restmapper or leader
# election): several MiB resident in every replica for kinds it never reads.
# pkg/kubeclient reaches the few it uses.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
forbidden='^k8s.io/client-go/(kubernetes(/.*)?|informers(/.*)?|discovery(/.*)?|restmapper|tools/leaderelection(/.*)?)$'
found=$(go list -deps ./cmd/nhc-controller | grep -E "${forbidden}" || true)
if [[ -n "${found}" ]]; then
  echo "cmd/nhc-controller imports packages that register every API group at start:" >&2
  echo "${found}" | sed 's/^/  /' >&2
  echo "find the importer with: go list -f '{{.ImportPath}} {{.Imports}}' -deps ./cmd/nhc-controller | grep <package>" >&2
  exit 1
fi
echo "cmd/nhc-controller imports no package that registers every API group."
