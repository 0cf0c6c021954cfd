#!/usr/bin/env bash
# A real cluster on this machine, for make node-up, make node-down and make
# test-node: etcd, kube-apiserver, kube-controller-manager (the node
# lifecycle controller with its defaults), kube-scheduler, and nodes that
# each run containerd, a kubelet and kube-proxy on a bridge CNI network.
#
#   cluster.sh up                 the control-plane node, nhc-control-plane,
#                                 on this host's network
#   cluster.sh join NAME          a worker in its own network namespace,
#                                 with its own containerd, root and ports
#   cluster.sh kubelet stop|start NAME
#                                 stop or start a node's kubelet alone: its
#                                 containers keep running, as when a kubelet
#                                 crashes
#   cluster.sh import NAME FILE   import an image tarball into a node's
#                                 containerd
#   cluster.sh down               stop everything, unmount, delete the
#                                 interfaces, rules and cgroups it made
#   cluster.sh kubeconfig         print the admin kubeconfig's path
#
# Needs root. Everything lives under NHC_NODE_DIR (/var/lib/nhc-node); the
# nodes' network is 10.99.0.0/24 (the host is 10.99.0.1, where the API
# server listens), pods get 10.244.<node>.0/24, Services 10.96.0.0/16.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
STATE="${NHC_NODE_DIR:-/var/lib/nhc-node}"
TOOLS="${NHC_NODE_TOOLS:-${repo_root}/_output/node}"
K8S_BINARIES="${K8S_BINARIES:-$("${repo_root}/hack/build-k8s-binaries.sh" | tail -n 1)}"
NODE_BINARIES="${NODE_BINARIES:-$("${repo_root}/hack/node/build-node-binaries.sh" | tail -n 1)}"

CONTROL_PLANE=nhc-control-plane
# Kubelet credentials are made at up for these names; join takes one of them.
WORKERS=(nhc-worker nhc-worker-2)
HOST_IP=10.99.0.1
SERVER="https://${HOST_IP}:6443"
SERVICE_CIDR=10.96.0.0/16
KUBERNETES_SERVICE_IP=10.96.0.1
CLUSTER_CIDR=10.244.0.0/16
NODES_BRIDGE=nhc-nodes
PAUSE_IMAGE=nhc.local/pause:1
ETCD_PORT=32379
CNI_BIN="$(if [[ -x /usr/lib/cni/bridge ]]; then echo /usr/lib/cni; else echo /opt/cni/bin; fi)"

log() { echo "cluster: $*" >&2; }
die() { log "$*"; exit 1; }
kubectl() { "${K8S_BINARIES}/kubectl" --kubeconfig "${STATE}/pki/admin.kubeconfig" "$@"; }

# start runs a daemon in a session of its own, its output in logs/NAME.log
# and its PID in run/NAME.pid. With NETNS set it runs in that network
# namespace, in this mount namespace: its kubelet and containerd must see
# each other's mounts.
start() {
  local name="$1"; shift
  local prefix=()
  [[ -n "${NETNS:-}" ]] && prefix=(nsenter "--net=/var/run/netns/${NETNS}")
  mkdir -p "${STATE}/logs" "${STATE}/run"
  setsid "${prefix[@]}" "$@" >>"${STATE}/logs/${name}.log" 2>&1 </dev/null &
  echo $! >"${STATE}/run/${name}.pid"
}

running() {
  local pid
  pid="$(cat "${STATE}/run/$1.pid" 2>/dev/null)" || return 1
  kill -0 "${pid}" 2>/dev/null
}

# stop sends SIGTERM, then SIGKILL after a grace period.
stop() {
  local name="$1" grace="${2:-20}" pid
  pid="$(cat "${STATE}/run/${name}.pid" 2>/dev/null)" || return 0
  if kill -TERM "${pid}" 2>/dev/null; then
    for ((i = 0; i < grace * 10; i++)); do
      kill -0 "${pid}" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "${pid}" 2>/dev/null && log "${name} did not stop within ${grace}s of SIGTERM: killed"
  fi
  rm -f "${STATE}/run/${name}.pid"
}

