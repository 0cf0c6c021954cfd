#!/usr/bin/env bash
# Puts kube-apiserver, kubectl and etcd into bin/k8s/<kube version>/, for the
# integration and end-to-end tests: the released envtest binaries when they
# can be fetched (their SHA-512 checked against controller-tools' index of
# envtest releases), else built from source through the Go module proxy,
# which takes about 20 minutes on 2 cores. Either way it says what it is
# doing and how far it got. K8S_BINARIES_SOURCE=build skips the download.
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
downloaded_stamp="envtest ${KUBE_VERSION}"

if [[ -f "${stamp}" && ( "$(cat "${stamp}")" == "${want_stamp}" || "$(cat "${stamp}")" == "${downloaded_stamp}" ) \
      && -x "${cache_dir}/kube-apiserver" && -x "${cache_dir}/kubectl" && -x "${cache_dir}/etcd" ]]; then
  echo "${cache_dir}"
  exit 0
fi

log() { echo "build-k8s-binaries: $*" >&2; }

envtest_index="https://raw.githubusercontent.com/kubernetes-sigs/controller-tools/HEAD/envtest-releases.yaml"

# download fetches the released envtest binaries of KUBE_VERSION for this
# platform, checks their archive's SHA-512 against the index, and unpacks
# them; it fails, saying why, when any of that cannot be done.
download() {
  command -v curl >/dev/null || { log "no curl to download with"; return 1; }
  local os arch archive url sum
  os="$(go env GOOS)"; arch="$(go env GOARCH)"
  archive="envtest-${KUBE_VERSION}-${os}-${arch}.tar.gz"
  log "downloading ${archive} (about 100 MB) ..."
  # The index lists each archive by name, then its hash and its URL.
  read -r sum url < <(curl -fsSL --connect-timeout 10 --max-time 60 "${envtest_index}" 2>/dev/null | index_entry "${archive}") || true
  [[ "${sum}" =~ ^[0-9a-f]{128}$ ]] || { log "the envtest index cannot be read, or lists no ${archive}"; return 1; }
  [[ "${url}" == "https://github.com/kubernetes-sigs/controller-tools/releases/download/"* ]] || { log "the envtest index points ${archive} elsewhere: ${url}"; return 1; }
  curl -fL --connect-timeout 10 --max-time 900 --progress-bar -o "${work}/${archive}" "${url}" || { log "cannot download ${url}"; return 1; }
  echo "${sum}  ${work}/${archive}" | sha512sum -c --quiet - >&2 || { log "${archive} does not match the index's SHA-512"; return 1; }
  tar -xzf "${work}/${archive}" -C "${work}"
  local bin
  for bin in kube-apiserver kubectl etcd; do
    install -m 0755 "${work}/controller-tools/envtest/${bin}" "${cache_dir}/${bin}"
  done
}

# index_entry reads controller-tools' envtest index on standard input and
# prints an archive's SHA-512 and URL.
index_entry() {
  awk -v key="$1:" '$1 == key { getline; hash = $2; getline; print hash, $2; exit }'
}

# progress reads go's output on standard input and says how far a step
# got: modules downloaded, or packages compiled out of total.
progress() {
  local step="$1" total="${2:-}"
  awk -v step="${step}" -v total="${total}" '
    /^go: downloading / { d++; if (d % 25 == 0) printf "build-k8s-binaries: %s: %d modules downloaded\n", step, d > "/dev/stderr"; next }
    /^go: (added|upgraded|finding) / { next }
    /^go: / || /: / { print > "/dev/stderr"; next }
    total != "" { n++; if (n % 200 == 0) printf "build-k8s-binaries: %s: %d of at most %d packages compiled\n", step, n, total > "/dev/stderr" }
    END { if (d % 25) printf "build-k8s-binaries: %s: %d modules downloaded\n", step, d > "/dev/stderr" }'
}

# build compiles one command in a wrapper module, with its progress.
build() {
  local dir="$1" name="$2" pkg="$3" ldflags="$4" total
  total="$(cd "${dir}" && go list -deps "${pkg}" 2>/dev/null | wc -l)"
  log "building ${name} (${total} packages)"
  (cd "${dir}" && go build -v -trimpath -ldflags "${ldflags}" -o "${cache_dir}/${name}" "${pkg}" 2>&1) | progress "${name}" "${total}"
}

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

  log "step 2 of 3: resolving k8s.io/kubernetes ${KUBE_VERSION} (staging modules at ${staging_version})"
  (cd "${dir}" && go get "k8s.io/kubernetes/cmd/kube-apiserver@${KUBE_VERSION}" "k8s.io/kubernetes/cmd/kubectl@${KUBE_VERSION}" 2>&1) | progress "resolving kubernetes"
  log "step 3 of 3: kube-apiserver and kubectl"
  for cmd in kube-apiserver kubectl; do
    build "${dir}" "${cmd}" "k8s.io/kubernetes/cmd/${cmd}" "-s -w ${ldflags}"
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
  log "step 1 of 3: etcd ${ETCD_VERSION}: resolving its modules"
  (cd "${dir}" && go get "go.etcd.io/etcd/server/v3@${ETCD_VERSION}" 2>&1) | progress "resolving etcd"
  build "${dir}" etcd "go.etcd.io/etcd/server/v3" "-s -w"
}

rm -f "${stamp}"
if [[ "${K8S_BINARIES_SOURCE:-download}" == download ]] && download; then
  log "downloaded the envtest binaries of ${KUBE_VERSION}"
  echo "${downloaded_stamp}" > "${stamp}"
else
  log "building kube-apiserver, kubectl and etcd from source: about 20 minutes on 2 cores, once"
  build_etcd
  build_kubernetes
  echo "${want_stamp}" > "${stamp}"
fi
log "done: $("${cache_dir}/kubectl" version --client 2>/dev/null | head -n1)"
echo "${cache_dir}"
