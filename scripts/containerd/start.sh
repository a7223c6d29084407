#!/usr/bin/env bash
# scripts/containerd/start.sh: start a private containerd with its CRI plugin, as a
# real CRI peer for podlife's tests and CI, on Debian 12 as root, using only
# Debian packages and Go modules, and pulling no image from any registry.
#
# Idempotent. It installs what is missing, builds a static "pause" binary and
# packs it into a local OCI image, starts containerd in the background (unless
# this CRI_DIR's containerd is already up), imports the image, and prints the
# CRI socket path, and nothing else, on stdout. Progress goes to stderr.
#
#   sock=$(bash scripts/containerd/start.sh)       # e.g. /tmp/podlife-cri/containerd.sock
#   ... run tests against unix://$sock ...
#   bash scripts/containerd/stop.sh              # stops only what this script started
#
# This is the project's own copy of the workplace's tested tool
# (shared/tools/start-containerd.sh); .ci/run uses it for the runtime/cri
# integration test (PODLIFE_CRI_ENDPOINT).
#
# Environment (all optional):
#   CRI_DIR       working folder: config, root, state, logs, pid file
#                 (default /tmp/podlife-cri; keep it short: unix socket paths
#                 are limited to 107 bytes)
#   CRI_FLAVOR    go      (default) containerd $CRI_CONTAINERD_VERSION, built
#                         once with `go install` from the Go module proxy and
#                         cached in $CRI_BIN_CACHE; serves all of cri-api v0.37
#                 debian  Debian's containerd package (1.6.20 on bookworm):
#                         quick to install, older CRI surface (see the report)
#   CRI_CONTAINERD_VERSION  default v2.4.2 (go flavor only)
#   CRI_BIN_CACHE default /var/cache/podlife-cri (go flavor's binaries)
#   CRI_PAUSE_IMAGE  default localhost/podlife/pause:1.0
#   CRI_CNI       0 (default): no CNI (pods use the NODE network namespace;
#                 the runtime reports NetworkReady=false); 1: a bridge +
#                 host-local CNI network from Debian's containernetworking-plugins,
#                 so pods get their own network namespace on a local bridge
#   CRI_CNI_SUBNET  default 10.88.0.0/24 (only on the local bridge, no uplink)
#   CRI_BRIDGE    default podlife0
#   CRI_CNI_GATEWAY  0 (default): the bridge has no address, so the node
#                 cannot reach its pods; 1: the bridge gets the subnet's first
#                 address (no default route in pods, no masquerade), so a
#                 node agent on the host can probe pods and run httpGet hooks
#                 at their IPs, as a kubelet does
#   CRI_INSECURE_REGISTRIES  registries (host:port, space- or comma-separated)
#                 pulled from over plain HTTP, through a hosts.toml each in
#                 CRI_DIR/hosts.d (the CRI plugin's registry config_path);
#                 default "127.0.0.1:15000", scripts/registry's default.
#                 containerd also takes any other 127.0.0.1/localhost
#                 registry with a port other than 443 as plain HTTP by itself
#
# Files in CRI_DIR: containerd.sock (CRI and containerd API), containerd.pid,
# containerd.log, config.toml, hosts.d/, env (KEY=value lines for tests to
# source), build/pause.tar (the image), and owned.* markers for stop.sh.
set -euo pipefail

CRI_DIR=${CRI_DIR:-/tmp/podlife-cri}
CRI_FLAVOR=${CRI_FLAVOR:-go}
CRI_CONTAINERD_VERSION=${CRI_CONTAINERD_VERSION:-v2.4.2}
CRI_BIN_CACHE=${CRI_BIN_CACHE:-/var/cache/podlife-cri}
CRI_PAUSE_IMAGE=${CRI_PAUSE_IMAGE:-localhost/podlife/pause:1.0}
CRI_CNI=${CRI_CNI:-0}
CRI_CNI_SUBNET=${CRI_CNI_SUBNET:-10.88.0.0/24}
CRI_BRIDGE=${CRI_BRIDGE:-podlife0}
CRI_CNI_GATEWAY=${CRI_CNI_GATEWAY:-0}
CRI_INSECURE_REGISTRIES=${CRI_INSECURE_REGISTRIES-127.0.0.1:15000}