# wait_for retries a command until it succeeds or the timeout passes.
wait_for() {
  local what="$1" timeout="$2"; shift 2
  local deadline=$((SECONDS + timeout))
  until "$@" >/dev/null 2>&1; do
    if ((SECONDS >= deadline)); then
      log "timed out after ${timeout}s waiting for ${what}; the logs are in ${STATE}/logs"
      return 1
    fi
    sleep 0.5
  done
}

port_open() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }

# has_sys_resource: whether this process may raise resource limits and lower
# OOM scores (CAP_SYS_RESOURCE, bit 24 of the bounding set).
has_sys_resource() {
  local bounding
  bounding="$(awk '/^CapBnd:/ {print $2}' /proc/self/status)"
  (( (16#${bounding} >> 24) & 1 ))
}

node_dir() { echo "${STATE}/nodes/$1"; }
node_var() { sed -n "s/^$2=//p" "$(node_dir "$1")/node.env"; }

# cgroup_dirs prints a node's cgroup root in every cgroup v1 hierarchy (and
# the v2 one, whichever is mounted).
cgroup_dirs() {
  local hierarchy
  for hierarchy in /sys/fs/cgroup/*/; do
    [[ -f "${hierarchy}cgroup.procs" ]] && echo "${hierarchy}$1"
  done
  [[ -f /sys/fs/cgroup/cgroup.procs ]] && echo "/sys/fs/cgroup/$1"
  return 0
}

write_containerd_config() {
  local name="$1" dir
  dir="$(node_dir "${name}")"
  cat >"${dir}/containerd.toml" <<EOF
version = 2
root = "${dir}/containerd/root"
state = "${dir}/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs"]

[grpc]
  address = "${dir}/containerd.sock"

[plugins."io.containerd.internal.v1.opt"]
  path = "${dir}/containerd/opt"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "${PAUSE_IMAGE}"
  # The pods' network namespaces under the state folder, where down finds
  # them, rather than in /var/run/netns beside the host's.
  netns_mounts_under_state_dir = true
  # Without CAP_SYS_RESOURCE (some sandboxes drop it) no process may lower
  # its OOM score: a pod's sandbox at -998 would fail to start.
  restrict_oom_score_adj = $(has_sys_resource && echo false || echo true)
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "${dir}/containerd/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "${CNI_BIN}"
    conf_dir = "${dir}/cni/net.d"
EOF
}

# write_cni_config: a bridge per node, its pods in 10.244.<index>.0/24; the
# firewall plugin admits them through a FORWARD chain whose policy is DROP
# (Docker sets it so on CI runners).
write_cni_config() {
  local name="$1" index="$2" dir
  dir="$(node_dir "${name}")"
  mkdir -p "${dir}/cni/net.d" "${dir}/cni/ipam"
  cat >"${dir}/cni/net.d/10-nhc-pods.conflist" <<EOF
{
  "cniVersion": "0.4.0",
  "name": "nhc-pods",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "nhc-cni0",
      "isGateway": true,
      "ipMasq": true,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": "${dir}/cni/ipam",
        "ranges": [[{"subnet": "10.244.${index}.0/24"}]],
        "routes": [{"dst": "0.0.0.0/0"}]
      }
    },
    {"type": "firewall"},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
EOF
}

write_kubelet_config() {
  local name="$1" ip="$2" dir
  dir="$(node_dir "${name}")"
  cat >"${dir}/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# This machine mounts cgroup v1 only; kubelets of 1.35 and later refuse it
# unless told.
failCgroupV1: false
cgroupDriver: cgroupfs
# Each node's pods in a cgroup tree of its own: two kubelets share the host.
cgroupRoot: /${name}
containerRuntimeEndpoint: unix://${dir}/containerd.sock
address: ${ip}
healthzBindAddress: 127.0.0.1
readOnlyPort: 0
podLogsDir: ${dir}/pod-logs
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: ${STATE}/pki/ca.crt
authorization:
  mode: Webhook
clusterDomain: cluster.local
# CI runners have swap; the kubelet's default is to refuse to start.
failSwapOn: false
# No image can be pulled again here (no registry): image garbage collection
# must not remove the imported ones, whatever the disk's use.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
# Shared disks run fuller than the defaults (10%, 15%) allow.
evictionHard:
  memory.available: 100Mi
  nodefs.available: 2%
  imagefs.available: 2%
EOF
}

write_proxy_config() {
  local name="$1" ip="$2" dir
  dir="$(node_dir "${name}")"
  cat >"${dir}/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: ${STATE}/pki/kube-proxy.kubeconfig
hostnameOverride: ${name}
bindAddress: ${ip}
healthzBindAddress: ${ip}:10256
metricsBindAddress: 127.0.0.1:10249
mode: iptables
clusterCIDR: ${CLUSTER_CIDR}
# The conntrack table is the host's: leave its size and timeouts alone.
conntrack:
  maxPerCore: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
EOF
}

start_kubelet() {
  local name="$1" dir netns ip taints=()
  dir="$(node_dir "${name}")"
  netns="$(node_var "${name}" NETNS)"
  ip="$(node_var "${name}" IP)"
  [[ "${name}" == "${CONTROL_PLANE}" ]] && taints=(--register-with-taints=node-role.kubernetes.io/control-plane:NoSchedule)
  NETNS="${netns}" start "kubelet-${name}" "${NODE_BINARIES}/kubelet" \
    --config="${dir}/kubelet.yaml" --kubeconfig="${STATE}/pki/kubelet-${name}.kubeconfig" \
    --root-dir="${dir}/kubelet" --hostname-override="${name}" --node-ip="${ip}" "${taints[@]}" --v=1
}

# start_node starts a node's containerd, with the pause image, its
# kubelet and its kube-proxy.
start_node() {
  local name="$1" index="$2" netns="$3" ip dir cg
  ip="10.99.0.$((index + 1))"
  dir="$(node_dir "${name}")"
  mkdir -p "${dir}"
  printf 'INDEX=%s\nNETNS=%s\nIP=%s\n' "${index}" "${netns}" "${ip}" >"${dir}/node.env"
  for cg in $(cgroup_dirs "${name}"); do
    mkdir -p "${cg}"
    # A new cgroup v1 cpuset has no CPUs until given its parent's.
    if [[ "${cg}" == /sys/fs/cgroup/cpuset/* ]]; then
      cat "${cg}/../cpuset.cpus" >"${cg}/cpuset.cpus"
      cat "${cg}/../cpuset.mems" >"${cg}/cpuset.mems"
    fi
  done
  write_containerd_config "${name}"
  write_cni_config "${name}" "${index}"
  write_kubelet_config "${name}" "${ip}"
  write_proxy_config "${name}" "${ip}"
  NETNS="${netns}" start "containerd-${name}" containerd --config "${dir}/containerd.toml"
  wait_for "${name}'s containerd" 30 ctr --address "${dir}/containerd.sock" version
  ctr --address "${dir}/containerd.sock" -n k8s.io images import "${TOOLS}/pause.tar" >/dev/null
  start_kubelet "${name}"
  NETNS="${netns}" start "kube-proxy-${name}" "${NODE_BINARIES}/kube-proxy" --config="${dir}/kube-proxy.yaml" --v=1
  wait_for "node ${name} to be Ready" 120 node_ready "${name}"
  log "node ${name} is Ready (${ip}, pods 10.244.${index}.0/24)"
}

node_ready() {
  [[ "$(kubectl get node "$1" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" == True ]]
}

cmd_up() {
  [[ "$(id -u)" == 0 ]] || die "needs root"
  if running etcd || running kube-apiserver; then
    die "a cluster is running already: make node-down first"
  fi
  [[ -x "${TOOLS}/pki" && -f "${TOOLS}/pause.tar" ]] || die "no ${TOOLS}/pki or ${TOOLS}/pause.tar: make node-up builds them"
  # What a run that died half way left behind.
  cmd_down 2>/dev/null || true
  if awk -v p="${STATE}/" 'index($2, p) == 1 {found = 1} END {exit !found}' /proc/self/mounts; then
    die "something is still mounted under ${STATE}: not removing it"
  fi
  rm -rf "${STATE}"
  mkdir -p "${STATE}/run" "${STATE}/logs"
  log "state in ${STATE}, logs in ${STATE}/logs"

  # What down puts back: the sysctls and the packet filter rules as they were.
  for key in net.ipv4.ip_forward net.ipv4.conf.all.route_localnet net.bridge.bridge-nf-call-iptables; do
    echo "${key}=$(sysctl -n "${key}" 2>/dev/null || echo)" >>"${STATE}/sysctl.before"
  done
  iptables-save >"${STATE}/iptables.before" 2>/dev/null || true
  ip6tables-save >"${STATE}/ip6tables.before" 2>/dev/null || true

  ip link add "${NODES_BRIDGE}" type bridge
  ip addr add "${HOST_IP}/24" dev "${NODES_BRIDGE}"
  ip link set "${NODES_BRIDGE}" up
  # Bridged pod traffic passes kube-proxy's rules only with br_netfilter.
  [[ -d /proc/sys/net/bridge ]] || modprobe br_netfilter 2>/dev/null || log "no br_netfilter: a pod may not reach a Service backed by its own node's pods"
  sysctl -qw net.ipv4.ip_forward=1
  [[ -d /proc/sys/net/bridge ]] && sysctl -qw net.bridge.bridge-nf-call-iptables=1

  local nodes
  nodes="$(IFS=,; echo "${CONTROL_PLANE},${WORKERS[*]}")"
  "${TOOLS}/pki" --dir "${STATE}/pki" --server "${SERVER}" --apiserver-ips "${HOST_IP},${KUBERNETES_SERVICE_IP}" --nodes "${nodes}"
  local pki="${STATE}/pki"

  start etcd "${K8S_BINARIES}/etcd" --name nhc --data-dir "${STATE}/etcd" \
    --listen-client-urls "http://127.0.0.1:${ETCD_PORT}" --advertise-client-urls "http://127.0.0.1:${ETCD_PORT}" \
    --listen-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" --initial-advertise-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" \
    --initial-cluster "nhc=http://127.0.0.1:$((ETCD_PORT + 1))" --listen-metrics-urls "" --log-level warn
  wait_for etcd 30 port_open 127.0.0.1 "${ETCD_PORT}"

  start kube-apiserver "${K8S_BINARIES}/kube-apiserver" \
    --etcd-servers "http://127.0.0.1:${ETCD_PORT}" \
    --bind-address "${HOST_IP}" --advertise-address "${HOST_IP}" --secure-port 6443 \
    --tls-cert-file "${pki}/apiserver.crt" --tls-private-key-file "${pki}/apiserver.key" --client-ca-file "${pki}/ca.crt" \
    --kubelet-client-certificate "${pki}/apiserver-kubelet.crt" --kubelet-client-key "${pki}/apiserver-kubelet.key" \
    --kubelet-preferred-address-types InternalIP \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-account-key-file "${pki}/sa.pub" --service-account-signing-key-file "${pki}/sa.key" \
    --service-cluster-ip-range "${SERVICE_CIDR}" \
    --authorization-mode Node,RBAC --enable-admission-plugins NodeRestriction --allow-privileged=true \
    --profiling=false --v=1
  wait_for kube-apiserver 90 kubectl get --raw /readyz

  start kube-controller-manager "${NODE_BINARIES}/kube-controller-manager" \
    --kubeconfig "${pki}/kube-controller-manager.kubeconfig" \
    --authentication-kubeconfig "${pki}/kube-controller-manager.kubeconfig" \
    --authorization-kubeconfig "${pki}/kube-controller-manager.kubeconfig" \
    --bind-address 127.0.0.1 --leader-elect=false --use-service-account-credentials \
    --service-account-private-key-file "${pki}/sa.key" --root-ca-file "${pki}/ca.crt" \
    --cluster-signing-cert-file "${pki}/ca.crt" --cluster-signing-key-file "${pki}/ca.key" \
    --service-cluster-ip-range "${SERVICE_CIDR}" --v=1
  start kube-scheduler "${NODE_BINARIES}/kube-scheduler" \
    --kubeconfig "${pki}/kube-scheduler.kubeconfig" \
    --authentication-kubeconfig "${pki}/kube-scheduler.kubeconfig" \
    --authorization-kubeconfig "${pki}/kube-scheduler.kubeconfig" \
    --bind-address 127.0.0.1 --leader-elect=false --v=1

  start_node "${CONTROL_PLANE}" 0 ""
  kubectl label node "${CONTROL_PLANE}" node-role.kubernetes.io/control-plane= --overwrite >/dev/null
  # Pods are refused until the controller manager has made it.
  wait_for "the default ServiceAccount" 60 kubectl get serviceaccount default -n default
  log "up: export KUBECONFIG=${pki}/admin.kubeconfig"
}

cmd_join() {
  local name="$1" index netns
  [[ "$(id -u)" == 0 ]] || die "needs root"
  running kube-apiserver || die "no cluster: make node-up first"
  [[ " ${WORKERS[*]} " == *" ${name} "* ]] || die "a worker is one of: ${WORKERS[*]}"
  [[ -d "$(node_dir "${name}")" ]] && die "${name} has joined already"
  index="$(ls -d "${STATE}"/nodes/*/ | wc -l)"
  netns="${name}"
  ip netns add "${netns}"
  ip link add "nhc-v${index}" type veth peer name eth0 netns "${netns}"
  ip link set "nhc-v${index}" master "${NODES_BRIDGE}" up
  ip -n "${netns}" addr add "10.99.0.$((index + 1))/24" dev eth0
  ip -n "${netns}" link set lo up
  ip -n "${netns}" link set eth0 up
  ip -n "${netns}" route add default via "${HOST_IP}"
  ip route add "10.244.${index}.0/24" via "10.99.0.$((index + 1))"
  ip netns exec "${netns}" sysctl -qw net.ipv4.ip_forward=1
  [[ -d /proc/sys/net/bridge ]] && ip netns exec "${netns}" sysctl -qw net.bridge.bridge-nf-call-iptables=1
  start_node "${name}" "${index}" "${netns}"
}

cmd_kubelet() {
  local action="$1" name="$2"
  [[ -f "$(node_dir "${name}")/node.env" ]] || die "no node ${name}"
  case "${action}" in
    stop) stop "kubelet-${name}" ;;
    start)
      running "kubelet-${name}" && die "${name}'s kubelet is running"
      start_kubelet "${name}"
      ;;
    *) die "kubelet stop|start NAME" ;;
  esac
}

