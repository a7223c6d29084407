#!/usr/bin/env bash
# scripts/metrics-server/start.sh: run metrics-server (sigs.k8s.io/metrics-server,
# MS_VERSION, default v0.8.0) against the control plane of
# scripts/apiserver/start.sh in API_DIR (default /tmp/podlife-api): it scrapes
# every Node's /metrics/resource at its InternalIP and
# status.daemonEndpoints port, as it does kubelets, with the API server's
# kubelet client certificate, and serves the metrics API on
# https://127.0.0.1:MS_PORT (default 16530).
#
# Built once from the Go module proxy (GOFLAGS=-mod=mod) into MS_BIN_CACHE
# (default /var/cache/podlife-metrics-server), a few minutes; seconds after.
# Prints the metrics API's URL; stop it with scripts/metrics-server/stop.sh.
#
# It registers no APIService: with aggregator routing the API server dials
# the service's endpoint, which may not be a loopback address, so `kubectl
# top` needs metrics-server on a non-loopback address of the machine (give
# the APIService a Service with that Endpoint). Query the API directly:
#
#   url=$(bash scripts/metrics-server/start.sh)
#   tok=$(awk -F, 'NR==1{print $1}' /tmp/podlife-api/tokens.csv)
#   curl -sk -H "Authorization: Bearer $tok" $url/apis/metrics.k8s.io/v1beta1/nodes
set -euo pipefail
API_DIR=${API_DIR:-/tmp/podlife-api}
MS_VERSION=${MS_VERSION:-v0.8.0}
MS_PORT=${MS_PORT:-16530}
MS_BIN_CACHE=${MS_BIN_CACHE:-/var/cache/podlife-metrics-server}
export PATH=/usr/local/go/bin:$PATH

log() { printf 'metrics-server: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

[ -f "$API_DIR/admin.kubeconfig" ] || die "no control plane in $API_DIR (run scripts/apiserver/start.sh)"
bin=$MS_BIN_CACHE/$MS_VERSION/metrics-server
if [ ! -x "$bin" ]; then
	log "building metrics-server $MS_VERSION (once; a few minutes)"
	mkdir -p "$(dirname "$bin")"
	(cd / && GOBIN=$(dirname "$bin") GOFLAGS=-mod=mod go install "sigs.k8s.io/metrics-server/cmd/metrics-server@$MS_VERSION") >&2 ||
		die "build failed"
fi

cd "$API_DIR"
if [ -f metrics-server.pid ] && kill -0 "$(cat metrics-server.pid)" 2>/dev/null; then
	die "already running (pid $(cat metrics-server.pid)); stop it with scripts/metrics-server/stop.sh"
fi
mkdir -p metrics-server-certs
"$bin" \
	--kubeconfig admin.kubeconfig \
	--authentication-kubeconfig admin.kubeconfig --authorization-kubeconfig admin.kubeconfig \
	--bind-address 127.0.0.1 --secure-port "$MS_PORT" --cert-dir metrics-server-certs \
	--kubelet-client-certificate kubelet-client.crt --kubelet-client-key kubelet-client.key \
	--kubelet-insecure-tls --kubelet-preferred-address-types InternalIP --kubelet-use-node-status-port \
	--metric-resolution 15s >metrics-server.log 2>&1 &
echo $! >metrics-server.pid
for _ in $(seq 100); do
	if curl -sk "https://127.0.0.1:$MS_PORT/livez" >/dev/null 2>&1; then
		log "ready: https://127.0.0.1:$MS_PORT (log: $API_DIR/metrics-server.log)"
		echo "https://127.0.0.1:$MS_PORT"
		exit 0
	fi
	kill -0 "$(cat metrics-server.pid)" 2>/dev/null || die "exited at start (log: $API_DIR/metrics-server.log)"
	sleep 0.2
done
die "not live after 20 s (log: $API_DIR/metrics-server.log)"
