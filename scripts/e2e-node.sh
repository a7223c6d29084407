#!/usr/bin/env bash
# scripts/e2e-node.sh: judge podlife by Kubernetes' own node conformance
# tests: the [NodeConformance] specs of k8s.io/kubernetes' e2e suite
# (test/e2e/common/node and test/e2e/common/storage), run against a podlife
# node through the API only, as they run against a kubelet.
#
#   bash scripts/e2e-node.sh                      # the whole selection (see below)
#   E2E_SUBSET=passing bash scripts/e2e-node.sh   # only the specs of passing.txt (CI)
#
# What it does, as root on Debian 12:
#  1. starts its own control plane (scripts/apiserver/start.sh, which builds
#     it once and prepares the k8s.io/kubernetes source tree) with a node
#     credential for $E2E_NODE;
#  2. builds, once, e2e.test (`go test -c ./test/e2e`) and the ginkgo CLI at
#     the version the suite's go.mod names, from that source tree, cached in
#     $E2E_CACHE/$E2E_K8S_VERSION;
#  3. starts its own containerd with a CNI bridge (scripts/containerd/start.sh,
#     CRI_CNI=1, the bridge as the pods' gateway so the node reaches them) and
#     imports the suite's images, built offline (scripts/e2e-node/images.sh);
#  4. runs the podlife node: examples/nodeagent with the node's kubeconfig
#     and --pod-network, and waits for its Node to be Ready;
#  5. runs e2e.test in parallel under the ginkgo CLI, focused on
#     [NodeConformance], skipping feature-gated, [Slow], [Serial],
#     [Disruptive] and [Flaky] specs and every regex of
#     scripts/e2e-node/skip.txt (each with its reason), each spec cut by its
#     own timeouts and the whole run by $E2E_TIMEOUT;
#  6. writes the Ginkgo JSON and JUnit reports in $E2E_DIR/report, prints the
#     counts per area, the failed specs and, as its LAST line,
#     "N passed, N failed, N skipped" (only the specs the selection names);
#  7. tears everything down whatever happens (node agent, containers, mounts,
#     bridge, control plane); a rerun starts clean.
#
# Exit status: 0 when the harness worked and every spec of
# scripts/e2e-node/passing.txt passed (spec failures elsewhere do not fail
# it: most specs fail today); 1 when the harness broke (build, cluster, no
# report) or a spec of passing.txt did not pass (a regression). E2E_STRICT=1
# makes any failed spec fail it.
#
# Environment (all optional):
#   E2E_K8S_VERSION  default v1.37.2 (the control plane's version)
#   E2E_CACHE        default /var/cache/podlife-e2e (binaries, image archives)
#   E2E_DIR          work folder: logs, reports (default /tmp/podlife-e2e)
#   E2E_NODE         node name (default podlife-e2e-node)
#   E2E_LISTEN       the node agent's /metrics address (default 127.0.0.1:10356)
#   E2E_PROCS        parallel Ginkgo processes (default 6)
#   E2E_TIMEOUT      Ginkgo's timeout for the whole run (default 60m)
#   E2E_FOCUS        focus regex (default \[NodeConformance\])
#   E2E_SUBSET       "passing": focus on the specs of passing.txt only
#   E2E_STRICT       1: fail on any failed spec
#   E2E_CRI_DIR, E2E_BRIDGE, E2E_SUBNET      containerd (default /tmp/podlife-e2e-cri,
#                    podlife-e2e, 10.86.0.0/24)
#   E2E_API_DIR, E2E_API_PORT, E2E_ETCD_PORT control plane (default
#                    /tmp/podlife-e2e-api, 16520, 24300)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
E2E_K8S_VERSION=${E2E_K8S_VERSION:-v1.37.2}
E2E_CACHE=${E2E_CACHE:-/var/cache/podlife-e2e}
E2E_DIR=${E2E_DIR:-/tmp/podlife-e2e}
E2E_NODE=${E2E_NODE:-podlife-e2e-node}
E2E_LISTEN=${E2E_LISTEN:-127.0.0.1:10356}
E2E_PROCS=${E2E_PROCS:-6}
E2E_TIMEOUT=${E2E_TIMEOUT:-60m}
E2E_FOCUS=${E2E_FOCUS:-'\[NodeConformance\]'}
E2E_SUBSET=${E2E_SUBSET:-}
E2E_STRICT=${E2E_STRICT:-0}
E2E_CRI_DIR=${E2E_CRI_DIR:-/tmp/podlife-e2e-cri}
E2E_BRIDGE=${E2E_BRIDGE:-podlife-e2e}
E2E_SUBNET=${E2E_SUBNET:-10.86.0.0/24}
E2E_API_DIR=${E2E_API_DIR:-/tmp/podlife-e2e-api}
E2E_API_PORT=${E2E_API_PORT:-16520}
E2E_ETCD_PORT=${E2E_ETCD_PORT:-24300}
API_BIN_CACHE=${API_BIN_CACHE:-/var/cache/podlife-apiserver}
SRC=$API_BIN_CACHE/src/kubernetes-$E2E_K8S_VERSION
KUBECTL=$API_BIN_CACHE/bin/kubectl
BIN=$E2E_CACHE/$E2E_K8S_VERSION
HERE=$ROOT/scripts/e2e-node
# The base exclusions: what the selection leaves out (report.go's -exclude).
EXCLUDE='\[(Feature|FeatureGate|Alpha|Beta):?[^\]]*\]|\[Slow\]|\[Serial\]|\[Disruptive\]|\[Flaky\]'
export PATH=/usr/local/go/bin:$PATH GOWORK=off

