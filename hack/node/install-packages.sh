#!/usr/bin/env bash
# Installs what a node runs besides the kubelet, from the distribution's
# packages: containerd, runc, the CNI plugins, iptables (kube-proxy's
# rules) and conntrack (kube-proxy clears stale UDP entries with it). A
# command already on the machine is kept: a CI runner's containerd.io
# conflicts with the distribution's containerd.
set -euo pipefail

log() { echo "install-packages: $*" >&2; }

missing=()
command -v containerd >/dev/null && command -v ctr >/dev/null || missing+=(containerd)
command -v runc >/dev/null || missing+=(runc)
[[ -x /usr/lib/cni/bridge || -x /opt/cni/bin/bridge ]] || missing+=(containernetworking-plugins)
command -v iptables >/dev/null || missing+=(iptables)
command -v conntrack >/dev/null || missing+=(conntrack)
command -v ip >/dev/null || missing+=(iproute2)
if (( ${#missing[@]} == 0 )); then
  exit 0
fi
if [[ "$(id -u)" != 0 ]]; then
  log "needs root to install ${missing[*]}"
  exit 1
fi
log "installing ${missing[*]} with apt-get"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >&2
apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
