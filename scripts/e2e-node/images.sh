#!/usr/bin/env bash
# scripts/e2e-node/images.sh: build, offline, the container images the
# Kubernetes e2e [NodeConformance] specs run, and import them into a
# containerd under the names the suite asks for through KUBE_TEST_REPO_LIST
# (scripts/e2e-node/repo-list.yaml: registry.k8s.io/e2e-test-images becomes
# localhost/e2e-test-images, registry.k8s.io becomes localhost/k8s).
#
#   bash scripts/e2e-node/images.sh SRC CTR SOCK     # prints nothing; progress on stderr
#
# SRC is the k8s.io/kubernetes source tree (the control plane script's copy),
# CTR the ctr binary, SOCK containerd's socket. Archives are cached in
# $E2E_CACHE/images (keyed by the suite's version and this script), the
# binaries they hold in $E2E_CACHE/bin.
#
# Images (what the real ones are, and what is here):
#   busybox:1.37.0-2   the busybox image       busybox 1.37.0 built static from source, a symlink per
#                                              applet in /bin
#   agnhost:2.66.1     alpine + agnhost        busybox rootfs + /agnhost built from test/images/agnhost,
#                                              /bin/bash and /bin/sh (bash-static), the machine's curl and Debian's
#                                              netcat-openbsd (nc) with their shared libraries
#                      (also tagged 2.55, the suite's "previous" agnhost)
#   nonroot:1.5        debian-base, USER 1234  busybox rootfs, user 1234
#   nonewprivs:1.4     alpine + setuid nnp     busybox rootfs + setuid /usr/local/bin/nnp from test/images/nonewprivs
#   glibc-dns-testing:2.1.1  debian (glibc)    busybox rootfs + the machine's hostname with its libraries,
#                                              /etc/nsswitch.conf "hosts: files dns"
#   pause:3.10.2       pause, USER 65535:65535 the project's pause binary (scripts/containerd/start.sh's), user 65535:65535
# Other images the suite names (nginx, httpd-like, dns test images) are not
# built: the specs that use them are in skip.txt or fail on the missing image.
set -euo pipefail

SRC=$1 CTR=$2 SOCK=$3
E2E_CACHE=${E2E_CACHE:-/var/cache/podlife-e2e}
CRI_PAUSE_IMAGE=${CRI_PAUSE_IMAGE:-localhost/podlife/pause:1.0}
export PATH=/usr/local/go/bin:$PATH GOWORK=off

