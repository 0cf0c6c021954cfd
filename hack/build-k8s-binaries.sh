#!/usr/bin/env bash
# Builds kube-apiserver, kubectl and etcd from source through the Go module
# proxy into bin/k8s/<kube version>/, for the integration and end-to-end tests.
# Release binaries cannot be downloaded on our machines; Go modules can.
#
# Each binary is built from a throwaway wrapper module: k8s.io/kubernetes
# replaces its staging modules with relative paths that do not exist in the
# module zip, so the wrapper points each of them at its published version.
# etcd's server module does the same with its sibling modules.
#
# Idempotent: when the cache holds all three binaries built from the pinned
# versions, it does nothing. Prints the cache directory on its last line.
set -euo pipefail

KUBE_VERSION="${KUBE_VERSION:-v1.37.1}"
ETCD_VERSION="${ETCD_VERSION:-v3.6.16}"

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache_dir="${K8S_BINARIES_DIR:-${repo_root}/bin/k8s/${KUBE_VERSION}}"
stamp="${cache_dir}/.built-from"
want_stamp="kubernetes ${KUBE_VERSION} etcd ${ETCD_VERSION}"

if [[ -f "${stamp}" && "$(cat "${stamp}")" == "${want_stamp}" \
      && -x "${cache_dir}/kube-apiserver" && -x "${cache_dir}/kubectl" && -x "${cache_dir}/etcd" ]]; then
  echo "${cache_dir}"
  exit 0
fi

log() { echo "build-k8s-binaries: $*" >&2; }

# The staging modules are published as k8s.io/<name> v0.<minor>.<patch>.
staging_version="v0.${KUBE_VERSION#v1.}"
work="$(mktemp -d "${TMPDIR:-/tmp}/nhc-k8s-build.XXXXXX")"
trap 'rm -rf "${work}"' EXIT
mkdir -p "${cache_dir}"
export GOFLAGS="-mod=mod -buildvcs=false" CGO_ENABLED=0 GOTOOLCHAIN=local

go_mod_of() { go mod download -json "$1" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p'; }

build_kubernetes() {
  local dir="${work}/kubernetes" upstream_mod
  mkdir -p "${dir}"
  upstream_mod="$(go_mod_of "k8s.io/kubernetes@${KUBE_VERSION}")"
  {
    echo "module nhc.local/k8s-binaries"
    echo
    echo "go 1.26.0"
    echo
    grep -E '^godebug' "${upstream_mod}" || true
    echo
    echo "require k8s.io/kubernetes ${KUBE_VERSION}"
    echo
    echo "replace ("
    grep -E '=> \./staging/' "${upstream_mod}" | awk -v v="${staging_version}" '{printf "\t%s => %s %s\n", $1, $1, v}'
    echo ")"
  } > "${dir}/go.mod"

  local now commit ldflags=""
  now="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  commit="$(go mod download -json "k8s.io/kubernetes@${KUBE_VERSION}" | sed -n 's/^[[:space:]]*"Hash": "\(.*\)",$/\1/p' | head -n1)"
  local minor="${KUBE_VERSION#v1.}"; minor="${minor%%.*}"
  for pkg in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
    ldflags+=" -X ${pkg}.gitVersion=${KUBE_VERSION} -X ${pkg}.gitMajor=1 -X ${pkg}.gitMinor=${minor}"
    ldflags+=" -X ${pkg}.gitTreeState=clean -X ${pkg}.buildDate=${now} -X ${pkg}.gitCommit=module-${commit:-unknown}"
  done

  log "resolving k8s.io/kubernetes ${KUBE_VERSION} (staging modules at ${staging_version})"
  (cd "${dir}" && go get "k8s.io/kubernetes/cmd/kube-apiserver@${KUBE_VERSION}" "k8s.io/kubernetes/cmd/kubectl@${KUBE_VERSION}")
  for cmd in kube-apiserver kubectl; do
    log "building ${cmd}"
    (cd "${dir}" && go build -trimpath -ldflags "-s -w ${ldflags}" -o "${cache_dir}/${cmd}" "k8s.io/kubernetes/cmd/${cmd}")
  done
}

build_etcd() {
  local dir="${work}/etcd" upstream_mod
  mkdir -p "${dir}"
  upstream_mod="$(go_mod_of "go.etcd.io/etcd/server/v3@${ETCD_VERSION}")"
  {
    echo "module nhc.local/etcd-binary"
    echo
    echo "go 1.26.0"
    echo
    echo "require go.etcd.io/etcd/server/v3 ${ETCD_VERSION}"
    echo
    echo "replace ("
    grep -E '=> \.\./' "${upstream_mod}" | awk -v v="${ETCD_VERSION}" '{printf "\t%s => %s %s\n", $1, $1, v}'
    echo ")"
  } > "${dir}/go.mod"
  log "resolving go.etcd.io/etcd/server/v3 ${ETCD_VERSION}"
  (cd "${dir}" && go get "go.etcd.io/etcd/server/v3@${ETCD_VERSION}")
  log "building etcd"
  (cd "${dir}" && go build -trimpath -ldflags "-s -w" -o "${cache_dir}/etcd" "go.etcd.io/etcd/server/v3")
}

rm -f "${stamp}"
build_etcd
build_kubernetes
echo "${want_stamp}" > "${stamp}"
log "done: $("${cache_dir}/kubectl" version --client 2>/dev/null | head -n1)"
echo "${cache_dir}"
