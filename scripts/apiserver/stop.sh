#!/usr/bin/env bash
# scripts/apiserver/stop.sh: stop the control plane that scripts/apiserver/start.sh started in
# API_DIR (default /tmp/podlife-api): exactly the processes in its pid files,
# scheduler and controllers first, etcd last. Keeps the folder (logs) unless
# API_CLEAN=1.
set -u
API_DIR=${API_DIR:-/tmp/podlife-api}
[ -d "$API_DIR" ] || exit 0
cd "$API_DIR" || exit 0
for name in kube-scheduler kube-controller-manager kube-apiserver etcd; do
	[ -f "$name.pid" ] || continue
	pid=$(cat "$name.pid")
	if kill -0 "$pid" 2>/dev/null; then
		kill "$pid" 2>/dev/null
		for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null
	fi
	rm -f "$name.pid"
done
[ "${API_CLEAN:-0}" = 1 ] && { cd / && rm -rf "$API_DIR"; }
exit 0