log() { printf 'e2e-node images: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
[ -f "$SRC/test/images/agnhost/VERSION" ] || die "no kubernetes source tree at $SRC"

E2E=localhost/e2e-test-images
BUSYBOX=$E2E/busybox:1.37.0-2
AGNHOST=$E2E/agnhost:2.66.1
AGNHOST_PREV=$E2E/agnhost:2.55
NONROOT=$E2E/nonroot:1.5
NONEWPRIVS=$E2E/nonewprivs:1.4
GLIBC=$E2E/glibc-dns-testing:2.1.1
PAUSE=localhost/k8s/pause:3.10.2

bin=$E2E_CACHE/bin
imgs=$E2E_CACHE/images
mkdir -p "$bin" "$imgs"
ARCH=$(dpkg --print-architecture)

# ---- binaries ------------------------------------------------------------
# busybox 1.37.0, the version of the suite's image, built static from its
# source (Debian 12 packages 1.35, whose ash differs where specs look: it
# drops the environment variables whose names are not shell names, data-1
# and p-data-1, that the envFrom specs read back with `sh -c env`; 1.37
# keeps them, and its error messages are the ones the specs compare, e.g.
# "/bin/sh: can't create /file: Read-only file system"). The source is
# upstream's tarball as Debian's archive holds it (busybox_1.37.0.orig),
# checked against its SHA-256; defconfig plus CONFIG_STATIC. About 1.5
# minutes on 2 cores, once.
BUSYBOX_VERSION=1.37.0
BUSYBOX_SHA256=3311dff32e746499f4df0d5df04d7eb396382d7e108bb9250e7b519b837043a4
BUSYBOX_URL=${BUSYBOX_URL:-http://deb.debian.org/debian/pool/main/b/busybox/busybox_${BUSYBOX_VERSION}.orig.tar.bz2}
if [ ! -x "$bin/busybox-$BUSYBOX_VERSION" ]; then
	log "building busybox $BUSYBOX_VERSION (static) from $BUSYBOX_URL"
	for t in make bzip2 gcc; do
		command -v $t >/dev/null || { apt-get update -qq && apt-get install -y -qq make bzip2 gcc libc6-dev; } >&2 || die "apt-get install make bzip2 gcc failed"
	done
	d=$(mktemp -d)
	curl -sSfL --retry 3 -o "$d/busybox.tar.bz2" "$BUSYBOX_URL" || { rm -rf "$d"; die "download of $BUSYBOX_URL failed"; }
	echo "$BUSYBOX_SHA256  $d/busybox.tar.bz2" | sha256sum -c --quiet - >&2 || { rm -rf "$d"; die "busybox source: SHA-256 mismatch"; }
	tar -C "$d" -xjf "$d/busybox.tar.bz2"
	(
		cd "$d/busybox-$BUSYBOX_VERSION"
		make defconfig >/dev/null
		sed -i 's/^# CONFIG_STATIC is not set$/CONFIG_STATIC=y/' .config
		grep -q '^CONFIG_STATIC=y$' .config
		make -j"$(nproc)" >build.log 2>&1 || { tail -n 30 build.log; exit 1; }
	) >&2 || { rm -rf "$d"; die "busybox build failed"; }
	cp "$d/busybox-$BUSYBOX_VERSION/busybox" "$bin/busybox.tmp" && mv "$bin/busybox.tmp" "$bin/busybox-$BUSYBOX_VERSION"
	rm -rf "$d"
fi
ln -sf "busybox-$BUSYBOX_VERSION" "$bin/busybox"
# The agnhost image's /bin/bash and /bin/sh are Debian's bash-static: specs
# run `/bin/bash -c` in it, and busybox's ash runs its own applets (nc
# without -u) before what is on the PATH (netcat-openbsd).
if [ ! -x "$bin/bash-static" ]; then
	log "fetching Debian's bash-static"
	d=$(mktemp -d)
	(cd "$d" && { apt-get download bash-static >/dev/null 2>&1 || { apt-get update -qq && apt-get download bash-static; }; }) >&2 ||
		{ rm -rf "$d"; die "apt-get download bash-static failed"; }
	dpkg-deb -x "$d"/bash-static_*.deb "$d/x"
	cp "$d/x/bin/bash-static" "$bin/bash-static.tmp" && mv "$bin/bash-static.tmp" "$bin/bash-static"
	rm -rf "$d"
fi
# host_root NAME BINARY PATH: $bin/NAME-root gets, once, the machine's BINARY
# at PATH with every shared library it loads (ldd) and the loader, at their
# paths, to be copied into an image. root_key NAME: a digest of it.
host_root() {
	local name=$1 src=$2 dst=$3 d lib
	[ -x "$bin/$name-root$dst" ] && return
	log "copying the machine's $src and its libraries"
	d=$(mktemp -d)
	mkdir -p "$d$(dirname "$dst")"
	cp -L "$src" "$d$dst"
	for lib in $(ldd "$src" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }'); do
		mkdir -p "$d$(dirname "$lib")"
		cp -L "$lib" "$d$lib"
	done
	rm -rf "$bin/$name-root"
	mv "$d" "$bin/$name-root"
}
root_key() { (cd "$bin/$1-root" && find . -type f | sort | xargs sha256sum | sha256sum | cut -c1-16); }
# curl for the agnhost image: the real one is Alpine with curl, which the
# exec lifecycle hooks and the networking specs' dial checks run in it.
[ -x "$bin/curl-root/usr/bin/curl" ] || command -v curl >/dev/null 2>&1 ||
	{ apt-get update -qq && apt-get install -y -qq curl; } >&2 || die "apt-get install curl failed"
host_root curl "$(command -v curl || echo /usr/bin/curl)" /usr/bin/curl
# hostname for the glibc-dns-testing image (Debian with glibc's resolver:
# `hostname -f` reads the FQDN from the kubelet-managed /etc/hosts through
# NSS).
host_root hostname "$(command -v hostname)" /bin/hostname
# nc for the agnhost image: the real one has netcat-openbsd, whose -u the
# networking specs' UDP dial checks use (busybox's nc has no -u). Debian's,
# installed on the machine if missing.
[ -x "$bin/nc-root/usr/bin/nc" ] || [ -x /bin/nc.openbsd ] ||
	{ apt-get update -qq && apt-get install -y -qq netcat-openbsd; } >&2 || die "apt-get install netcat-openbsd failed"
host_root nc /bin/nc.openbsd /usr/bin/nc
curl_key=$(root_key curl) hostname_key=$(root_key hostname) nc_key=$(root_key nc)

# Static, with the control plane's compiler settings (scripts/apiserver/
# start.sh: CGO_ENABLED=0, no -trimpath), so that agnhost reuses the control
# plane's compilations of the tree from the build cache.
gobuild() { # output package
	[ -x "$bin/$1" ] && return
	log "building $1 from $2 (once; minutes on a fresh machine)"
	local t0=$SECONDS
	(cd "$SRC" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -ldflags='-s -w' -o "$bin/$1.tmp" "$2") >&2 ||
		die "go build $2 failed"
	mv "$bin/$1.tmp" "$bin/$1"
	log "built $1 in $((SECONDS - t0)) s"
}
gobuild agnhost ./test/images/agnhost
gobuild nnp ./test/images/nonewprivs

# ---- OCI archives -----------------------------------------------------------
# oci_archive NAME ROOTFS CONFIG OUT: one uncompressed layer (so its digest is
# its diff ID), an image config with CONFIG as its "config" object, a
# manifest, and an index whose annotation names the image for ctr import.
sha() { sha256sum "$1" | cut -d' ' -f1; }
oci_archive() {
	local name=$1 rootfs=$2 config=$3 out=$4 w
	w=$(mktemp -d)
	mkdir -p "$w/o/blobs/sha256"
	tar --numeric-owner --owner=0 --group=0 --sort=name --mtime=@0 -C "$rootfs" -cf "$w/layer.tar" .
	local ld ls cd cs md ms
	ld=$(sha "$w/layer.tar") ls=$(stat -c %s "$w/layer.tar")
	mv "$w/layer.tar" "$w/o/blobs/sha256/$ld"
	printf '{"architecture":"%s","os":"linux","config":%s,"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
		"$ARCH" "$config" "$ld" >"$w/config.json"
	cd=$(sha "$w/config.json") cs=$(stat -c %s "$w/config.json")
	mv "$w/config.json" "$w/o/blobs/sha256/$cd"
	printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"sha256:%s","size":%s}]}' \
		"$cd" "$cs" "$ld" "$ls" >"$w/manifest.json"
	md=$(sha "$w/manifest.json") ms=$(stat -c %s "$w/manifest.json")
	mv "$w/manifest.json" "$w/o/blobs/sha256/$md"
	printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"platform":{"architecture":"%s","os":"linux"},"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"%s"}}]}' \
		"$md" "$ms" "$ARCH" "$name" "${name##*:}" >"$w/o/index.json"
	printf '{"imageLayoutVersion":"1.0.0"}' >"$w/o/oci-layout"
	tar --numeric-owner --owner=0 --group=0 --mtime=@0 -C "$w/o" -cf "$out.tmp" oci-layout index.json blobs
	mv "$out.tmp" "$out"
	rm -rf "$w"
}

