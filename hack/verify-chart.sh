#!/usr/bin/env bash
# Checks that the chart's copies of the plain install's files are current
# (hack/update-chart.sh), and lints the chart with the pinned Helm.
set -euo pipefail
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
helm="$("${repo_root}/hack/build-helm.sh" | tail -n 1)"

work="$(mktemp -d)"
trap 'rm -rf "${work}"' EXIT
cp -r "${repo_root}/charts/nhc-controller" "${work}/chart"
"${repo_root}/hack/update-chart.sh" "${work}/chart"
if ! diff -r "${repo_root}/charts/nhc-controller" "${work}/chart"; then
  echo "verify-chart: the chart's copies of manifests/ are out of date; run make generate" >&2
  exit 1
fi
"${helm}" lint --strict "${repo_root}/charts/nhc-controller"
"${helm}" lint --strict "${repo_root}/charts/nhc-controller" \
  --set metrics.serviceMonitor.enabled=true,metrics.prometheusRule.enabled=true,metrics.dashboard.enabled=true
