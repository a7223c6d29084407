#!/usr/bin/env bash
# scripts/containerd/stop.sh: stop the containerd that start.sh started in
# CRI_DIR, and everything it ran, then remove its state. It acts only on
# processes whose PIDs are recorded in files under CRI_DIR (containerd.pid, and
# the init.pid / shim.pid files containerd keeps for each task), each checked
# against this CRI_DIR's config or socket before any signal: never by name.
#
#   bash scripts/containerd/stop.sh          # CRI_DIR defaults to /tmp/podlife-cri
#
# Environment (optional):
#   CRI_DIR             as for start.sh
#   CRI_KEEP_STATE=1    keep root/ and state/ (images, metadata) for a look
#   CRI_CGROUP_PARENTS  space-separated cgroup parents the tests gave pods
#                       (cgroupfs paths such as /podlife-test); removed with
#                       rmdir only, so only when empty
set -uo pipefail

CRI_DIR=${CRI_DIR:-/tmp/podlife-cri}
[ -d "$CRI_DIR" ] || { echo "stop-containerd: nothing to do ($CRI_DIR absent)" >&2; exit 0; }
CRI_DIR=$(cd "$CRI_DIR" && pwd)
SOCK=$CRI_DIR/containerd.sock
PIDFILE=$CRI_DIR/containerd.pid
LOG=$CRI_DIR/containerd.log
TASKS=$CRI_DIR/state/io.containerd.runtime.v2.task

log() { printf 'stop-containerd: %s\n' "$*" >&2; }
[ "$(id -u)" = 0 ] || { log "must run as root"; exit 1; }

cmdline() { tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null; }
ppid_of() { awk '{print $4}' "/proc/$1/stat" 2>/dev/null; }
alive() { [ -n "${1:-}" ] && kill -0 "$1" 2>/dev/null; }
# Command lines are captured before matching: under pipefail, "... | grep -q"
# can fail when grep exits early and the writer gets SIGPIPE.
is_containerd() { alive "$1" && [[ $(cmdline "$1") == *"--config $CRI_DIR/config.toml"* ]]; }
is_shim() {
	alive "$1" || return 1
	local cl
	cl=$(cmdline "$1")
	[[ $cl == *containerd-shim* && $cl == *"-address $SOCK "* ]]
}
# wait_gone PID SECONDS
wait_gone() {
	local _
	for _ in $(seq 1 $(($2 * 10))); do alive "$1" || return 0; sleep 0.1; done
	! alive "$1"
}

pid=$(cat "$PIDFILE" 2>/dev/null || true)
CTR=$(cat "$CRI_DIR/ctr.path" 2>/dev/null || true)

# 1. While containerd still answers: kill and delete every task (containers and
#    pod sandboxes) through its own API, so the shims exit by themselves.
if is_containerd "$pid" && [ -x "$CTR" ] && timeout 5 "$CTR" --address "$SOCK" version >/dev/null 2>&1; then
	for ns in $(timeout 10 "$CTR" --address "$SOCK" namespaces ls -q 2>>"$LOG"); do
		c() { timeout 15 "$CTR" --address "$SOCK" -n "$ns" "$@" >/dev/null 2>>"$LOG"; }
		ids=$(timeout 10 "$CTR" --address "$SOCK" -n "$ns" tasks ls -q 2>>"$LOG")
		for id in $ids; do c tasks kill -a -s SIGKILL "$id"; done
		for id in $ids; do c tasks rm -f "$id"; done
		for id in $(timeout 10 "$CTR" --address "$SOCK" -n "$ns" containers ls -q 2>>"$LOG"); do c containers rm "$id"; done
	done
fi

# 2. containerd itself, by its recorded PID.
if is_containerd "$pid"; then
	log "stopping containerd (pid $pid)"
	kill -TERM "$pid" 2>/dev/null
	wait_gone "$pid" 15 || { log "containerd did not stop on SIGTERM; SIGKILL"; kill -KILL "$pid" 2>/dev/null; wait_gone "$pid" 5; }
elif [ -n "$pid" ]; then
	log "pid $pid is not this CRI_DIR's containerd (already gone); not signalling it"
fi
rm -f "$PIDFILE"

# 3. Anything left from the PID files containerd keeps per task (after a crash
#    of containerd, say): container init processes, killed only when their
#    parent is one of our shims, then the shims, killed only when their command
#    line names our socket. All inits first, so no order of files matters.
if [ -d "$TASKS" ]; then
	inits=() shims=()
	for f in "$TASKS"/*/*/init.pid; do
		[ -f "$f" ] || continue
		p=$(cat "$f" 2>/dev/null)
		alive "$p" || continue
		pp=$(ppid_of "$p")
		if is_shim "$pp"; then inits+=("$p"); shims+=("$pp"); fi
	done
	for f in "$TASKS"/*/*/shim.pid; do
		[ -f "$f" ] && shims+=("$(cat "$f" 2>/dev/null)")
	done
	for p in "${inits[@]}"; do
		log "killing leftover container process $p"
		kill -KILL "$p" 2>/dev/null
	done
	for p in "${inits[@]}"; do wait_gone "$p" 5; done
	for p in $(printf '%s\n' "${shims[@]}" | sort -u); do
		if is_shim "$p"; then
			log "stopping leftover shim $p"
			kill -TERM "$p" 2>/dev/null
			wait_gone "$p" 5 || kill -KILL "$p" 2>/dev/null
		fi
	done
fi

# 4. Mounts under CRI_DIR (rootfs overlays, shm, network namespaces), deepest first.
awk -v d="$CRI_DIR/" 'index($5, d) == 1 { print $5 }' /proc/self/mountinfo | sort -r | while read -r m; do
	umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || log "could not unmount $m"
done

# 5. The CNI bridge, only when start.sh created it.
if [ -s "$CRI_DIR/owned.bridge" ]; then
	br=$(cat "$CRI_DIR/owned.bridge")
	if ip link show "$br" >/dev/null 2>&1; then
		ip link delete "$br" 2>/dev/null && log "deleted bridge $br"
	fi
	rm -f "$CRI_DIR/owned.bridge"
fi

# 6. Folders and cgroups that did not exist before start.sh, and the
#    tests' cgroup parents: rmdir only, so nothing that is in use goes away.
rmdir_tree() { # remove empty directories bottom-up; stops at anything non-empty
	[ -d "$1" ] || return 0
	find "$1" -depth -type d -exec rmdir {} \; 2>/dev/null
	[ ! -d "$1" ]
}
if [ -f "$CRI_DIR/owned.list" ]; then
	while read -r d; do
		case $d in
		/sys/fs/cgroup/*) rmdir_tree "$d" || log "cgroup $d not empty; left in place" ;;
		*) rmdir "$d" 2>/dev/null || true ;;
		esac
	done < <(sort -r "$CRI_DIR/owned.list")
	rm -f "$CRI_DIR/owned.list"
fi
for parent in ${CRI_CGROUP_PARENTS:-}; do
	for c in /sys/fs/cgroup /sys/fs/cgroup/*; do
		[ -d "$c/${parent#/}" ] && { rmdir_tree "$c/${parent#/}" || log "cgroup $c/${parent#/} not empty; left in place"; }
	done
done

# 7. State. Logs, config and the built image stay for a look and a quick restart.
if [ "${CRI_KEEP_STATE:-0}" != 1 ]; then
	for d in root state runc netns cni-ipam opt; do
		[ -e "$CRI_DIR/$d" ] && rm -rf --one-file-system "${CRI_DIR:?}/$d"
	done
fi
rm -f "$SOCK" "$SOCK.ttrpc"
log "stopped ($CRI_DIR)"
