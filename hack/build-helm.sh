#!/usr/bin/env bash
# Builds a pinned Helm from its Go module into bin/helm/<version>/, for
# `helm lint`, `helm template` and `helm package` in the tests and the
# release. Release binaries cannot be downloaded on our machines; Go
# modules can. `go install module@version` builds Helm with its own go.mod,
# so its k8s.io libraries never meet ours.
#
# Idempotent: prints the binary's path on its last line.
set -euo pipefail

HELM_VERSION="${HELM_VERSION:-v4.3.1}"

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache_dir="${HELM_BINARY_DIR:-${repo_root}/bin/helm/${HELM_VERSION}}"
helm="${cache_dir}/helm"

if [[ ! -x "${helm}" ]]; then
  echo "build-helm: building helm ${HELM_VERSION} from its Go module" >&2
  major="${HELM_VERSION%%.*}"
  GOBIN="${cache_dir}" CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS="-trimpath" \
    go install -ldflags "-s -w -X helm.sh/helm/${major}/internal/version.version=${HELM_VERSION}" "helm.sh/helm/${major}/cmd/helm@${HELM_VERSION}"
fi
echo "${helm}"