log() { printf 'e2e-node: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
[ "$(id -u)" = 0 ] || die "must run as root"
command -v go >/dev/null || die "no go command"
mkdir -p "$E2E_DIR"
E2E_DIR=$(cd "$E2E_DIR" && pwd)

# Each sub-script gets its settings explicitly: .ci/run exports API_DIR and
# friends for its own instances, which must not be reused here.
cri() { CRI_DIR=$E2E_CRI_DIR CRI_CNI=1 CRI_CNI_GATEWAY=1 CRI_BRIDGE=$E2E_BRIDGE CRI_CNI_SUBNET=$E2E_SUBNET "$@"; }
api() { API_DIR=$E2E_API_DIR API_PORT=$E2E_API_PORT ETCD_PORT=$E2E_ETCD_PORT API_NODES=$E2E_NODE "$@"; }

# ---- teardown (also at start: a rerun starts clean) -------------------------
agent_pid=$E2E_DIR/nodeagent.pid
ginkgo_pid=""
is_ours() { # pid binary -> true if pid runs that binary of ours
	[ -n "${1:-}" ] && [ -r "/proc/$1/cmdline" ] && [[ $( { tr '\0' ' ' <"/proc/$1/cmdline"; } 2>/dev/null) == "$2 "* ]]
}
stop_pid() { # pid binary
	is_ours "$1" "$2" || return 0
	kill -TERM "$1" 2>/dev/null || true
	for _ in $(seq 100); do is_ours "$1" "$2" || return 0; sleep 0.1; done
	kill -KILL "$1" 2>/dev/null || true
}
teardown() {
	set +e
	if [ -n "$ginkgo_pid" ] && kill -0 "$ginkgo_pid" 2>/dev/null; then
		log "stopping the ginkgo run (pid $ginkgo_pid)"
		kill -TERM "$ginkgo_pid" 2>/dev/null
		for _ in $(seq 100); do kill -0 "$ginkgo_pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$ginkgo_pid" 2>/dev/null
	fi
	# ginkgo's parallel e2e.test processes outlive a killed ginkgo: stop
	# those of this run (they name its output folder).
	pkill -KILL -f -- "--e2e-output-dir=$E2E_DIR/out" 2>/dev/null
	[ -f "$agent_pid" ] && stop_pid "$(cat "$agent_pid")" "$E2E_DIR/nodeagent"
	rm -f "$agent_pid"
	cri env CRI_CGROUP_PARENTS=/podlife bash "$ROOT/scripts/containerd/stop.sh" 2>>"$E2E_DIR/teardown.log"
	api bash "$ROOT/scripts/apiserver/stop.sh" 2>>"$E2E_DIR/teardown.log"
	# Memory-backed volumes (secrets, tokens) of pods the agent did not get
	# to tear down are mounts: unmount them, deepest first, then remove.
	awk -v d="$E2E_DIR/" 'index($2, d) == 1 {print $2}' /proc/self/mounts | sort -r | while read -r m; do
		umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
	done
	[ -d "$E2E_DIR/tmp" ] && rm -rf --one-file-system "$E2E_DIR/tmp"
	set -e
}
teardown
trap teardown EXIT
trap 'exit 130' INT TERM

# ---- control plane (prepares the source tree) ------------------------------
t0=$SECONDS
kc=$(api bash "$ROOT/scripts/apiserver/start.sh") || die "control plane did not start"
log "control plane up in $((SECONDS - t0)) s"
[ -f "$SRC/.prepared" ] || die "no prepared source tree at $SRC"

# ---- e2e.test and ginkgo (once) ---------------------------------------------
mkdir -p "$BIN"
# e2e.test with only the suites that hold [NodeConformance] specs: the
# package's e2e_test.go imports every suite (storage drivers, networking,
# autoscaling, DRA, ...) and the NodeConformance specs are all in
# test/e2e/common (node, storage, network) and test/e2e/apps. The build
# replaces that file, through an overlay, by a copy importing only those; the
# other suites' specs would all be focused out anyway, and not compiling them
# saves minutes on a fresh machine. Built with the control plane's compiler
# settings (static, no debug information), so it reuses its compilations.
E2E_TEST=$BIN/e2e-nodeconformance.test
if [ ! -x "$E2E_TEST" ]; then
	log "building e2e.test $E2E_K8S_VERSION with the NodeConformance suites (once; minutes after the control plane's build)"
	t0=$SECONDS
	ov=$(mktemp -d)
	# Blank imports of test/e2e/X are kept for these X only.
	keep='^(apps|common|feature|framework/.*)$'
	awk -v keep="$keep" '
		/^[ \t]+_ "k8s\.io\/kubernetes\/test\/e2e\/[^"]+"$/ {
			p = $0; sub(/^[^"]*"k8s\.io\/kubernetes\/test\/e2e\//, "", p); sub(/"$/, "", p)
			if (p !~ keep) { dropped++; next }
			kept++
		}
		{ print }
		END { if (!kept || !dropped) exit 1 }' "$SRC/test/e2e/e2e_test.go" >"$ov/e2e_test.go" ||
		{ rm -rf "$ov"; die "test/e2e/e2e_test.go does not import its suites as expected: the trimming needs a look"; }
	printf '{"Replace":{"%s":"%s"}}' "$SRC/test/e2e/e2e_test.go" "$ov/e2e_test.go" >"$ov/overlay.json"
	(cd "$SRC" && CGO_ENABLED=0 GOFLAGS=-mod=mod go test -c -ldflags='-s -w' -overlay "$ov/overlay.json" \
		-o "$E2E_TEST.tmp" ./test/e2e) >&2 || { rm -rf "$ov"; die "building e2e.test failed"; }
	rm -rf "$ov"
	mv "$E2E_TEST.tmp" "$E2E_TEST"
	log "built e2e.test in $((SECONDS - t0)) s"
fi
if [ ! -x "$BIN/ginkgo" ]; then
	gv=$(sed -n 's#^[[:space:]]*github.com/onsi/ginkgo/v2 \(v[^ ]*\).*#\1#p' "$SRC/go.mod" | head -1)
	[ -n "$gv" ] || die "no github.com/onsi/ginkgo/v2 in $SRC/go.mod"
	log "building the ginkgo CLI $gv (the version the suite's go.mod names)"
	t0=$SECONDS
	gb=$(mktemp -d)
	(cd "$gb" && GOBIN=$gb GOFLAGS= go install "github.com/onsi/ginkgo/v2/ginkgo@$gv") >&2 || { rm -rf "$gb"; die "building ginkgo failed"; }
	mv "$gb/ginkgo" "$BIN/ginkgo"
	rm -rf "$gb"
	log "built ginkgo in $((SECONDS - t0)) s"
fi

# ---- containerd with a CNI bridge, and the images ------------------------------
t0=$SECONDS
sock=$(cri bash "$ROOT/scripts/containerd/start.sh") || die "containerd did not start"
ctr=$(cat "$E2E_CRI_DIR/ctr.path")
E2E_CACHE=$E2E_CACHE bash "$HERE/images.sh" "$SRC" "$ctr" "$sock" || die "images failed"
log "containerd and images ready in $((SECONDS - t0)) s"

# ---- the podlife node -----------------------------------------------------------
(cd "$ROOT" && go build -o "$E2E_DIR/nodeagent" ./examples/nodeagent) || die "building the node agent failed"
mkdir -p "$E2E_DIR/manifests" "$E2E_DIR/tmp"
# TMPDIR: the runtime adapter keeps volumes, logs and termination messages
# under $TMPDIR/podlife-volumes, removed at teardown. The node server (logs,
# exec, port-forward for the specs) listens on loopback on a free port, and
# the Node says 127.0.0.1: the API server reaches it there and nowhere else,
# with its kubelet client certificate, signed by the cluster CA.
# The machine's disk holds build caches and is shared with other work: the
# disk eviction thresholds and image garbage collection would take it for a
# full node's, refuse the suite's pods and remove its images, which were
# imported offline and cannot be pulled again. So only the memory threshold
# is kept, and no image is garbage collected.
E2E_AGENT_HOST_FLAGS="--eviction-hard memory.available<100Mi --image-gc-high-threshold 100"
TMPDIR=$E2E_DIR/tmp nohup "$E2E_DIR/nodeagent" --kubeconfig "$E2E_API_DIR/node-$E2E_NODE.kubeconfig" \
	--node-name "$E2E_NODE" --cri-endpoint "unix://$sock" --pod-network \
	--address 127.0.0.1 --port 0 --node-ip 127.0.0.1 --client-ca-file "$E2E_API_DIR/ca.crt" \
	--manifests "$E2E_DIR/manifests" --listen "$E2E_LISTEN" $E2E_AGENT_HOST_FLAGS -v 2 >"$E2E_DIR/nodeagent.log" 2>&1 </dev/null &
echo $! >"$agent_pid"
ready=0
# Right after `&` the child is still the forked shell, then nohup, before it
# runs the agent: it counts as exited only once it ran the agent and no
# longer does, or is gone (a start that never comes ends at the 60 s bound).
seen=0
for _ in $(seq 120); do
	pid=$(cat "$agent_pid")
	if is_ours "$pid" "$E2E_DIR/nodeagent"; then
		seen=1
	elif [ $seen = 1 ] || ! kill -0 "$pid" 2>/dev/null; then
		tail -20 "$E2E_DIR/nodeagent.log" >&2
		die "the node agent exited"
	fi
	st=$("$KUBECTL" --kubeconfig "$kc" get node "$E2E_NODE" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null || true)
	[ "$st" = True ] && { ready=1; break; }
	sleep 0.5
done
[ $ready = 1 ] || { tail -20 "$E2E_DIR/nodeagent.log" >&2; die "node $E2E_NODE not Ready within 60 s"; }
log "node $E2E_NODE Ready"

# ---- the run ------------------------------------------------------------------------
list() { sed -e 's/[[:space:]]*#.*$//' -e '/^[[:space:]]*$/d' "$1"; }
skip="$EXCLUDE"
while IFS= read -r re; do skip+="|$re"; done < <(list "$HERE/skip.txt")
focus=$E2E_FOCUS
if [ "$E2E_SUBSET" = passing ]; then
	# Each full spec text, as a literal regex.
	focus=$(list "$HERE/passing.txt" | sed -e 's/[][\\.*^$(){}?+|]/\\&/g' | paste -sd'|')
	if [ -z "$focus" ]; then
		# Nothing to gate yet: the builds, the cluster and the node were checked.
		log "passing.txt lists no spec: nothing to run; the harness came up"
		echo "0 passed, 0 failed, 0 skipped"
		exit 0
	fi
fi
report=$E2E_DIR/report
rm -rf "$report"
mkdir -p "$report"
# e2e.test's settings: the admin kubeconfig, no provider, no wait for system
# pods or log dumps over SSH; images named by KUBE_TEST_REPO_LIST.
args=(--kubeconfig="$kc" --host="https://127.0.0.1:$E2E_API_PORT" --provider=skeleton
	--minStartupPods=-1 --allowed-not-ready-nodes=0 --node-schedulable-timeout=2m --disable-log-dump
	--kubectl-path="$KUBECTL" --repo-root="$SRC" --e2e-output-dir="$E2E_DIR/out"
	--container-runtime-endpoint="unix://$sock" --node-os-distro=debian)
mkdir -p "$E2E_DIR/out"
log "running e2e.test: $E2E_PROCS processes, timeout $E2E_TIMEOUT (log: $E2E_DIR/e2e.log)"
t0=$SECONDS
set +e
(cd "$E2E_DIR" && KUBE_TEST_REPO_LIST=$HERE/repo-list.yaml "$BIN/ginkgo" run -p --procs="$E2E_PROCS" \
	--timeout="$E2E_TIMEOUT" --focus="$focus" --skip="$skip" --no-color --silence-skips \
	--json-report=report.json --junit-report=junit.xml --output-dir="$report" \
	"$E2E_TEST" -- "${args[@]}") >"$E2E_DIR/e2e.log" 2>&1 &
ginkgo_pid=$!
wait "$ginkgo_pid"
rc=$?
ginkgo_pid=""
set -e
elapsed=$((SECONDS - t0))
log "e2e.test finished in ${elapsed} s (ginkgo exit $rc)"
[ -s "$report/report.json" ] || { tail -30 "$E2E_DIR/e2e.log" >&2; die "no report (ginkgo exit $rc)"; }

set +e
(cd "$ROOT" && go run ./scripts/e2e-node/report.go -report "$report/report.json" -exclude "$EXCLUDE" \
	-passing "$HERE/passing.txt" -passed "$report/passed.txt") >"$report/summary.txt"
grc=$?
set -e
sed '$d' "$report/summary.txt"
echo "report: $report (report.json, junit.xml, summary.txt, passed.txt); run ${elapsed} s with $E2E_PROCS processes"
counts=$(tail -1 "$report/summary.txt")
[[ $counts =~ ^[0-9]+\ passed,\ [0-9]+\ failed,\ [0-9]+\ skipped$ ]] || die "report failed (exit $grc)"
status=0
[ $grc = 0 ] || { log "REGRESSION: a spec of passing.txt did not pass"; status=1; }
if [ "$E2E_STRICT" = 1 ] && [[ $counts != *" 0 failed,"* ]]; then status=1; fi
echo "$counts"
exit $status