SOCK=$CRI_DIR/containerd.sock
PIDFILE=$CRI_DIR/containerd.pid
LOG=$CRI_DIR/containerd.log
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export PATH=/usr/local/go/bin:$PATH

log() { printf 'start-containerd: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

[ "$(id -u)" = 0 ] || die "must run as root"
[ "$(uname -s)" = Linux ] || die "Linux only"
case $CRI_FLAVOR in go | debian) ;; *) die "CRI_FLAVOR must be go or debian" ;; esac
case $CRI_CNI_GATEWAY in 0) gateway=false ;; 1) gateway=true ;; *) die "CRI_CNI_GATEWAY must be 0 or 1" ;; esac
[ ${#SOCK} -le 100 ] || die "socket path too long: $SOCK"
mkdir -p "$CRI_DIR"
CRI_DIR=$(cd "$CRI_DIR" && pwd)
SOCK=$CRI_DIR/containerd.sock PIDFILE=$CRI_DIR/containerd.pid LOG=$CRI_DIR/containerd.log

# ---------------------------------------------------------------- packages
# Under pipefail, "producer | grep -q" can fail when grep exits early and the
# producer gets SIGPIPE, so outputs are captured first and matched after.
has_line() { case $'\n'$1$'\n' in *$'\n'"$2"$'\n'*) return 0 ;; esac; return 1; }
pkg_installed() { [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" = "install ok installed" ]; }
want=(runc)
[ "$CRI_FLAVOR" = debian ] && want+=(containerd)
[ "$CRI_CNI" = 1 ] && want+=(containernetworking-plugins iproute2)
missing=()
for p in "${want[@]}"; do pkg_installed "$p" || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
	log "installing Debian packages: ${missing[*]}"
	# On a machine where services may start, Debian's containerd package would
	# also start the system containerd; ours is separate and does not need it.
	apt-get update -qq >&2 || apt-get update >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

# ------------------------------------------------------------- containerd
if [ "$CRI_FLAVOR" = go ]; then
	BIN=$CRI_BIN_CACHE/containerd-$CRI_CONTAINERD_VERSION
	have=$("$BIN/containerd" --version 2>/dev/null || true)
	if [[ $have != *" ${CRI_CONTAINERD_VERSION#v}"* ]]; then
		command -v go >/dev/null || die "go not found (expected in /usr/local/go/bin)"
		log "building containerd $CRI_CONTAINERD_VERSION from the Go module proxy (a few minutes, once)"
		mkdir -p "$CRI_BIN_CACHE"
		# Own module and build caches (about 1.1 GB), removed after the build:
		# only the three binaries (about 75 MB) are kept.
		work=$(mktemp -d "$CRI_BIN_CACHE/build.XXXXXX")
		m=github.com/containerd/containerd/v2/cmd
		if ! (cd "$work" && GOWORK=off GOFLAGS=-buildvcs=false CGO_ENABLED=0 GOBIN="$work/bin" \
			GOMODCACHE="$work/mod" GOCACHE="$work/cache" \
			go install -trimpath -ldflags='-s -w' -tags no_btrfs \
			"$m/containerd@$CRI_CONTAINERD_VERSION" \
			"$m/containerd-shim-runc-v2@$CRI_CONTAINERD_VERSION" \
			"$m/ctr@$CRI_CONTAINERD_VERSION") >&2; then
			chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"
			die "go install of containerd $CRI_CONTAINERD_VERSION failed"
		fi
		rm -rf "$BIN"
		mv "$work/bin" "$BIN"
		chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"
	fi
else
	BIN=/usr/bin
fi
CONTAINERD=$BIN/containerd
CTR=$BIN/ctr
if [ ! -x "$CONTAINERD" ] || [ ! -x "$CTR" ]; then die "containerd binaries missing in $BIN"; fi
ctr() { "$CTR" --address "$SOCK" -n k8s.io "$@" 2>>"$LOG"; }

# ------------------------------------------------------------ pause image
# A static Go binary (sleeps until SIGTERM/SIGINT, reaps children; "echo",
# "log", "exit", "hang", "serve", "write" and "chatty" modes for exec, log,
# exit-code, grace-period, HTTP-probe, termination-message and log-rotation
# tests), packed as an OCI image-layout archive by a standard-library-only Go
# program.
build_image() {
	local b=$CRI_DIR/build
	mkdir -p "$b/src/pause" "$b/src/mkimage"
	cat >"$b/src/go.mod" <<'EOF'
module podlifecri

go 1.22
EOF
	cat >"$b/src/pause/main.go" <<'EOF'
// Command pause is a minimal, static stand-in for the Kubernetes pause
// container, with a few modes for lifecycle tests. With no arguments it blocks
// until SIGTERM or SIGINT and exits 0, reaping orphaned children meanwhile (it
// may be PID 1 of a pod).
//
//	pause                       sleep until SIGTERM/SIGINT, then exit 0
//	pause echo ARGS...          print ARGS to stdout and exit 0 (for ExecSync)
//	pause log ARGS...           print ARGS to stdout, then sleep as above
//	pause exit CODE [SECONDS]   exit with CODE, after SECONDS (default 0)
//	pause hang                  ignore SIGTERM/SIGINT: only SIGKILL ends it
//	                            (for grace-period tests)
//	pause serve PORT [SECONDS]  after SECONDS (default 0) answer HTTP 200 on
//	                            every path at :PORT, then sleep as above
//	                            (for readiness/liveness httpGet probes)
//	pause write FILE CODE TEXT...  write TEXT to FILE (created, truncated),
//	                            then exit with CODE (termination messages,
//	                            exec hooks that leave a mark)
//	pause chatty [BYTES_PER_SECOND]  print numbered 100-byte lines
//	                            ("chatty 000000042 xxx...") to stdout at about
//	                            that rate (default 100000), then sleep as
//	                            above (log rotation)
package main

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	hang := false
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "echo":
			fmt.Println(strings.Join(os.Args[2:], " "))
			return
		case "log":
			fmt.Println(strings.Join(os.Args[2:], " "))
		case "exit":
			code, secs := 0, 0.0
			if len(os.Args) > 2 {
				code, _ = strconv.Atoi(os.Args[2])
			}
			if len(os.Args) > 3 {
				secs, _ = strconv.ParseFloat(os.Args[3], 64)
			}
			time.Sleep(time.Duration(secs * float64(time.Second)))
			fmt.Printf("pause: exiting with %d\n", code)
			os.Exit(code)
		case "hang":
			hang = true
		case "serve":
			port, secs := "8080", 0.0
			if len(os.Args) > 2 {
				port = os.Args[2]
			}
			if len(os.Args) > 3 {
				secs, _ = strconv.ParseFloat(os.Args[3], 64)
			}
			go func() {
				time.Sleep(time.Duration(secs * float64(time.Second)))
				fmt.Printf("pause: serving on :%s\n", port)
				err := http.ListenAndServe(":"+port, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
					fmt.Fprintln(w, "ok")
				}))
				fmt.Fprintf(os.Stderr, "pause: serve: %v\n", err)
			}()
		case "write":
			if len(os.Args) < 4 {
				fmt.Fprintln(os.Stderr, "pause: usage: pause write FILE CODE TEXT...")
				os.Exit(2)
			}
			code, _ := strconv.Atoi(os.Args[3])
			if err := os.WriteFile(os.Args[2], []byte(strings.Join(os.Args[4:], " ")), 0o644); err != nil {
				fmt.Fprintf(os.Stderr, "pause: write: %v\n", err)
				os.Exit(2)
			}
			os.Exit(code)
		case "chatty":
			rate := 100000
			if len(os.Args) > 2 {
				rate, _ = strconv.Atoi(os.Args[2])
			}
			go chatty(rate)
		}
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for s := range sigs {
		if s == syscall.SIGCHLD {
			for {
				var ws syscall.WaitStatus
				pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
				if pid <= 0 || err != nil {
					break
				}
			}
			continue
		}
		if hang {
			fmt.Fprintf(os.Stderr, "pause: got %v, ignoring it\n", s)
			continue
		}
		fmt.Fprintf(os.Stderr, "pause: got %v, exiting\n", s)
		os.Exit(0)
	}
}

