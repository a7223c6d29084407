#!/usr/bin/env bash
# scripts/apiserver/start.sh (adapted from shared/tools/start-apiserver.sh): start a private, real Kubernetes control plane on
# 127.0.0.1 (etcd, kube-apiserver, kube-controller-manager, kube-scheduler),
# as the API server peer for podlife's tests and CI, on Debian 12 as root,
# using only Go modules (no download site is reachable).
#
# Idempotent. It builds the binaries once from the Go module proxy
# (k8s.io/kubernetes and go.etcd.io/etcd, about 12-15 minutes on a fresh
# 2-core machine, cached in $API_BIN_CACHE afterwards), starts the control
# plane in the background (unless this API_DIR's is already up), and prints
# the admin kubeconfig path, and nothing else, on stdout. Progress goes to
# stderr.
#
#   kc=$(bash scripts/apiserver/start.sh)        # e.g. /tmp/podlife-api/admin.kubeconfig
#   kubectl --kubeconfig "$kc" get nodes  # kubectl is in $API_BIN_CACHE/bin
#   ... run the agent with --kubeconfig /tmp/podlife-api/node-podlife-node.kubeconfig ...
#   bash scripts/apiserver/stop.sh                # stops only what this script started
#
# What a test gets, as in a real cluster:
# - authentication by static bearer tokens: admin (group system:masters) and,
#   for every name in API_NODES, system:node:NAME in group system:nodes;
# - authorization Node,RBAC and the NodeRestriction admission plugin, so a
#   node agent has exactly a kubelet's rights (it may create its own Node and
#   Lease, mirror pods of its node, and write the status of pods bound to it;
#   reading a pod that is gone or bound elsewhere is Forbidden, not NotFound);
# - the controllers: service accounts and namespaces are made, a Node whose
#   Ready condition or Lease goes stale is tainted and its pods are evicted
#   (node lifecycle controller), mirror pods of a deleted Node are collected;
# - the scheduler: pods without spec.nodeName are placed on Ready nodes;
# - the node proxy (kubectl logs/exec/port-forward, get --raw
#   /api/v1/nodes/N/proxy/...) dials a Node's InternalIP first, then
#   ExternalIP, then Hostname (--kubelet-preferred-address-types, as kubeadm
#   sets it: the host name here resolves to a loopback address), and refuses
#   a loopback one; aggregated APIs (metrics-server) are dialed at their
#   Service's endpoint (--enable-aggregator-routing), which may not be a
#   loopback address either: scripts/testhost/up.sh gives this machine an
#   address for both.
# No Node object is created: registering it is the node agent's job.
#
# Environment (all optional):
#   API_DIR        working folder: certs, tokens, kubeconfigs, etcd data, logs,
#                  pid files (default /tmp/podlife-api)
#   API_NODES      node names that get a node credential (default podlife-node;
#                  space separated)
#   API_PORT       kube-apiserver's secure port (default 16443)
#   ETCD_PORT      etcd client port (default 23790; peer port is ETCD_PORT+10)
#   API_K8S_VERSION   default v1.37.2 (staging modules at v0.37.2)
#   API_ETCD_VERSION  default v3.6.16
#   API_BIN_CACHE  default /var/cache/podlife-apiserver
#
# Files in API_DIR: admin.kubeconfig, node-NAME.kubeconfig, ca.crt (the cluster
# CA: it signs the API server's serving certificate and its kubelet client
# certificate, so a node server that trusts ca.crt as its client CA accepts the
# API server's proxied logs/exec/port-forward requests), kubelet-client.crt/.key
# (that client certificate: CN kube-apiserver-kubelet-client, O system:masters),
# front-proxy-ca.crt, front-proxy-client.crt/.key (the aggregation layer, for
# an extension API server such as metrics-server), tokens.csv, env (KEY=value
# lines for tests to source: API_SERVER, API_ADMIN_KUBECONFIG, API_KUBECTL,
# API_CA, API_FRONT_PROXY_CA), *.log, *.pid.
set -euo pipefail

