#!/usr/bin/env bash
# Two "hosts" on this machine for `bench --scheduler` (docs/guides/cluster.md): network namespaces
# sbhostA (10.231.0.2) and sbhostB (10.231.0.3) on a bridge sbbr0 whose own address, 10.231.0.1,
# is where this machine's side (the S3 server, the orchestrator) is reached. Needs root.
#   scripts/cluster-hosts.sh up     make them (again: an existing one is removed first)
#   scripts/cluster-hosts.sh down   remove them, and with them every process still inside
set -euo pipefail

NET=10.231.0
BRIDGE=sbbr0
HOSTS=(sbhostA sbhostB)

down() {
  for ns in "${HOSTS[@]}"; do
    if ip netns pids "$ns" >/dev/null 2>&1; then
      for pid in $(ip netns pids "$ns"); do kill -TERM "$pid" 2>/dev/null || true; done
      sleep 1
      for pid in $(ip netns pids "$ns"); do kill -KILL "$pid" 2>/dev/null || true; done
    fi
    ip link del "${ns}v" 2>/dev/null || true
    ip netns del "$ns" 2>/dev/null || true
  done
  ip link del "$BRIDGE" 2>/dev/null || true
}

up() {
  down
  ip link add "$BRIDGE" type bridge
  ip addr add "$NET.1/24" dev "$BRIDGE"
  ip link set "$BRIDGE" up
  local i=2
  for ns in "${HOSTS[@]}"; do
    ip netns add "$ns"
    ip link add "${ns}v" type veth peer name "${ns}p"
    ip link set "${ns}p" netns "$ns"
    ip link set "${ns}v" master "$BRIDGE" up
    ip -n "$ns" addr add "$NET.$i/24" dev "${ns}p"
    ip -n "$ns" link set "${ns}p" up
    ip -n "$ns" link set lo up
    echo "$ns: $NET.$i (run on it with: ip netns exec $ns COMMAND)"
    i=$((i + 1))
  done
  echo "this machine, on the bridge $BRIDGE: $NET.1"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  *) echo "usage: $0 up|down" >&2; exit 2 ;;
esac