// chatty prints numbered lines of 100 bytes, newline included, so that
// stdout carries about rate bytes a second, in bursts every 10 ms.
func chatty(rate int) {
	const lineLen = 100
	pad := strings.Repeat("x", lineLen)
	w := bufio.NewWriterSize(os.Stdout, 64<<10)
	start := time.Now()
	for n := 0; ; {
		due := int(time.Since(start).Seconds() * float64(rate) / lineLen)
		for ; n < due; n++ {
			l := fmt.Sprintf("chatty %09d ", n)
			w.WriteString(l + pad[:lineLen-1-len(l)] + "\n")
		}
		if err := w.Flush(); err != nil {
			fmt.Fprintf(os.Stderr, "pause: chatty: %v\n", err)
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}
EOF
	cat >"$b/src/mkimage/main.go" <<'EOF'
// Command mkimage packs one static binary into an OCI image-layout archive
// that `ctr images import` accepts, using only the standard library. The
// output is byte-for-byte reproducible for the same input.
//
//	mkimage -bin ./pause -name localhost/podlife/pause:1.0 -out pause.tar
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"path"
	"runtime"
	"strings"
	"time"
)

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Platform    map[string]string `json:"platform,omitempty"`
}

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

var epoch = time.Unix(0, 0).UTC()