API_DIR=${API_DIR:-/tmp/podlife-api}
API_NODES=${API_NODES:-podlife-node}
API_PORT=${API_PORT:-16443}
ETCD_PORT=${ETCD_PORT:-23790}
API_K8S_VERSION=${API_K8S_VERSION:-v1.37.2}
API_ETCD_VERSION=${API_ETCD_VERSION:-v3.6.16}
API_BIN_CACHE=${API_BIN_CACHE:-/var/cache/podlife-apiserver}
BIN=$API_BIN_CACHE/bin
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export PATH=/usr/local/go/bin:$PATH GOWORK=off

log() { printf 'start-apiserver: %s\n' "$*" >&2; }
started=0
die() {
	log "error: $*"
	[ $started = 1 ] && bash "$HERE/stop.sh" >/dev/null 2>&1
	exit 1
}

[ "$(id -u)" = 0 ] || die "must run as root"
command -v go >/dev/null || die "no go command"
command -v openssl >/dev/null || { log "installing openssl"; apt-get update -qq >&2 && apt-get install -y -qq openssl >&2; }
command -v curl >/dev/null || { log "installing curl"; apt-get update -qq >&2 && apt-get install -y -qq curl >&2; }

# ---- build (once) -----------------------------------------------------------
build_k8s() {
	local src=$API_BIN_CACHE/src/kubernetes-$API_K8S_VERSION
	if [ ! -f "$src/.prepared" ]; then
		log "preparing k8s.io/kubernetes@$API_K8S_VERSION from the module proxy"
		local mod
		mod=$(cd /tmp && go mod download -json "k8s.io/kubernetes@$API_K8S_VERSION" | sed -n 's/.*"Dir": "\(.*\)",/\1/p')
		[ -n "$mod" ] || die "could not download k8s.io/kubernetes@$API_K8S_VERSION"
		rm -rf "$src"; mkdir -p "$(dirname "$src")"
		cp -r "$mod" "$src"; chmod -R u+w "$src"
		# The module zip has no staging/ tree: point each staging replace at
		# the published k8s.io/* module of the same release.
		local staging=v0.${API_K8S_VERSION#v1.}
		( cd "$src" && rm -rf vendor go.work go.work.sum &&
			sed -i -E "s#^(\s*)(k8s\.io/[a-z0-9-]+) => \./staging/src/k8s\.io/[a-z0-9-]+#\1\2 => \2 $staging#" go.mod &&
			touch .prepared )
	fi
	# One `go build` for all of them, so that one binary's link overlaps the
	# next one's compiling. Static (CGO_ENABLED=0, as Kubernetes releases
	# them) and without debug information: the e2e suite's binaries
	# (scripts/e2e-node.sh, images.sh) are built from this tree with the same
	# compiler settings, so they reuse these compilations from the build cache
	# instead of compiling the tree again (-ldflags only touch the link).
	local cmd todo=()
	for cmd in kube-apiserver kube-controller-manager kube-scheduler kubectl; do
		[ -x "$BIN/$cmd" ] || todo+=("./cmd/$cmd")
	done
	[ ${#todo[@]} = 0 ] && return
	log "building ${todo[*]#./cmd/} (minutes on a fresh machine)"
	local t0=$SECONDS out
	out=$(mktemp -d "$BIN/.build.XXXXXX")
	( cd "$src" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -ldflags='-s -w' -o "$out/" "${todo[@]}" ) >&2 ||
		{ rm -rf "$out"; die "build of ${todo[*]} failed"; }
	mv "$out"/* "$BIN/" && rmdir "$out"
	log "built ${todo[*]#./cmd/} in $((SECONDS - t0)) s"
}
build_etcd() {
	[ -x "$BIN/etcd" ] && return
	log "building etcd $API_ETCD_VERSION"
	local m=$API_BIN_CACHE/src/etcd-$API_ETCD_VERSION
	mkdir -p "$m"
	cat >"$m/main.go" <<'EOF'
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
EOF
	( cd "$m" && { [ -f go.mod ] || go mod init podlife.local/etcd >/dev/null 2>&1; } &&
		go get "go.etcd.io/etcd/server/v3@$API_ETCD_VERSION" >/dev/null 2>&1 && go mod tidy >/dev/null 2>&1 &&
		go build -o "$BIN/etcd" . ) >&2 || die "build of etcd failed"
}
mkdir -p "$BIN"
build_etcd
build_k8s

# ---- already up? ------------------------------------------------------------
mkdir -p "$API_DIR"
cd "$API_DIR"
alive() { [ -f "$1.pid" ] && kill -0 "$(cat "$1.pid")" 2>/dev/null; }
if alive kube-apiserver && alive etcd && curl -sfk --max-time 2 -H "Authorization: Bearer $(sed -n 's/^\([^,]*\),admin,.*/\1/p' tokens.csv)" "https://127.0.0.1:$API_PORT/readyz" >/dev/null; then
	log "already running in $API_DIR"
	echo "$API_DIR/admin.kubeconfig"
	exit 0
fi
bash "$HERE/stop.sh" >/dev/null 2>&1 || true

# ---- credentials ------------------------------------------------------------
rm -rf etcd-data; mkdir -p etcd-data
openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 30 -subj /CN=podlife-test-ca 2>/dev/null
openssl req -newkey rsa:2048 -nodes -keyout apiserver.key -out apiserver.csr -subj /CN=kube-apiserver 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes.default.svc\n' >san.ext
openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out apiserver.crt -days 30 -extfile san.ext 2>/dev/null
# The API server's client certificate for node servers (kubectl logs/exec/
# port-forward are proxied to the node's daemon endpoint with it).
openssl req -newkey rsa:2048 -nodes -keyout kubelet-client.key -out kubelet-client.csr \
	-subj "/O=system:masters/CN=kube-apiserver-kubelet-client" 2>/dev/null
printf 'extendedKeyUsage=clientAuth\n' >client.ext
openssl x509 -req -in kubelet-client.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out kubelet-client.crt -days 30 -extfile client.ext 2>/dev/null
# The aggregation layer (front proxy): its own CA and the API server's client certificate.
openssl req -x509 -newkey rsa:2048 -nodes -keyout front-proxy-ca.key -out front-proxy-ca.crt -days 30 -subj /CN=podlife-test-front-proxy-ca 2>/dev/null
openssl req -newkey rsa:2048 -nodes -keyout front-proxy-client.key -out front-proxy-client.csr -subj /CN=front-proxy-client 2>/dev/null
openssl x509 -req -in front-proxy-client.csr -CA front-proxy-ca.crt -CAkey front-proxy-ca.key -CAcreateserial -out front-proxy-client.crt -days 30 -extfile client.ext 2>/dev/null
openssl genrsa -out sa.key 2048 2>/dev/null
openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
token() { head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n'; }
admin_token=$(token)
echo "$admin_token,admin,admin,system:masters" >tokens.csv
kubeconfig() { # file token
	cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: podlife-test
  cluster: {server: "https://127.0.0.1:$API_PORT", certificate-authority: "$API_DIR/ca.crt"}
users:
- name: user
  user: {token: "$2"}
contexts:
- name: podlife-test
  context: {cluster: podlife-test, user: user}
current-context: podlife-test
EOF
}
kubeconfig admin.kubeconfig "$admin_token"
for n in $API_NODES; do
	t=$(token)
	echo "$t,system:node:$n,node-$n,system:nodes" >>tokens.csv
	kubeconfig "node-$n.kubeconfig" "$t"
done

# ---- start ------------------------------------------------------------------
start() { # name args...
	local name=$1; shift
	"$@" >"$name.log" 2>&1 &
	echo $! >"$name.pid"
}
started=1
log "starting etcd"
start etcd "$BIN/etcd" --data-dir "$API_DIR/etcd-data" --name podlife \
	--listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
	--listen-peer-urls "http://127.0.0.1:$((ETCD_PORT + 10))" --initial-advertise-peer-urls "http://127.0.0.1:$((ETCD_PORT + 10))" \
	--initial-cluster "podlife=http://127.0.0.1:$((ETCD_PORT + 10))" --listen-metrics-urls "http://127.0.0.1:$((ETCD_PORT + 20))"
for _ in $(seq 60); do curl -sf --max-time 1 "http://127.0.0.1:$ETCD_PORT/health" >/dev/null && break; sleep 0.5; done
curl -sf --max-time 2 "http://127.0.0.1:$ETCD_PORT/health" >/dev/null || die "etcd did not start (see $API_DIR/etcd.log)"

log "starting kube-apiserver"
start kube-apiserver "$BIN/kube-apiserver" --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
	--bind-address 127.0.0.1 --secure-port "$API_PORT" \
	--tls-cert-file apiserver.crt --tls-private-key-file apiserver.key --client-ca-file ca.crt \
	--token-auth-file tokens.csv --authorization-mode Node,RBAC --enable-admission-plugins NodeRestriction \
	--default-not-ready-toleration-seconds 20 --default-unreachable-toleration-seconds 20 \
	--service-account-key-file sa.pub --service-account-signing-key-file sa.key \
	--service-account-issuer https://kubernetes.default.svc --service-cluster-ip-range 10.96.0.0/24 \
	--allow-privileged=true \
	--kubelet-client-certificate kubelet-client.crt --kubelet-client-key kubelet-client.key \
	--kubelet-preferred-address-types InternalIP,ExternalIP,Hostname \
	--requestheader-client-ca-file front-proxy-ca.crt --requestheader-allowed-names front-proxy-client \
	--requestheader-username-headers X-Remote-User --requestheader-group-headers X-Remote-Group \
	--requestheader-extra-headers-prefix X-Remote-Extra- \
	--proxy-client-cert-file front-proxy-client.crt --proxy-client-key-file front-proxy-client.key \
	--enable-aggregator-routing=true
ready=0
for _ in $(seq 120); do
	curl -sfk --max-time 1 -H "Authorization: Bearer $admin_token" "https://127.0.0.1:$API_PORT/readyz" >/dev/null && { ready=1; break; }
	sleep 0.5
done
[ $ready = 1 ] || die "kube-apiserver not ready after 60 s (see $API_DIR/kube-apiserver.log)"

log "starting kube-controller-manager and kube-scheduler"
start kube-controller-manager "$BIN/kube-controller-manager" --kubeconfig admin.kubeconfig \
	--authentication-kubeconfig admin.kubeconfig --authorization-kubeconfig admin.kubeconfig \
	--bind-address 127.0.0.1 --secure-port "$((API_PORT + 1))" --leader-elect=false \
	--service-account-private-key-file sa.key --root-ca-file ca.crt --use-service-account-credentials=false \
	--cluster-signing-cert-file ca.crt --cluster-signing-key-file ca.key \
	--node-monitor-grace-period 40s
start kube-scheduler "$BIN/kube-scheduler" --kubeconfig admin.kubeconfig \
	--authentication-kubeconfig admin.kubeconfig --authorization-kubeconfig admin.kubeconfig \
	--bind-address 127.0.0.1 --secure-port "$((API_PORT + 2))" --leader-elect=false
# The default service account appears within seconds; tests creating pods need it.
for _ in $(seq 60); do
	"$BIN/kubectl" --kubeconfig admin.kubeconfig -n default get serviceaccount default >/dev/null 2>&1 && break
	sleep 0.5
done
alive kube-controller-manager || die "kube-controller-manager exited (see $API_DIR/kube-controller-manager.log)"
alive kube-scheduler || die "kube-scheduler exited (see $API_DIR/kube-scheduler.log)"

cat >env <<EOF
API_SERVER=https://127.0.0.1:$API_PORT
API_ADMIN_KUBECONFIG=$API_DIR/admin.kubeconfig
API_KUBECTL=$BIN/kubectl
API_CA=$API_DIR/ca.crt
API_FRONT_PROXY_CA=$API_DIR/front-proxy-ca.crt
EOF
log "ready: https://127.0.0.1:$API_PORT (node kubeconfigs: $(for n in $API_NODES; do printf '%s ' "$API_DIR/node-$n.kubeconfig"; done))"
echo "$API_DIR/admin.kubeconfig"
