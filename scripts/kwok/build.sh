#!/usr/bin/env bash
# build.sh: builds KWOK v0.8.0 (sigs.k8s.io/kwok, a Go module) once into
# $KWOK_CACHE/bin/kwok (default /var/cache/podlife-kwok), with the stages
# its "fast" lifecycle ships in the module (kwokctl's default: nodes Ready
# with Lease heartbeats; pods Running at once, completed, deleted) copied
# to $KWOK_CACHE/stages, for the side-by-side benchmark of bench/cmd/fleet.
# Prints the cache folder. About 3 minutes on a fresh 2-core machine.
set -euo pipefail
export PATH=/usr/local/go/bin:$PATH
KWOK_VERSION=${KWOK_VERSION:-v0.8.0}
KWOK_CACHE=${KWOK_CACHE:-/var/cache/podlife-kwok}
bin=$KWOK_CACHE/bin/kwok
stages=$KWOK_CACHE/stages
if [ -x "$bin" ] && "$bin" --version 2>/dev/null | grep -q "kwok version $KWOK_VERSION " && [ -s "$stages/pod-ready.yaml" ]; then
	echo "$KWOK_CACHE"
	exit 0
fi
mkdir -p "$KWOK_CACHE/bin" "$stages"
echo "build-kwok: building sigs.k8s.io/kwok $KWOK_VERSION" >&2
GOBIN=$KWOK_CACHE/bin GOFLAGS=-mod=mod CGO_ENABLED=0 go install -ldflags '-s -w' "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION" >&2
src=$(go env GOMODCACHE)/sigs.k8s.io/kwok@$KWOK_VERSION/kustomize/stage
cp "$src/node/fast/node-initialize.yaml" "$src/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml" \
	"$src/pod/fast/pod-ready.yaml" "$src/pod/fast/pod-complete.yaml" "$src/pod/fast/pod-delete.yaml" "$stages/"
"$bin" --version >&2
echo "$KWOK_CACHE"
