#!/usr/bin/env bash
# Copies the files the Helm chart shares with the plain install into the
# chart (a chart cannot read files outside its folder): the licence, the CRD
# into crds/, the guards, the alerts and the dashboard into files/. The plain install's
# copies are the ones to edit; hack/verify-chart.sh checks these match.
set -euo pipefail
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
chart="${1:-${repo_root}/charts/nhc-controller}"

mkdir -p "${chart}/crds" "${chart}/files"
cp "${repo_root}/manifests/crd/remediation.medik8s.io_nodehealthchecks.yaml" "${chart}/crds/"
cp "${repo_root}/LICENSE" "${chart}/"
for file in admission/remediation-guard.yaml admission/lease-namespace-guard.yaml admission/node-lease-scope.yaml admission/node-patch-guard.yaml \
    monitoring/prometheus-rule.yaml monitoring/dashboards/nhc-controller.json; do
  cp "${repo_root}/manifests/${file}" "${chart}/files/"
done
