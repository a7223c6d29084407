#!/usr/bin/env bash
# scripts/registry/start.sh: run a private image registry for podlife's
# tests: the CNCF distribution registry (github.com/distribution/distribution/v3,
# REG_VERSION, default v3.1.2) on http://127.0.0.1:REG_PORT, plain HTTP,
# with htpasswd (bcrypt) authentication, holding one test image: the
# project's pause image (scripts/containerd/start.sh builds it as
# $CRI_DIR/build/pause.tar) pushed as 127.0.0.1:REG_PORT/REG_REPO:REG_TAG,
# with one label added to its config so that it is a distinct image (its
# own image ID): a test may remove it from containerd without removing
# the pause image, which containerd's CRI would do for a shared ID.
#
# The registry and two small helpers (scripts/registry/tools: an htpasswd
# writer and a pusher speaking the OCI distribution API with net/http) are
# built once from the Go module proxy (GOFLAGS=-mod=mod, module and build
# caches of their own in a temporary folder, removed after) and cached in
# REG_BIN_CACHE (measured: 25 minutes on a 2-core machine busy with other
# builds, about 5 CPU-minutes), nothing after.
#
#   env=$(bash scripts/registry/start.sh)   # prints the env file's path
#   set -a; . "$env"; set +a               # REG_ADDR REG_USER REG_PASSWORD REG_IMAGE
#   ... tests pull $REG_IMAGE with $REG_USER/$REG_PASSWORD ...
#   bash scripts/registry/stop.sh
#
# A registry already running in REG_DIR is stopped and started afresh.
# containerd reaches it over plain HTTP through the hosts.toml files that
# scripts/containerd/start.sh writes (CRI_INSECURE_REGISTRIES).
#
# Environment (all optional):
#   REG_DIR        working folder: config, htpasswd, storage (data/), log,
#                  pid file, env (default /tmp/podlife-registry)
#   REG_PORT       default 15000 (listens on 127.0.0.1 only)
#   REG_VERSION    default v3.1.2
#   REG_BIN_CACHE  default /var/cache/podlife-registry
#   REG_USER       default podlife
#   REG_PASSWORD   default: random, new at each start (in REG_DIR/env, 0600)
#   REG_REPO, REG_TAG  default podlife/private and 1.0
#   REG_ARCHIVE    the OCI archive to push (default $CRI_DIR/build/pause.tar,
#                  CRI_DIR defaulting to /tmp/podlife-cri)
#
# Files in REG_DIR: config.yml, htpasswd, data/, registry.log, registry.pid
# and env (REG_ADDR, REG_USER, REG_PASSWORD, REG_IMAGE, REG_IMAGE_DIGEST as
# KEY=value lines). The password is never printed.
set -euo pipefail

REG_DIR=${REG_DIR:-/tmp/podlife-registry}
REG_PORT=${REG_PORT:-15000}
REG_VERSION=${REG_VERSION:-v3.1.2}
REG_BIN_CACHE=${REG_BIN_CACHE:-/var/cache/podlife-registry}
REG_USER=${REG_USER:-podlife}
REG_REPO=${REG_REPO:-podlife/private}
REG_TAG=${REG_TAG:-1.0}
CRI_DIR=${CRI_DIR:-/tmp/podlife-cri}
REG_ARCHIVE=${REG_ARCHIVE:-$CRI_DIR/build/pause.tar}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export PATH=/usr/local/go/bin:$PATH

log() { printf 'registry: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

case $REG_PORT in '' | *[!0-9]*) die "REG_PORT must be a number" ;; esac
case $REG_USER in '' | *:* | *[[:space:]]*) die "REG_USER may not be empty or contain ':' or spaces" ;; esac
command -v curl >/dev/null || die "curl not found"

