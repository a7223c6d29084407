#!/usr/bin/env bash
# scripts/metrics-server/build.sh: build metrics-server (sigs.k8s.io/metrics-server,
# MS_VERSION, default v0.8.0) once from the Go module proxy (GOFLAGS=-mod=mod)
# into MS_BIN_CACHE (default /var/cache/podlife-metrics-server), a few
# minutes; nothing to do afterwards. Prints the binary's path.
set -euo pipefail
MS_VERSION=${MS_VERSION:-v0.8.0}
MS_BIN_CACHE=${MS_BIN_CACHE:-/var/cache/podlife-metrics-server}
export PATH=/usr/local/go/bin:$PATH GOWORK=off
bin=$MS_BIN_CACHE/$MS_VERSION/metrics-server
if [ ! -x "$bin" ]; then
	printf 'metrics-server: building %s (once; a few minutes)\n' "$MS_VERSION" >&2
	mkdir -p "$(dirname "$bin")"
	(cd / && GOBIN=$(dirname "$bin") GOFLAGS=-mod=mod go install "sigs.k8s.io/metrics-server/cmd/metrics-server@$MS_VERSION") >&2 || {
		printf 'metrics-server: error: build failed\n' >&2
		exit 1
	}
fi
echo "$bin"
