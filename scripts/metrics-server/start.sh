#!/usr/bin/env bash
# scripts/metrics-server/start.sh: run metrics-server (sigs.k8s.io/metrics-server,
# MS_VERSION, default v0.8.0, built once by build.sh) against the control
# plane of scripts/apiserver/start.sh in API_DIR (default /tmp/podlife-api):
# it scrapes every Node's /metrics/resource at its InternalIP and
# status.daemonEndpoints port, as it does kubelets, with the API server's
# kubelet client certificate, and serves the metrics API on
# https://MS_ADDRESS:MS_PORT. Prints that URL; stop it with
# scripts/metrics-server/stop.sh (same API_DIR).
#
# Environment (all optional):
#   MS_ADDRESS        address it listens on (default 127.0.0.1)
#   MS_PORT           its port (default 16530)
#   MS_RESOLUTION     --metric-resolution (default 15s; 10s is the least it takes)
#   MS_KUBELET_TIMEOUT  --kubelet-request-timeout (default 5s; under 0.9 x the
#                     resolution)
#   MS_NODE_SELECTOR  --node-selector: scrape only the Nodes with these labels
#                     (e.g. kubernetes.io/hostname=n1); default every Node
#
# With MS_ADDRESS not a loopback address (scripts/testhost/up.sh makes one
# that exists only on this machine), it also registers the metrics API for
# `kubectl top`: APIService v1beta1.metrics.k8s.io to Service
# kube-system/metrics-server, without selector, whose Endpoints and
# EndpointSlice name MS_ADDRESS:MS_PORT (the API server runs with
# --enable-aggregator-routing, so it dials that endpoint; endpoints may not
# be loopback addresses), and waits until the APIService is Available.
# stop.sh removes them.
#
#   addr=$(bash scripts/testhost/up.sh)
#   MS_ADDRESS=$addr bash scripts/metrics-server/start.sh
#   kubectl --kubeconfig /tmp/podlife-api/admin.kubeconfig top node
#
# On a loopback address, query the API directly:
#
#   url=$(bash scripts/metrics-server/start.sh)
#   tok=$(awk -F, 'NR==1{print $1}' /tmp/podlife-api/tokens.csv)
#   curl -sk -H "Authorization: Bearer $tok" $url/apis/metrics.k8s.io/v1beta1/nodes
set -euo pipefail
API_DIR=${API_DIR:-/tmp/podlife-api}
MS_ADDRESS=${MS_ADDRESS:-127.0.0.1}
MS_PORT=${MS_PORT:-16530}
MS_RESOLUTION=${MS_RESOLUTION:-15s}
MS_KUBELET_TIMEOUT=${MS_KUBELET_TIMEOUT:-5s}
MS_NODE_SELECTOR=${MS_NODE_SELECTOR:-}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

log() { printf 'metrics-server: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

[ -f "$API_DIR/admin.kubeconfig" ] || die "no control plane in $API_DIR (run scripts/apiserver/start.sh)"
bin=$(bash "$HERE/build.sh")
kubectl=${API_BIN_CACHE:-/var/cache/podlife-apiserver}/bin/kubectl
[ -f "$API_DIR/env" ] && kubectl=$(sed -n 's/^API_KUBECTL=//p' "$API_DIR/env")

cd "$API_DIR"
if [ -f metrics-server.pid ] && kill -0 "$(cat metrics-server.pid)" 2>/dev/null; then
	die "already running (pid $(cat metrics-server.pid)); stop it with scripts/metrics-server/stop.sh"
fi
case $MS_ADDRESS in
127.* | ::1 | localhost) register=0 ;;
*) register=1 ;;
esac
url=https://$MS_ADDRESS:$MS_PORT
[[ $MS_ADDRESS == *:* ]] && url="https://[$MS_ADDRESS]:$MS_PORT"
mkdir -p metrics-server-certs
args=(--kubeconfig admin.kubeconfig
	--authentication-kubeconfig admin.kubeconfig --authorization-kubeconfig admin.kubeconfig
	--bind-address "$MS_ADDRESS" --secure-port "$MS_PORT" --cert-dir metrics-server-certs
	--kubelet-client-certificate kubelet-client.crt --kubelet-client-key kubelet-client.key
	--kubelet-insecure-tls --kubelet-preferred-address-types InternalIP --kubelet-use-node-status-port
	--metric-resolution "$MS_RESOLUTION" --kubelet-request-timeout "$MS_KUBELET_TIMEOUT")
[ -n "$MS_NODE_SELECTOR" ] && args+=(--node-selector "$MS_NODE_SELECTOR")
"$bin" "${args[@]}" >metrics-server.log 2>&1 &
echo $! >metrics-server.pid
live=0
for _ in $(seq 100); do
	if curl -sk --max-time 1 "$url/livez" >/dev/null 2>&1; then
		live=1
		break
	fi
	kill -0 "$(cat metrics-server.pid)" 2>/dev/null || die "exited at start (log: $API_DIR/metrics-server.log)"
	sleep 0.2
done
[ $live = 1 ] || { bash "$HERE/stop.sh"; die "not live after 20 s (log: $API_DIR/metrics-server.log)"; }

if [ $register = 1 ]; then
	family=IPv4
	[[ $MS_ADDRESS == *:* ]] && family=IPv6
	touch metrics-server.registered
	"$kubectl" --kubeconfig admin.kubeconfig apply -f - >&2 <<YAML || { bash "$HERE/stop.sh"; die "could not register the metrics API"; }
apiVersion: v1
kind: Service
metadata: {name: metrics-server, namespace: kube-system, labels: {app.kubernetes.io/managed-by: podlife-scripts}}
spec:
  ports: [{name: https, port: 443, protocol: TCP, targetPort: $MS_PORT}]
---
apiVersion: v1
kind: Endpoints
metadata:
  name: metrics-server
  namespace: kube-system
  # The EndpointSlice below is written by hand: no mirrored copy.
  labels: {app.kubernetes.io/managed-by: podlife-scripts, endpointslice.kubernetes.io/skip-mirror: "true"}
subsets:
- addresses: [{ip: "$MS_ADDRESS"}]
  ports: [{name: https, port: $MS_PORT, protocol: TCP}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: metrics-server-podlife
  namespace: kube-system
  labels: {kubernetes.io/service-name: metrics-server, endpointslice.kubernetes.io/managed-by: podlife-scripts}
addressType: $family
endpoints:
- addresses: ["$MS_ADDRESS"]
  conditions: {ready: true}
ports: [{name: https, port: $MS_PORT, protocol: TCP}]
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1beta1.metrics.k8s.io, labels: {app.kubernetes.io/managed-by: podlife-scripts}}
spec:
  group: metrics.k8s.io
  version: v1beta1
  service: {name: metrics-server, namespace: kube-system, port: 443}
  insecureSkipTLSVerify: true
  groupPriorityMinimum: 100
  versionPriority: 100
YAML
	"$kubectl" --kubeconfig admin.kubeconfig wait --for=condition=Available --timeout=60s apiservice/v1beta1.metrics.k8s.io >&2 ||
		{ bash "$HERE/stop.sh"; die "APIService v1beta1.metrics.k8s.io not Available after 60 s (log: $API_DIR/metrics-server.log)"; }
	log "registered: APIService v1beta1.metrics.k8s.io -> kube-system/metrics-server -> $MS_ADDRESS:$MS_PORT"
fi
log "ready: $url (log: $API_DIR/metrics-server.log)"
echo "$url"
