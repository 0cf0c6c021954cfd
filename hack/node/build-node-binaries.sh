#!/usr/bin/env bash
# Puts kubelet, kube-proxy, kube-controller-manager and kube-scheduler into
# bin/k8s-node/<kube version>/, for make node-up and make test-node: built
# from source through the Go module proxy, at the control plane's version
# (hack/build-k8s-binaries.sh), the way that script builds kube-apiserver.
# Where hack/build-k8s-binaries.sh built the control plane from source,
# most packages are compiled already (11 minutes here, on 2 busy cores);
# from nothing, about as long as that build. With progress.
#
# Idempotent: when the cache holds all four binaries of the pinned version,
# it does nothing. Prints the cache directory on its last line.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# The control plane's version: a kubelet newer than its API server is not
# supported, and one binary set keeps the module downloads shared.
pinned="$(sed -n 's/^KUBE_VERSION="${KUBE_VERSION:-\(v[0-9.]*\)}"$/\1/p' "${repo_root}/hack/build-k8s-binaries.sh")"
KUBE_VERSION="${KUBE_VERSION:-${pinned}}"
[[ -n "${KUBE_VERSION}" ]] || { echo "build-node-binaries: no KUBE_VERSION in hack/build-k8s-binaries.sh" >&2; exit 1; }

cache_dir="${NODE_BINARIES_DIR:-${repo_root}/bin/k8s-node/${KUBE_VERSION}}"
stamp="${cache_dir}/.built-from"
want_stamp="kubernetes ${KUBE_VERSION}"
commands=(kubelet kube-proxy kube-controller-manager kube-scheduler)

built() {
  [[ -f "${stamp}" && "$(cat "${stamp}")" == "${want_stamp}" ]] || return 1
  local cmd
  for cmd in "${commands[@]}"; do [[ -x "${cache_dir}/${cmd}" ]] || return 1; done
}
if built; then
  echo "${cache_dir}"
  exit 0
fi

log() { echo "build-node-binaries: $*" >&2; }

# progress reads go's output on standard input and says how far a step
# got: modules downloaded, or packages compiled out of total.
progress() {
  local step="$1" total="${2:-}"
  awk -v step="${step}" -v total="${total}" '
    /^go: downloading / { d++; if (d % 25 == 0) printf "build-node-binaries: %s: %d modules downloaded\n", step, d > "/dev/stderr"; next }
    /^go: (added|upgraded|finding) / { next }
    /^go: / || /: / { print > "/dev/stderr"; next }
    total != "" { n++; if (n % 200 == 0) printf "build-node-binaries: %s: %d of at most %d packages compiled\n", step, n, total > "/dev/stderr" }
    END { if (d % 25) printf "build-node-binaries: %s: %d modules downloaded\n", step, d > "/dev/stderr" }'
}

staging_version="v0.${KUBE_VERSION#v1.}"
work="$(mktemp -d "${TMPDIR:-/tmp}/nhc-node-build.XXXXXX")"
trap 'rm -rf "${work}"' EXIT
mkdir -p "${cache_dir}"
rm -f "${stamp}"
export GOFLAGS="-mod=mod -buildvcs=false" CGO_ENABLED=0 GOTOOLCHAIN=local

# A throwaway wrapper module: k8s.io/kubernetes replaces its staging modules
# with relative paths that do not exist in the module zip, so the wrapper
# points each of them at its published version.
upstream_mod="$(go mod download -json "k8s.io/kubernetes@${KUBE_VERSION}" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')"
{
  echo "module nhc.local/node-binaries"
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
} > "${work}/go.mod"

now="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
commit="$(go mod download -json "k8s.io/kubernetes@${KUBE_VERSION}" | sed -n 's/^[[:space:]]*"Hash": "\(.*\)",$/\1/p' | head -n1)"
minor="${KUBE_VERSION#v1.}"; minor="${minor%%.*}"
ldflags="-s -w"
for pkg in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
  ldflags+=" -X ${pkg}.gitVersion=${KUBE_VERSION} -X ${pkg}.gitMajor=1 -X ${pkg}.gitMinor=${minor}"
  ldflags+=" -X ${pkg}.gitTreeState=clean -X ${pkg}.buildDate=${now} -X ${pkg}.gitCommit=module-${commit:-unknown}"
done

log "building ${commands[*]} ${KUBE_VERSION} from source, once"
log "step 1 of 2: resolving k8s.io/kubernetes ${KUBE_VERSION} (staging modules at ${staging_version})"
pkgs=()
for cmd in "${commands[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/${cmd}@${KUBE_VERSION}"); done
(cd "${work}" && go get "${pkgs[@]}" 2>&1) | progress "resolving kubernetes"
log "step 2 of 2: compiling"
for cmd in "${commands[@]}"; do
  total="$(cd "${work}" && go list -deps "k8s.io/kubernetes/cmd/${cmd}" 2>/dev/null | wc -l)"
  log "building ${cmd} (${total} packages)"
  (cd "${work}" && go build -v -trimpath -ldflags "${ldflags}" -o "${cache_dir}/${cmd}" "k8s.io/kubernetes/cmd/${cmd}" 2>&1) | progress "${cmd}" "${total}"
done
echo "${want_stamp}" > "${stamp}"
log "done: $("${cache_dir}/kubelet" --version 2>/dev/null)"
echo "${cache_dir}"