# busybox_rootfs DIR: the busybox image's file system (as the official image:
# every applet in /bin, root and nobody, a world-writable /tmp).
busybox_rootfs() {
	local r=$1 a
	mkdir -p "$r"/{bin,etc,tmp,root,home,var,proc,sys,dev,usr/bin,usr/sbin,sbin}
	chmod 1777 "$r/tmp"
	chmod 700 "$r/root"
	cp "$bin/busybox" "$r/bin/busybox"
	for a in $("$bin/busybox" --list); do
		[ "$a" = busybox ] || ln -sf busybox "$r/bin/$a"
	done
	printf '%s\n' 'root:x:0:0:root:/root:/bin/sh' 'daemon:x:1:1:daemon:/usr/sbin:/bin/false' \
		'nobody:x:65534:65534:nobody:/home:/bin/false' >"$r/etc/passwd"
	printf '%s\n' 'root:x:0:' 'daemon:x:1:' 'nogroup:x:65534:' >"$r/etc/group"
	: >"$r/etc/hosts"
	: >"$r/etc/resolv.conf"
	printf 'busybox\n' >"$r/etc/hostname"
}

PATHENV='"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"'
# The archives are rebuilt when this script or a binary changes.
key=$( (sha256sum "${BASH_SOURCE[0]}" "$bin/busybox" "$bin/bash-static" "$bin/agnhost" "$bin/nnp" | cut -d' ' -f1; echo "$curl_key $hostname_key $nc_key") | sha256sum | cut -c1-16)
if [ "$(cat "$imgs/key" 2>/dev/null)" != "$key" ]; then
	log "writing the image archives"
	w=$(mktemp -d)
	busybox_rootfs "$w/busybox"
	oci_archive "$BUSYBOX" "$w/busybox" '{"Env":['"$PATHENV"'],"Cmd":["sh"]}' "$imgs/busybox.tar"

	cp -a "$w/busybox" "$w/agnhost"
	cp "$bin/agnhost" "$w/agnhost/agnhost"
	# The real image (Alpine) has bash, which specs run as /bin/bash
	# (the probe specs' SIGTERM traps). Its sh is bash too: Debian's
	# busybox ash runs its own applets before anything on the PATH, so
	# `sh -c 'nc -u ...'` got busybox's nc, which has no -u.
	rm -f "$w/agnhost/bin/bash" "$w/agnhost/bin/sh"
	cp "$bin/bash-static" "$w/agnhost/bin/bash"
	ln -sf bash "$w/agnhost/bin/sh"
	cp -a "$bin/curl-root/." "$w/agnhost/"
	rm -f "$w/agnhost/bin/nc" "$w/agnhost/usr/bin/nc"
	cp -a "$bin/nc-root/." "$w/agnhost/"
	ln -s agnhost "$w/agnhost/agnhost-2"
	mkdir -p "$w/agnhost/uploads"
	cp "$SRC/test/images/agnhost/porter/localhost.crt" "$SRC/test/images/agnhost/porter/localhost.key" "$w/agnhost/"
	printf '%s\n' 'user-defined-in-image:x:1000:1000::/home/user-defined-in-image:/bin/sh' >>"$w/agnhost/etc/passwd"
	printf '%s\n' 'user-defined-in-image:x:1000:' 'group-defined-in-image:x:50000:user-defined-in-image' >>"$w/agnhost/etc/group"
	oci_archive "$AGNHOST" "$w/agnhost" '{"Env":['"$PATHENV"'],"Entrypoint":["/agnhost"],"Cmd":["pause"],"ExposedPorts":{"80/tcp":{},"8080/tcp":{},"8081/tcp":{},"9376/tcp":{},"5000/tcp":{}}}' "$imgs/agnhost.tar"

	oci_archive "$NONROOT" "$w/busybox" '{"Env":['"$PATHENV"'],"Cmd":["sh"],"User":"1234"}' "$imgs/nonroot.tar"

	cp -a "$w/busybox" "$w/nonewprivs"
	mkdir -p "$w/nonewprivs/usr/local/bin"
	install -m 4755 "$bin/nnp" "$w/nonewprivs/usr/local/bin/nnp"
	oci_archive "$NONEWPRIVS" "$w/nonewprivs" '{"Env":['"$PATHENV"'],"Cmd":["nnp"]}' "$imgs/nonewprivs.tar"
	cp -a "$w/busybox" "$w/glibc"
	rm -f "$w/glibc/bin/hostname"
	cp -a "$bin/hostname-root/." "$w/glibc/"
	printf '%s\n' 'hosts: files dns' >"$w/glibc/etc/nsswitch.conf"
	oci_archive "$GLIBC" "$w/glibc" '{"Env":['"$PATHENV"'],"Cmd":["sh"]}' "$imgs/glibc.tar"
	rm -rf "$w"
	printf '%s\n' "$key" >"$imgs/key"
