#!/usr/bin/env bash
# scripts/metrics-server/stop.sh: stop the metrics-server that start.sh
# started in API_DIR (default /tmp/podlife-api): exactly the process in its
# pid file.
set -u
API_DIR=${API_DIR:-/tmp/podlife-api}
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