func main() {
	bin := flag.String("bin", "", "static binary to put at /<basename> in the image")
	name := flag.String("name", "localhost/podlife/pause:1.0", "full image reference (domain/path:tag)")
	out := flag.String("out", "image.tar", "output OCI archive")
	flag.Parse()
	if *bin == "" {
		log.Fatal("-bin is required")
	}
	data, err := os.ReadFile(*bin)
	must(err)
	base := path.Base(*bin)

	var raw bytes.Buffer
	tw := tar.NewWriter(&raw)
	must(tw.WriteHeader(&tar.Header{Name: base, Mode: 0o755, Size: int64(len(data)), ModTime: epoch, Typeflag: tar.TypeReg, Format: tar.FormatPAX}))
	_, err = tw.Write(data)
	must(err)
	must(tw.Close())
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	_, err = zw.Write(raw.Bytes())
	must(err)
	must(zw.Close())
	layer := gz.Bytes()

	config, _ := json.Marshal(map[string]any{
		"architecture": runtime.GOARCH,
		"os":           "linux",
		"created":      epoch.Format(time.RFC3339),
		"config": map[string]any{
			"Entrypoint": []string{"/" + base},
			"WorkingDir": "/",
			"Env":        []string{"PATH=/"},
		},
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{digest(raw.Bytes())}},
	})
	manifest, _ := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.manifest.v1+json",
		"config":        descriptor{MediaType: "application/vnd.oci.image.config.v1+json", Digest: digest(config), Size: int64(len(config))},
		"layers":        []descriptor{{MediaType: "application/vnd.oci.image.layer.v1.tar+gzip", Digest: digest(layer), Size: int64(len(layer))}},
	})
	tag := (*name)[strings.LastIndex(*name, ":")+1:]
	index, _ := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.index.v1+json",
		"manifests": []descriptor{{
			MediaType: "application/vnd.oci.image.manifest.v1+json",
			Digest:    digest(manifest), Size: int64(len(manifest)),
			Platform: map[string]string{"architecture": runtime.GOARCH, "os": "linux"},
			Annotations: map[string]string{
				"io.containerd.image.name":          *name, // the name ctr import gives it
				"org.opencontainers.image.ref.name": tag,
			},
		}},
	})

	f, err := os.Create(*out)
	must(err)
	ow := tar.NewWriter(f)
	add := func(n string, b []byte) {
		must(ow.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(b)), ModTime: epoch, Typeflag: tar.TypeReg}))
		_, err := ow.Write(b)
		must(err)
	}
	for _, d := range []string{"blobs/", "blobs/sha256/"} {
		must(ow.WriteHeader(&tar.Header{Name: d, Mode: 0o755, ModTime: epoch, Typeflag: tar.TypeDir}))
	}
	add("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`))
	add("index.json", index)
	for _, b := range [][]byte{layer, config, manifest} {
		add("blobs/sha256/"+strings.TrimPrefix(digest(b), "sha256:"), b)
	}
	must(ow.Close())
	must(f.Close())
	fmt.Println(digest(manifest))
}

