#!/usr/bin/env bash
# scripts/testhost/down.sh: remove what scripts/testhost/up.sh made (same
# environment: TESTHOST_NS, TESTHOST_IF): the network namespace and the
# veth pair with its address. Idempotent; exits 0 when there is nothing.
set -u
TESTHOST_NS=${TESTHOST_NS:-podlife-testhost}
TESTHOST_IF=${TESTHOST_IF:-pl-th0}
command -v ip >/dev/null || exit 0
# Deleting the namespace deletes the peer inside it, and with it the pair.
if ip netns list 2>/dev/null | awk '{print $1}' | grep -qx "$TESTHOST_NS"; then
	ip netns delete "$TESTHOST_NS"
fi
if ip link show dev "$TESTHOST_IF" >/dev/null 2>&1; then
	ip link delete dev "$TESTHOST_IF"
fi
exit 0
