#!/usr/bin/env bash
# scripts/testhost/up.sh: give this machine a non-loopback address that
# exists only here, for tests whose peer refuses loopback addresses: the
# API server's node proxy (`kubectl get --raw /api/v1/nodes/N/proxy/...`)
# and an APIService's endpoint (metrics-server, for `kubectl top`) may not
# be 127.0.0.0/8. It makes a network namespace TESTHOST_NS (default
# podlife-testhost) and a veth pair: the root side TESTHOST_IF (default
# pl-th0) gets TESTHOST_ADDR/30 (default 10.214.0.1), the namespace's side
# the other address of the /30 (default 10.214.0.2). Nothing routes the /30
# anywhere else: traffic to the address stays on this machine. The /30 must
# be free: the script refuses an address already on another interface.
#
# Idempotent: when the pair is up already, it only prints the address.
# Prints the root side's address (what a node server, --node-ip and
# metrics-server use), nothing else, on stdout. Root only; needs `ip`
# (iproute2). Undo with scripts/testhost/down.sh (same environment).
#
#   addr=$(bash scripts/testhost/up.sh)   # 10.214.0.1
#   ... nodeagent --address $addr --node-ip $addr ...
#   bash scripts/testhost/down.sh
set -euo pipefail
TESTHOST_NS=${TESTHOST_NS:-podlife-testhost}
TESTHOST_IF=${TESTHOST_IF:-pl-th0}
TESTHOST_ADDR=${TESTHOST_ADDR:-10.214.0.1}
TESTHOST_PEER=${TESTHOST_PEER:-10.214.0.2}
peer_if=${TESTHOST_IF}p
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

log() { printf 'testhost: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

[ "$(id -u)" = 0 ] || die "must run as root (it makes a network namespace and a veth pair)"
command -v ip >/dev/null || die "no ip command (apt-get install iproute2)"

if ip netns list 2>/dev/null | awk '{print $1}' | grep -qx "$TESTHOST_NS" &&
	ip -4 -o addr show dev "$TESTHOST_IF" 2>/dev/null | grep -q " $TESTHOST_ADDR/30 " &&
	ip link show dev "$TESTHOST_IF" 2>/dev/null | grep -q 'state UP'; then
	echo "$TESTHOST_ADDR"
	exit 0
fi
# Something half made (an earlier run stopped midway): start from nothing.
bash "$HERE/down.sh"
if other=$(ip -4 -o addr show to "$TESTHOST_ADDR/30" | awk '{print $2}') && [ -n "$other" ]; then
	die "$TESTHOST_ADDR/30 is already used by interface $other: choose another TESTHOST_ADDR/TESTHOST_PEER"
fi

ip netns add "$TESTHOST_NS"
ip link add "$TESTHOST_IF" type veth peer name "$peer_if" netns "$TESTHOST_NS"
ip addr add "$TESTHOST_ADDR/30" dev "$TESTHOST_IF"
ip -n "$TESTHOST_NS" addr add "$TESTHOST_PEER/30" dev "$peer_if"
ip -n "$TESTHOST_NS" link set lo up
ip -n "$TESTHOST_NS" link set "$peer_if" up
ip link set "$TESTHOST_IF" up
# Ready once the kernel has brought the pair up (carrier on both sides).
for _ in $(seq 50); do
	ip link show dev "$TESTHOST_IF" | grep -q 'state UP' && break
	sleep 0.1
done
ip link show dev "$TESTHOST_IF" | grep -q 'state UP' || { bash "$HERE/down.sh"; die "$TESTHOST_IF did not come up"; }
log "up: $TESTHOST_ADDR/30 on $TESTHOST_IF, peer $TESTHOST_PEER in network namespace $TESTHOST_NS"
echo "$TESTHOST_ADDR"