func must(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
EOF
	(cd "$b/src" && GOWORK=off GOFLAGS=-buildvcs=false CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$b/pause" ./pause &&
		GOWORK=off GOFLAGS=-buildvcs=false go build -o "$b/mkimage" ./mkimage) >&2 || die "building the pause image failed"
	"$b/mkimage" -bin "$b/pause" -name "$CRI_PAUSE_IMAGE" -out "$b/pause.tar.new" >"$b/pause.digest.new" || die "mkimage failed"
	mv "$b/pause.digest.new" "$b/pause.digest"
	mv "$b/pause.tar.new" "$b/pause.tar"
	printf '%s\n' "$CRI_PAUSE_IMAGE" >"$b/pause.name"
}
if [ ! -s "$CRI_DIR/build/pause.tar" ] || [ "$(cat "$CRI_DIR/build/pause.name" 2>/dev/null)" != "$CRI_PAUSE_IMAGE" ] ||
	[ "${BASH_SOURCE[0]}" -nt "$CRI_DIR/build/pause.tar" ]; then
	log "building the pause image $CRI_PAUSE_IMAGE"
	build_image
fi

# The image is imported when the runtime lacks it, and again when it was
# rebuilt since it was imported (a new pause mode reaches a containerd that
# kept running); build/imported.digest names the build last imported.
import_image() {
	local built imported
	built=$(cat "$CRI_DIR/build/pause.digest" 2>/dev/null || true)
	imported=$(cat "$CRI_DIR/build/imported.digest" 2>/dev/null || true)
	if ! has_line "$(ctr images ls -q)" "$CRI_PAUSE_IMAGE" || [ "$built" != "$imported" ]; then
		log "importing $CRI_PAUSE_IMAGE"
		ctr images import "$CRI_DIR/build/pause.tar" >/dev/null || die "ctr images import failed (see $LOG)"
		has_line "$(ctr images ls -q)" "$CRI_PAUSE_IMAGE" || die "image $CRI_PAUSE_IMAGE not visible after import"
		printf '%s\n' "$built" >"$CRI_DIR/build/imported.digest"
	fi
}

write_env() {
	cat >"$CRI_DIR/env" <<EOF
CRI_ENDPOINT=unix://$SOCK
CRI_SOCKET=$SOCK
CRI_PAUSE_IMAGE=$CRI_PAUSE_IMAGE
CRI_FLAVOR=$CRI_FLAVOR
CRI_CNI=$CRI_CNI
CONTAINERD_VERSION=$("$CONTAINERD" --version | awk '{print $3}')
EOF
}

# ------------------------------------------------------ already running?
ours() { # pid -> true if it is this CRI_DIR's containerd
	local cl
	[ -n "${1:-}" ] && [ -r "/proc/$1/cmdline" ] || return 1
	cl=$(tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null) || return 1
	[[ $cl == *"--config $CRI_DIR/config.toml"* ]]
}
if [ -s "$PIDFILE" ] && ours "$(cat "$PIDFILE")"; then
	if "$CTR" --address "$SOCK" version >/dev/null 2>&1; then
		log "containerd already running (pid $(cat "$PIDFILE"))"
		import_image
		write_env
		printf '%s\n' "$SOCK"
		exit 0
	fi
	die "containerd pid $(cat "$PIDFILE") is running but not answering on $SOCK; run stop.sh"
