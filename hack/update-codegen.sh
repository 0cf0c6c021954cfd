#!/usr/bin/env bash
# Regenerates the generated code and the CRD:
#   - from pkg/apis, deepcopy functions, the clientset (with watch), listers,
#     informers and apply configurations, with k8s.io/code-generator's
#     kube_codegen.sh;
#   - the deepcopy functions of the node cache's own types (pkg/nodeview,
#     pkg/nodecache), which its informer needs as runtime.Objects;
#   - the CRD in manifests/crd/, with controller-gen (see docs/crd.md).
# Both generators run at the versions pinned in go.mod (its tool directives).
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${repo_root}"

module="$(go list -m)"
# Download first: on a cold module cache "go list -m" knows no directory.
go mod download k8s.io/code-generator
codegen_pkg="$(go list -m -f '{{.Dir}}' k8s.io/code-generator)"
# kube_codegen.sh installs its generators with "go install" into GOBIN.
export GOBIN="${repo_root}/bin/codegen"
mkdir -p "${GOBIN}"

# shellcheck source=/dev/null
source "${codegen_pkg}/kube_codegen.sh"

for dir in pkg/apis pkg/nodeview pkg/nodecache; do
  kube::codegen::gen_helpers \
    --boilerplate "${repo_root}/hack/boilerplate.go.txt" \
    "${repo_root}/${dir}"
done

kube::codegen::gen_client \
  --with-watch \
  --output-dir "${repo_root}/pkg/generated" \
  --output-pkg "${module}/pkg/generated" \
  --boilerplate "${repo_root}/hack/boilerplate.go.txt" \
  "${repo_root}/pkg/apis"

go tool controller-gen crd:crdVersions=v1 \
  paths="./pkg/apis/..." \
  output:crd:artifacts:config=manifests/crd
