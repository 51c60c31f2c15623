#!/usr/bin/env bash
# Runs examples/distributed_check.py as a two-machine torchrun job (--nnodes 2) between two
# network namespaces joined by a veth pair, one rank in each, rendezvous over that link.
# Needs root (ip netns). Usage: scripts/distributed_two_hosts.sh [python]
set -euo pipefail

python="${1:-.venv/bin/python}"
suffix="$$"
host_a="onA$suffix"
host_b="onB$suffix"
link_a="vA$suffix"
link_b="vB$suffix"
addr_a="10.213.0.1"
addr_b="10.213.0.2"
port=29611

cleanup() {
  ip netns del "$host_a" 2>/dev/null || true
  ip netns del "$host_b" 2>/dev/null || true
}
trap cleanup EXIT

ip netns add "$host_a"
ip netns add "$host_b"
ip link add "$link_a" type veth peer name "$link_b"
ip link set "$link_a" netns "$host_a"
ip link set "$link_b" netns "$host_b"
ip -n "$host_a" addr add "$addr_a/24" dev "$link_a"
ip -n "$host_b" addr add "$addr_b/24" dev "$link_b"
for ns in "$host_a" "$host_b"; do
  ip -n "$ns" link set lo up
done
ip -n "$host_a" link set "$link_a" up
ip -n "$host_b" link set "$link_b" up

run_node() {  # namespace, interface, node rank
  # Gloo binds to the namespace's veth (its hostname would resolve to the host's loopback).
  # A node is killed 10 s after its 60 s are up: torchrun waiting in its exit barrier for a
  # failed peer does not act on the first signal.
  ip netns exec "$1" env GLOO_SOCKET_IFNAME="$2" timeout --kill-after=10 60 \
    "$python" -m torch.distributed.run \
    --nnodes 2 --node-rank "$3" --nproc-per-node 1 \
    --master-addr "$addr_a" --master-port "$port" \
    examples/distributed_check.py
}

run_node "$host_a" "$link_a" 0 &
first=$!
run_node "$host_b" "$link_b" 1 &
second=$!
status=0
wait "$first" || status=$?
wait "$second" || status=$?
if [ "$status" -eq 0 ]; then
  echo "two-host run passed"
else
  echo "two-host run FAILED (exit $status)"
fi
exit "$status"