fi
if [ -e "$PIDFILE" ] || [ -d "$CRI_DIR/state" ]; then
	log "cleaning up a previous run in $CRI_DIR"
	if [ -x "$HERE/stop.sh" ] || [ -f "$HERE/stop.sh" ]; then
		CRI_DIR=$CRI_DIR bash "$HERE/stop.sh" >&2 || true
	fi
fi

# ---------------------------------------------------- ownership markers
# What existed before us, so that stop.sh removes only what we made.
: >"$CRI_DIR/owned.list"
mark_new() { [ -e "$1" ] || printf '%s\n' "$1" >>"$CRI_DIR/owned.list"; }
mark_new /run/containerd
mark_new /run/containerd/s
# containerd's default cgroup for pods without a cgroup parent is /k8s.io/<id>.
for c in /sys/fs/cgroup /sys/fs/cgroup/*; do
	[ -d "$c" ] && mark_new "$c/k8s.io"
done
if [ "$CRI_CNI" = 1 ] && ! ip link show "$CRI_BRIDGE" >/dev/null 2>&1; then
	printf '%s\n' "$CRI_BRIDGE" >"$CRI_DIR/owned.bridge"
else
	rm -f "$CRI_DIR/owned.bridge"
fi

# -------------------------------------------------------------- config
mkdir -p "$CRI_DIR/root" "$CRI_DIR/state" "$CRI_DIR/cni" "$CRI_DIR/opt"
rm -f "$CRI_DIR"/cni/*.conflist

# overlayfs where the kernel and the backing filesystem allow it, else native.
SNAP=native
ovl=$(mktemp -d "$CRI_DIR/ovl.XXXXXX")
mkdir -p "$ovl/l" "$ovl/u" "$ovl/w" "$ovl/m"
if mount -t overlay overlay -o "lowerdir=$ovl/l,upperdir=$ovl/u,workdir=$ovl/w" "$ovl/m" 2>/dev/null; then
	umount "$ovl/m"
	SNAP=overlayfs
fi
rm -rf "$ovl"
log "snapshotter: $SNAP"

if [ "$CRI_CNI" = 1 ]; then
	cat >"$CRI_DIR/cni/10-podlife.conflist" <<EOF
{
  "cniVersion": "0.4.0",
  "name": "podlife",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$CRI_BRIDGE",
      "isGateway": $gateway,
      "ipMasq": false,
      "hairpinMode": false,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "$CRI_CNI_SUBNET"}]],
        "dataDir": "$CRI_DIR/cni-ipam"
      }
    }
  ]
}
EOF
fi

# Plain-HTTP registries: one hosts.toml per host:port (containerd reads
# them at each pull; a change needs no restart).
rm -rf "$CRI_DIR/hosts.d"
mkdir -p "$CRI_DIR/hosts.d"
for reg in ${CRI_INSECURE_REGISTRIES//,/ }; do
	case $reg in */* | *[!A-Za-z0-9.:_-]*) die "CRI_INSECURE_REGISTRIES: bad entry '$reg' (want host:port)" ;; esac
	mkdir -p "$CRI_DIR/hosts.d/$reg"
	cat >"$CRI_DIR/hosts.d/$reg/hosts.toml" <<EOF
server = "http://$reg"

[host."http://$reg"]
  capabilities = ["pull", "resolve"]
  skip_verify = true
EOF
done

# Settings that matter here, both flavors:
#  - restrict_oom_score_adj: root on these machines lacks CAP_SYS_RESOURCE, so
#    runc cannot write the sandbox's oom_score_adj of -998 ("can't get final
#    child's PID from pipe: EOF"); this clamps it to containerd's own score.
#  - runc Root, netns, opt and the ttrpc socket under CRI_DIR, not /run or /opt.
if [ "$CRI_FLAVOR" = go ]; then
	cat >"$CRI_DIR/config.toml" <<EOF
version = 3
root = "$CRI_DIR/root"
state = "$CRI_DIR/state"

[grpc]
  address = "$SOCK"
