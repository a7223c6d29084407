#!/usr/bin/env bash
# scripts/metrics-server/stop.sh: stop the metrics-server that start.sh
# started in API_DIR (default /tmp/podlife-api): first the metrics API
# registration it made (APIService v1beta1.metrics.k8s.io, Service,
# Endpoints and EndpointSlice kube-system/metrics-server*), then exactly the
# process in its pid file. Idempotent.
set -u
API_DIR=${API_DIR:-/tmp/podlife-api}
if [ -f "$API_DIR/metrics-server.registered" ]; then
	kubectl=${API_BIN_CACHE:-/var/cache/podlife-apiserver}/bin/kubectl
	[ -f "$API_DIR/env" ] && kubectl=$(sed -n 's/^API_KUBECTL=//p' "$API_DIR/env")
	# The APIService first: an unavailable one stalls discovery (and so
	# namespace deletion) for every client.
	"$kubectl" --kubeconfig "$API_DIR/admin.kubeconfig" delete --ignore-not-found --wait=false --request-timeout=10s \
		apiservice/v1beta1.metrics.k8s.io >/dev/null 2>&1
	"$kubectl" --kubeconfig "$API_DIR/admin.kubeconfig" -n kube-system delete --ignore-not-found --wait=false --request-timeout=10s \
		service/metrics-server endpoints/metrics-server endpointslice.discovery.k8s.io/metrics-server-podlife >/dev/null 2>&1
	rm -f "$API_DIR/metrics-server.registered"
fi
f=$API_DIR/metrics-server.pid
[ -f "$f" ] || exit 0
pid=$(cat "$f")
if kill -0 "$pid" 2>/dev/null; then
	kill "$pid" 2>/dev/null
	for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null
fi
rm -f "$f"
exit 0