fi

# ---- import -----------------------------------------------------------------
ctr() { "$CTR" --address "$SOCK" -n k8s.io "$@"; }
have=$(ctr images ls -q)
has() { case $'\n'$have$'\n' in *$'\n'"$1"$'\n'*) return 0 ;; esac; return 1; }
for i in busybox agnhost nonroot nonewprivs glibc; do
	log "importing $i"
	ctr images import "$imgs/$i.tar" >/dev/null || die "ctr images import $i failed"
done
ctr images tag --force "$AGNHOST" "$AGNHOST_PREV" >/dev/null
has "$CRI_PAUSE_IMAGE" || die "$CRI_PAUSE_IMAGE is not in containerd (scripts/containerd/start.sh imports it)"
# pause:3.10.2 as the real image is: /pause as the entrypoint, user
# 65535:65535 (specs run it as a container under the restricted Pod Security
# level, runAsNonRoot without a runAsUser: the image's user must not be
# root). The binary is the sandbox image's, which containerd's script built
# in its CRI_DIR (the socket's folder).
pausebin=$(dirname "$SOCK")/build/pause
[ -x "$pausebin" ] || die "no pause binary at $pausebin (scripts/containerd/start.sh builds it)"
pw=$(mktemp -d)
mkdir -p "$pw/rootfs"
install -m 0755 "$pausebin" "$pw/rootfs/pause"
oci_archive "$PAUSE" "$pw/rootfs" '{"Entrypoint":["/pause"],"User":"65535:65535"}' "$pw/pause.tar"
log "importing pause"
ctr images import "$pw/pause.tar" >/dev/null || { rm -rf "$pw"; die "ctr images import pause failed"; }
rm -rf "$pw"
have=$(ctr images ls -q)
for n in "$BUSYBOX" "$AGNHOST" "$AGNHOST_PREV" "$NONROOT" "$NONEWPRIVS" "$GLIBC" "$PAUSE"; do
	has "$n" || die "image $n missing after import"
done
log "images ready: $BUSYBOX $AGNHOST $AGNHOST_PREV $NONROOT $NONEWPRIVS $GLIBC $PAUSE"
