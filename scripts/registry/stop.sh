#!/usr/bin/env bash
# scripts/registry/stop.sh: stop the registry that start.sh started in
# REG_DIR (default /tmp/podlife-registry): exactly the process in its pid
# file, checked against REG_DIR's config before any signal. Removes the
# storage, the htpasswd file and the env file (REG_KEEP_STATE=1 keeps the
# storage); the log stays for a look.
set -u
REG_DIR=${REG_DIR:-/tmp/podlife-registry}
[ -d "$REG_DIR" ] || exit 0
REG_DIR=$(cd "$REG_DIR" && pwd)
f=$REG_DIR/registry.pid
log() { printf 'registry: %s\n' "$*" >&2; }
ours() {
	[ -n "${1:-}" ] && [ -r "/proc/$1/cmdline" ] || return 1
	[[ $(tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null) == *" serve $REG_DIR/config.yml"* ]]
}
if [ -f "$f" ]; then
	pid=$(cat "$f")
	if ours "$pid"; then
		log "stopping the registry (pid $pid)"
		kill "$pid" 2>/dev/null
		for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null
	elif [ -n "$pid" ]; then
		log "pid $pid is not this REG_DIR's registry (already gone); not signalling it"
	fi
	rm -f "$f"
fi
rm -f "$REG_DIR/env" "$REG_DIR/htpasswd"
[ "${REG_KEEP_STATE:-0}" = 1 ] || rm -rf "${REG_DIR:?}/data"
exit 0