cmd_import() {
  local name="$1" file="$2" sock ref digest
  sock="$(node_dir "${name}")/containerd.sock"
  ctr --address "${sock}" -n k8s.io images import "${file}"
  # A pull records an image by its digest too, which an install pinned to
  # a digest asks for; an import records the tag alone, and the kubelet
  # would pull.
  ctr --address "${sock}" -n k8s.io images ls | awk 'NR > 1 && $1 !~ /^sha256:/ && $1 !~ /@/ {print $1, $3}' |
    while read -r ref digest; do
      ctr --address "${sock}" -n k8s.io images tag --force "${ref}" "${ref%:*}@${digest}" >/dev/null
    done
}

# stop_containers kills every container a node's containerd runs and
# deletes its tasks (which unmounts their filesystems), then stops
# containerd and whatever shims outlive it.
stop_containers() {
  local name="$1" sock task pid
  sock="$(node_dir "${name}")/containerd.sock"
  if running "containerd-${name}"; then
    for task in $(ctr --address "${sock}" -n k8s.io tasks ls -q 2>/dev/null); do
      ctr --address "${sock}" -n k8s.io tasks kill -s SIGKILL "${task}" >/dev/null 2>&1 || true
    done
    # The CRI plugin deletes a task once its exit is seen.
    for ((i = 0; i < 100; i++)); do
      [[ -z "$(ctr --address "${sock}" -n k8s.io tasks ls -q 2>/dev/null)" ]] && break
      sleep 0.1
    done
    for task in $(ctr --address "${sock}" -n k8s.io tasks ls -q 2>/dev/null); do
      ctr --address "${sock}" -n k8s.io tasks delete --force "${task}" >/dev/null 2>&1 || true
    done
  fi
  stop "containerd-${name}"
  # A shim is started with its containerd's address; one left (a task that
  # would not delete) is ours by that address alone.
  for pid in $(pgrep -f -- "-address ${sock}" 2>/dev/null); do
    kill -KILL "${pid}" 2>/dev/null || true
  done
}