[ttrpc]
  address = "$SOCK.ttrpc"

[plugins]
  [plugins."io.containerd.cri.v1.images"]
    snapshotter = "$SNAP"
    [plugins."io.containerd.cri.v1.images".pinned_images]
      sandbox = "$CRI_PAUSE_IMAGE"
    [plugins."io.containerd.cri.v1.images".registry]
      config_path = "$CRI_DIR/hosts.d"
  [plugins."io.containerd.cri.v1.runtime"]
    restrict_oom_score_adj = true
    netns_mounts_under_state_dir = true
    cdi_spec_dirs = []
    [plugins."io.containerd.cri.v1.runtime".containerd]
      default_runtime_name = "runc"
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
        [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
          BinaryName = "/usr/bin/runc"
          Root = "$CRI_DIR/runc"
    [plugins."io.containerd.cri.v1.runtime".cni]
      bin_dirs = ["/usr/lib/cni"]
      conf_dir = "$CRI_DIR/cni"
  [plugins."io.containerd.grpc.v1.cri"]
    stream_server_address = "127.0.0.1"
    stream_server_port = "0"
  [plugins."io.containerd.nri.v1.nri"]
    disable = true
  [plugins."io.containerd.internal.v1.opt"]
    path = "$CRI_DIR/opt"
EOF
else
	cat >"$CRI_DIR/config.toml" <<EOF
version = 2
root = "$CRI_DIR/root"
state = "$CRI_DIR/state"

[grpc]
  address = "$SOCK"
[ttrpc]
  address = "$SOCK.ttrpc"

[plugins]
  [plugins."io.containerd.grpc.v1.cri"]
    sandbox_image = "$CRI_PAUSE_IMAGE"
    stream_server_address = "127.0.0.1"
    stream_server_port = "0"
    disable_tcp_service = true
    restrict_oom_score_adj = true
    netns_mounts_under_state_dir = true
    [plugins."io.containerd.grpc.v1.cri".containerd]
      snapshotter = "$SNAP"
      default_runtime_name = "runc"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
          BinaryName = "/usr/bin/runc"
          Root = "$CRI_DIR/runc"
    [plugins."io.containerd.grpc.v1.cri".cni]
      bin_dir = "/usr/lib/cni"
      conf_dir = "$CRI_DIR/cni"
    [plugins."io.containerd.grpc.v1.cri".registry]
      config_path = "$CRI_DIR/hosts.d"
  [plugins."io.containerd.internal.v1.opt"]
    path = "$CRI_DIR/opt"
EOF
fi
printf '%s\n' "$CTR" >"$CRI_DIR/ctr.path"

# --------------------------------------------------------------- start
log "starting $("$CONTAINERD" --version | awk '{print $1, $3}') on $SOCK"
printf '\n===== %s start\n' "$(date -u +%FT%TZ)" >>"$LOG"
logoff=$(stat -c %s "$LOG")
# $BIN first on PATH so containerd finds its own containerd-shim-runc-v2.
PATH="$BIN:$PATH" nohup "$CONTAINERD" --config "$CRI_DIR/config.toml" >>"$LOG" 2>&1 </dev/null &
pid=$!
printf '%s\n' "$pid" >"$PIDFILE"
for _ in $(seq 1 150); do
	if ! kill -0 "$pid" 2>/dev/null; then
		tail -n 20 "$LOG" >&2
		rm -f "$PIDFILE"
		die "containerd exited at start (log: $LOG)"
	fi
	if [ -S "$SOCK" ] && "$CTR" --address "$SOCK" version >/dev/null 2>&1 &&
		[[ $(tail -c +"$((logoff + 1))" "$LOG") == *"containerd successfully booted"* ]]; then
		break
	fi
	sleep 0.2
done
"$CTR" --address "$SOCK" version >/dev/null 2>&1 || die "containerd did not answer within 30s (log: $LOG)"
import_image
write_env
log "ready: pid $pid, endpoint unix://$SOCK, pause image $CRI_PAUSE_IMAGE"
printf '%s\n' "$SOCK"