# ------------------------------------------------------------------ build
BIN=$REG_BIN_CACHE/$REG_VERSION
TOOLS=$REG_BIN_CACHE/tools
tools_stale() {
	[ -x "$TOOLS/htpasswd" ] && [ -x "$TOOLS/push" ] || return 0
	[ -n "$(find "$HERE/tools" -type f -newer "$TOOLS/push" -print -quit)" ]
}
if [ ! -x "$BIN/registry" ] || tools_stale; then
	command -v go >/dev/null || die "go not found (expected in /usr/local/go/bin)"
	mkdir -p "$REG_BIN_CACHE"
	work=$(mktemp -d "$REG_BIN_CACHE/build.XXXXXX")
	cleanup() { chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"; }
	export GOWORK=off CGO_ENABLED=0 GOMODCACHE=$work/mod GOCACHE=$work/cache
	if [ ! -x "$BIN/registry" ]; then
		log "building the registry $REG_VERSION from the Go module proxy (once; 5 CPU-minutes or more)"
		start=$(date +%s)
		if ! (cd "$work" && GOBIN="$work/bin" GOFLAGS="-mod=mod -buildvcs=false" \
			go install -trimpath -ldflags='-s -w' "github.com/distribution/distribution/v3/cmd/registry@$REG_VERSION") >&2; then
			cleanup
			die "go install of the registry $REG_VERSION failed"
		fi
		rm -rf "$BIN" && mkdir -p "$(dirname "$BIN")" && mv "$work/bin" "$BIN"
		log "registry built in $(($(date +%s) - start)) s"
	fi
	if tools_stale; then
		log "building scripts/registry/tools"
		if ! (cd "$HERE/tools" && GOFLAGS="-mod=readonly -buildvcs=false" \
			go build -trimpath -ldflags='-s -w' -o "$work/tools/" ./htpasswd ./push) >&2; then
			cleanup
			die "building scripts/registry/tools failed"
		fi
		rm -rf "$TOOLS" && mv "$work/tools" "$TOOLS"
	fi
	cleanup
fi
"$BIN/registry" --version >/dev/null 2>&1 || die "$BIN/registry does not run"

# ------------------------------------------------------------ (re)start
[ -s "$REG_ARCHIVE" ] || die "no image archive at $REG_ARCHIVE (run scripts/containerd/start.sh first, or set REG_ARCHIVE)"
mkdir -p "$REG_DIR"
REG_DIR=$(cd "$REG_DIR" && pwd)
PIDFILE=$REG_DIR/registry.pid LOG=$REG_DIR/registry.log
REG_DIR=$REG_DIR bash "$HERE/stop.sh" >&2
rm -rf "$REG_DIR/data"
mkdir -p "$REG_DIR/data"
umask 077

if [ -z "${REG_PASSWORD:-}" ]; then
	REG_PASSWORD=$(head -c 18 /dev/urandom | base64 | tr '+/' 'xy')
fi
printf '%s' "$REG_PASSWORD" | "$TOOLS/htpasswd" -user "$REG_USER" >"$REG_DIR/htpasswd" || die "htpasswd failed"
secret=$(head -c 24 /dev/urandom | base64 | tr '+/' 'xy')
cat >"$REG_DIR/config.yml" <<CONF
version: 0.1
log:
  level: info
  formatter: text
storage:
  filesystem:
    rootdirectory: $REG_DIR/data
  delete:
    enabled: true
  maintenance:
    uploadpurging:
      enabled: false
http:
  addr: 127.0.0.1:$REG_PORT
  secret: $secret
auth:
  htpasswd:
    realm: podlife-registry
    path: $REG_DIR/htpasswd
CONF

printf '\n===== %s start\n' "$(date -u +%FT%TZ)" >>"$LOG"
# No OpenTelemetry exporter: the registry would otherwise try to send traces.
OTEL_TRACES_EXPORTER=none OTEL_METRICS_EXPORTER=none OTEL_SDK_DISABLED=true \
	nohup "$BIN/registry" serve "$REG_DIR/config.yml" >>"$LOG" 2>&1 </dev/null &
pid=$!
printf '%s\n' "$pid" >"$PIDFILE"
url=http://127.0.0.1:$REG_PORT
code=
for _ in $(seq 1 100); do
	kill -0 "$pid" 2>/dev/null || { tail -n 20 "$LOG" >&2; rm -f "$PIDFILE"; die "the registry exited at start (port $REG_PORT taken? log: $LOG)"; }
	code=$(curl -s -o /dev/null -w '%{http_code}' "$url/v2/" 2>/dev/null || true)
	[ "$code" = 401 ] && break
	sleep 0.1
done
[ "$code" = 401 ] || die "no authentication challenge at $url/v2/ after 10 s (got '$code'; log: $LOG)"

# ------------------------------------------------------------------ push
digest=$(REG_PASSWORD=$REG_PASSWORD "$TOOLS/push" -archive "$REG_ARCHIVE" -registry "127.0.0.1:$REG_PORT" \
	-repo "$REG_REPO" -tag "$REG_TAG" -user "$REG_USER" -password-env REG_PASSWORD \
	-label org.podlife.test=private-registry) || die "pushing $REG_ARCHIVE failed"
code=$(curl -s -o /dev/null -w '%{http_code}' "$url/v2/$REG_REPO/manifests/$REG_TAG" || true)
[ "$code" = 401 ] || die "an anonymous manifest GET answered $code, want 401"

cat >"$REG_DIR/env" <<ENV
REG_ADDR=127.0.0.1:$REG_PORT
REG_USER=$REG_USER
REG_PASSWORD=$REG_PASSWORD
REG_IMAGE=127.0.0.1:$REG_PORT/$REG_REPO:$REG_TAG
REG_IMAGE_DIGEST=$digest
ENV
log "ready: pid $pid, $url, image 127.0.0.1:$REG_PORT/$REG_REPO:$REG_TAG ($digest), env in $REG_DIR/env"
printf '%s\n' "$REG_DIR/env"