cmd_down() {
  [[ "$(id -u)" == 0 ]] || die "needs root"
  [[ -d "${STATE}" ]] || return 0
  local name dir
  for dir in "${STATE}"/nodes/*/; do
    [[ -d "${dir}" ]] || continue
    name="$(basename "${dir}")"
    stop "kubelet-${name}" &
    stop "kube-proxy-${name}" &
  done
  wait
  for dir in "${STATE}"/nodes/*/; do
    [[ -d "${dir}" ]] || continue
    name="$(basename "${dir}")"
    stop_containers "${name}"
  done
  stop kube-scheduler &
  stop kube-controller-manager &
  wait
  stop kube-apiserver
  stop etcd

  # Container filesystems, shared memory, volumes and the pods' network
  # namespaces, deepest first.
  local mounts
  mounts="$(awk -v p="${STATE}/" 'index($2, p) == 1 {print $2}' /proc/self/mounts | awk '{print length, $0}' | sort -rn | cut -d' ' -f2-)"
  while read -r mount; do
    [[ -n "${mount}" ]] && { umount "${mount}" 2>/dev/null || umount -l "${mount}" 2>/dev/null || true; }
  done <<<"${mounts}"

  for dir in "${STATE}"/nodes/*/; do
    [[ -d "${dir}" ]] || continue
    name="$(basename "${dir}")"
    [[ -n "$(node_var "${name}" NETNS)" ]] && ip netns del "$(node_var "${name}" NETNS)" 2>/dev/null || true
    local cg
    for cg in $(cgroup_dirs "${name}"); do
      [[ -d "${cg}" ]] && find "${cg}" -depth -type d -exec rmdir {} + 2>/dev/null || true
    done
  done
  ip link del nhc-cni0 2>/dev/null || true
  ip link del "${NODES_BRIDGE}" 2>/dev/null || true

  # The rules kube-proxy and the CNI plugins wrote on this host, put back as
  # they were: tables that were there are restored, new ones emptied.
  local save restore family table
  for family in iptables ip6tables; do
    [[ -f "${STATE}/${family}.before" ]] || continue
    command -v "${family}" >/dev/null || continue
    for table in filter nat mangle raw; do
      if grep -q "^\*${table}$" "${STATE}/${family}.before"; then
        "${family}-restore" -T "${table}" <"${STATE}/${family}.before" 2>/dev/null || true
      else
        "${family}" -t "${table}" -F 2>/dev/null || true
        "${family}" -t "${table}" -X 2>/dev/null || true
      fi
    done
  done
  if [[ -f "${STATE}/sysctl.before" ]]; then
    while IFS='=' read -r key value; do
      [[ -n "${value}" ]] && sysctl -qw "${key}=${value}" 2>/dev/null || true
    done <"${STATE}/sysctl.before"
  fi
  rm -f "${STATE}/iptables.before" "${STATE}/ip6tables.before" "${STATE}/sysctl.before"
  log "down: nothing of the cluster runs; its logs stay in ${STATE}/logs"
}

case "${1:-}" in
  up) cmd_up ;;
  join) cmd_join "${2:?join NAME}" ;;
  kubelet) cmd_kubelet "${2:?kubelet stop|start NAME}" "${3:?kubelet stop|start NAME}" ;;
  import) cmd_import "${2:?import NAME FILE}" "${3:?import NAME FILE}" ;;
  down) cmd_down ;;
  kubeconfig) echo "${STATE}/pki/admin.kubeconfig" ;;
  *) die "usage: cluster.sh up|join NAME|kubelet stop|start NAME|import NAME FILE|down|kubeconfig" ;;
esac
