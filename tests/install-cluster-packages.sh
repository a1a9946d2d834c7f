#!/usr/bin/env bash
# Installs the node's parts that `kube-harness cluster up` runs (`make cluster-e2e`), from
# Debian's packages: containerd and runc for the kubelet, the CNI plugins for pod networks,
# nftables and iptables for kube-proxy, conntrack for its cleanup of stale UDP flows. Only
# when one is missing; a package list that is out of date is refreshed once.
set -euo pipefail
packages=(containerd runc nftables iptables containernetworking-plugins conntrack)
present() {
  command -v containerd && command -v containerd-shim-runc-v2 && command -v runc \
    && command -v nft && command -v iptables && command -v conntrack \
    && [ -x /usr/lib/cni/bridge ] && [ -x /usr/lib/cni/host-local ] && [ -x /usr/lib/cni/loopback ]
}
present >/dev/null 2>&1 && exit 0
echo "installing the cluster's node packages: ${packages[*]}"
sudo_if_needed=""
[ "$(id -u)" = 0 ] || sudo_if_needed=sudo
$sudo_if_needed apt-get install -y -qq "${packages[@]}" >/dev/null \
  || { $sudo_if_needed apt-get update -qq && $sudo_if_needed apt-get install -y -qq "${packages[@]}" >/dev/null; }
present >/dev/null || { echo "error: installed ${packages[*]}, yet a program of them is missing" >&2; exit 1; }
