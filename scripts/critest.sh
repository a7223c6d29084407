#!/usr/bin/env bash
# scripts/critest.sh: judge runtime/fakecri with the Kubernetes CRI validation
# suite, critest from sigs.k8s.io/cri-tools.
#
# It builds critest and crictl $CRITEST_VERSION once from the Go module proxy
# (cached in $CRITEST_CACHE/$CRITEST_VERSION; later runs take seconds), starts
# a standalone fakecri server (examples/fakecri) on a private unix socket,
# runs the suite with the skip list scripts/critest/skip.txt (one regex per
# line, each with a "# reason"), stops the server and exits non-zero if any
# spec failed or the run did not finish.
#
#   bash scripts/critest.sh
#
# Environment (all optional):
#   CRITEST_VERSION  default v1.37.0
#   CRITEST_CACHE    default /var/cache/podlife-critest
#   CRITEST_DIR      work folder (socket, logs), kept; default: a fresh temp
#                    dir, removed after a passing run
#   CRITEST_TIMEOUT  Ginkgo's timeout for the whole suite, default 5m
#   CRITEST_FOCUS    a Ginkgo focus regex (default: every spec)
#   CRITEST_NOSKIP   1: ignore skip.txt (to see what the skips hide)
set -euo pipefail

CRITEST_VERSION=${CRITEST_VERSION:-v1.37.0}
CRITEST_CACHE=${CRITEST_CACHE:-/var/cache/podlife-critest}
CRITEST_TIMEOUT=${CRITEST_TIMEOUT:-5m}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export PATH=/usr/local/go/bin:$PATH

log() { printf 'critest.sh: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# --- build critest and crictl once, keyed by version ---------------------
bin=$CRITEST_CACHE/$CRITEST_VERSION
if [ ! -x "$bin/critest" ] || [ ! -x "$bin/crictl" ]; then
	log "building critest and crictl $CRITEST_VERSION (once; a few minutes)"
	mkdir -p "$bin"
	moddir=$(cd "$ROOT" && go mod download -json "sigs.k8s.io/cri-tools@$CRITEST_VERSION" |
		sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
	[ -d "$moddir" ] || die "cannot download sigs.k8s.io/cri-tools@$CRITEST_VERSION"
	# Build inside a writable copy of the module, with its own go.mod and
	# go.sum, so the dependencies are the ones the release pins.
	src=$(mktemp -d)
	trap 'rm -rf "$src"' EXIT
	cp -r "$moddir/." "$src"
	chmod -R u+w "$src"
	(cd "$src" && GOFLAGS=-mod=mod go test -c -o "$bin/critest.tmp" ./cmd/critest &&
		GOFLAGS=-mod=mod go build -o "$bin/crictl.tmp" ./cmd/crictl) >&2
	mv "$bin/critest.tmp" "$bin/critest"
	mv "$bin/crictl.tmp" "$bin/crictl"
	rm -rf "$src"
	trap - EXIT
fi

# --- start fakecri --------------------------------------------------------
dir=${CRITEST_DIR:-}
keep=1
if [ -z "$dir" ]; then
	dir=$(mktemp -d /tmp/podlife-critest.XXXXXX)
	keep=0 # removed after a passing run, kept for a failing one
fi
mkdir -p "$dir"
sock=$dir/fakecri.sock
(cd "$ROOT" && go build -o "$dir/fakecri" ./examples/fakecri)
# registry.json: what the registry serves for critest's test images (which
# tags name one image, image users), as a real registry would answer.
"$dir/fakecri" -socket "$sock" -log "$dir/fakecri.log" -registry "$ROOT/scripts/critest/registry.json" &
server=$!
stop_server() {
	kill "$server" 2>/dev/null || true
	wait "$server" 2>/dev/null || true
}
trap stop_server EXIT
for _ in $(seq 100); do
	[ -S "$sock" ] && break
	kill -0 "$server" 2>/dev/null || die "fakecri exited; see $dir/fakecri.log"
	sleep 0.1
done
[ -S "$sock" ] || die "fakecri did not listen on $sock"
"$bin/crictl" --runtime-endpoint "unix://$sock" --image-endpoint "unix://$sock" version >&2

# --- run the suite --------------------------------------------------------
skip=""
if [ "${CRITEST_NOSKIP:-0}" != 1 ]; then
	# One regex per line; "# reason" comments and blank lines dropped.
	skip=$(sed -e 's/[[:space:]]*#.*$//' -e '/^[[:space:]]*$/d' "$ROOT/scripts/critest/skip.txt" | paste -sd'|')
fi
args=(--runtime-endpoint "unix://$sock" --image-endpoint "unix://$sock"
	--ginkgo.timeout "$CRITEST_TIMEOUT" --ginkgo.no-color --ginkgo.v=false)
[ -n "$skip" ] && args+=(--ginkgo.skip "$skip")
[ -n "${CRITEST_FOCUS:-}" ] && args+=(--ginkgo.focus "$CRITEST_FOCUS")
log "running critest (log: $dir/critest.log, server log: $dir/fakecri.log)"
start=$(date +%s)
set +e
(cd "$dir" && "$bin/critest" "${args[@]}") >"$dir/critest.log" 2>&1
rc=$?
set -e
elapsed=$(($(date +%s) - start))
stop_server
trap - EXIT

grep -E '^ *\[(FAIL|TIMEDOUT|PANICKED)\]' "$dir/critest.log" | sort -u >&2 || true
summary=$(grep -E '^Ran [0-9]+ of [0-9]+ Specs' "$dir/critest.log" | tail -1 || true)
counts=$(grep -E '[0-9]+ Passed \| [0-9]+ Failed' "$dir/critest.log" | tail -1 || true)
echo "$summary"
echo "$counts"
passed=$(sed -n 's/.* \([0-9]\+\) Passed.*/\1/p' <<<"$counts")
failed=$(sed -n 's/.* \([0-9]\+\) Failed.*/\1/p' <<<"$counts")
skipped=$(sed -n 's/.* \([0-9]\+\) Skipped.*/\1/p' <<<"$counts")
echo "critest: ${passed:-?} passed, ${failed:-?} failed, ${skipped:-?} skipped (${elapsed}s)"
if [ "$rc" -ne 0 ] || [ -z "$counts" ] || [ "${failed:-1}" != 0 ]; then
	log "FAILED (exit $rc); logs in $dir"
	exit 1
fi
[ "$keep" = 1 ] || rm -rf "$dir"
