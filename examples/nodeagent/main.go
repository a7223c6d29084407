// Command nodeagent is a small, real node agent built on podlife: it runs the
// static pods of a manifest folder on a CRI runtime (an embedded fakecri
// server by default, or containerd / CRI-O with --cri-endpoint) and serves
// the kubelet's pod lifecycle metrics.
//
//	go run ./examples/nodeagent                 # agent on 127.0.0.1:10255
//	curl -s 127.0.0.1:10255/metrics | grep kubelet_
//	curl -s 127.0.0.1:10255/debug/pods
//	go run ./examples/nodeagent --demo          # the seed's story, as a table
//
// Endpoints: /metrics (Prometheus, the agent's own registry), /healthz ("ok"
// once every pod source has been read), /debug/pods (every pod the agent
// knows, as JSON: worker state, phase, orphan and static flags, grace period,
// time in state).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/podlife/podlife/agent/eviction"
	"github.com/podlife/podlife/agent/gc"
	"github.com/podlife/podlife/agent/shutdown"
)

// config is the command line.
type config struct {
	manifests   string
	criEndpoint string
	listen      string
	nodeName    string
	kubeconfig  string
	inCluster   bool
	// podNetwork gives pods without hostNetwork their own network
	// namespace from the runtime's CNI (runtime/cri NetworkModePod).
	podNetwork bool
	// kubeAPIQPS and kubeAPIBurst are the API client's limits.
	kubeAPIQPS   float32
	kubeAPIBurst int
	// eventQPS and eventBurst bound the events sent (dropped over them).
	eventQPS   float32
	eventBurst int
	demo       bool
	verbosity  int
	// node server (agent/server), the kubelet's flags
	port              int
	address           string
	tlsCertFile       string
	tlsKeyFile        string
	clientCAFile      string
	anonymousAuth     bool
	authorizationMode string
	nodeIP            string
	// allowedUnsafeSysctls, comma-separated (agent.Options.AllowedUnsafeSysctls)
	allowedUnsafeSysctls string
	// container log rotation, the kubelet's flags (agent.Options.ContainerLogMaxSize
	// in bytes, negative: off; ContainerLogMaxFiles)
	containerLogMaxSize  int64
	containerLogMaxFiles int
	// container garbage collection (agent/gc), the kubelet's (deprecated
	// but still accepted) flags; containerGCPeriod is podlife's own
	// (negative: off).
	minimumContainerTTL           time.Duration
	maxDeadContainersPerContainer int
	maxDeadContainers             int
	containerGCPeriod             time.Duration
	// image garbage collection, the kubelet's flags (agent.Options.ImageGC*)
	imageGCHighThreshold int
	imageGCLowThreshold  int
	imageMinimumGCAge    time.Duration
	imageMaximumGCAge    time.Duration
	// eviction manager (agent/eviction), the kubelet's --eviction-* flags
	evictionFlags evictionFlags
	eviction      *eviction.Options
	// root folder and graceful node shutdown, the kubelet's (shutdown.go)
	rootDir                         string
	podLogsDir                      string
	configFile                      string
	configIgnored                   []string // --config's fields not read
	shutdownGracePeriod             time.Duration
	shutdownGracePeriodCriticalPods time.Duration
	shutdownByPriority              []shutdown.PriorityGracePeriod
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("nodeagent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.manifests, "manifests", "examples/nodeagent/manifests", "folder of static pod manifests (YAML or JSON, one pod per file)")
	fs.StringVar(&c.criEndpoint, "cri-endpoint", "", `CRI runtime socket, e.g. unix:///run/containerd/containerd.sock (default: an embedded fakecri runtime)`)
	fs.StringVar(&c.listen, "listen", "127.0.0.1:10255", "address of the /metrics, /healthz and /debug/pods server")
	fs.StringVar(&c.nodeName, "node-name", "podlife-node", "node name; static pods are named <name>-<node-name>")
	fs.StringVar(&c.kubeconfig, "kubeconfig", "", "kubeconfig with the node's credentials (user system:node:<node-name>): join the cluster as node --node-name (Node and Lease, the pods bound to it, mirror pods, statuses, events)")
	fs.BoolVar(&c.podNetwork, "pod-network", false, "give pods that do not ask for hostNetwork their own network namespace from the runtime's CNI network (the runtime must have one); default: every pod on the node's network")
	fs.BoolVar(&c.inCluster, "in-cluster", false, "join the cluster with the in-cluster configuration of the pod the agent runs in (instead of --kubeconfig)")
	var qps float64
	fs.Float64Var(&qps, "kube-api-qps", 50, "queries per second to the API server (the kubelet's default)")
	fs.IntVar(&c.kubeAPIBurst, "kube-api-burst", 100, "burst of queries to the API server (the kubelet's default)")
	var eventQPS float64
	fs.Float64Var(&eventQPS, "event-qps", 50, "events per second sent to the API server; events over it and --event-burst are dropped (the kubelet's default)")
	fs.IntVar(&c.eventBurst, "event-burst", 100, "burst of events sent to the API server (the kubelet's default)")
	fs.IntVar(&c.port, "port", 10250, "port of the node server (logs, exec, attach, port-forward, stats for kubectl); 0: any free port (published in the Node); -1: no node server. It runs when the agent joins a cluster or --client-ca-file or --anonymous-auth is given")
	fs.StringVar(&c.address, "address", "0.0.0.0", "IP address the node server listens on")
	fs.StringVar(&c.tlsCertFile, "tls-cert-file", "", "serving certificate of the node server (default: a self-signed one)")
	fs.StringVar(&c.tlsKeyFile, "tls-private-key-file", "", "key of --tls-cert-file")
	fs.StringVar(&c.clientCAFile, "client-ca-file", "", "CA bundle of the client certificates the node server accepts (the API server's kubelet client certificate)")
	fs.BoolVar(&c.anonymousAuth, "anonymous-auth", false, "let requests without credentials reach the node server's authorizer as system:anonymous")
	fs.StringVar(&c.authorizationMode, "authorization-mode", "Webhook", "node server authorization: Webhook (SubjectAccessReview to the API server) or AlwaysAllow")
	fs.StringVar(&c.nodeIP, "node-ip", "", "the Node's InternalIP, where the API server reaches the node server (default: the machine's first global IPv4 address)")
	fs.StringVar(&c.allowedUnsafeSysctls, "allowed-unsafe-sysctls", "", `comma-separated unsafe sysctls or patterns ending with '*' ("kernel.msg*,net.core.somaxconn") pods may set besides the safe ones; others are rejected (SysctlForbidden)`)
	var logMaxSize string
	fs.StringVar(&logMaxSize, "container-log-max-size", "10Mi", "size (a quantity: 10Mi, 500Ki) from which a running container's log file is rotated; negative: no rotation")
	fs.IntVar(&c.containerLogMaxFiles, "container-log-max-files", 5, "most log files kept per container, the current one included (at least 2); older rotated ones are compressed")
	fs.DurationVar(&c.minimumContainerTTL, "minimum-container-ttl-duration", 0, "how long a dead container of a running pod stays at least before garbage collection may remove it (the kubelet's)")
	fs.IntVar(&c.maxDeadContainersPerContainer, "maximum-dead-containers-per-container", 1, "most dead instances kept of each container of a running pod, the newest (for kubectl logs --previous); negative: no limit (the kubelet's)")
	fs.IntVar(&c.maxDeadContainers, "maximum-dead-containers", -1, "most dead containers kept on the node in all, at least one per container; negative: no limit (the kubelet's)")
	fs.DurationVar(&c.containerGCPeriod, "container-gc-period", time.Minute, "period of container garbage collection (dead containers and sandboxes, folders of pods that are gone); negative: none")
	fs.IntVar(&c.imageGCHighThreshold, "image-gc-high-threshold", 85, "percent of the image file system's usage from which unused images are removed (1-100; 100: no image garbage collection)")
	fs.IntVar(&c.imageGCLowThreshold, "image-gc-low-threshold", 80, "percent of the image file system's usage image garbage collection frees down to (1-99, below --image-gc-high-threshold)")
	fs.DurationVar(&c.imageMinimumGCAge, "image-minimum-gc-age", 2*time.Minute, "minimum age of an unused image before it is garbage collected")
	fs.DurationVar(&c.imageMaximumGCAge, "image-maximum-gc-age", 0, "maximum time an image may stay unused before it is garbage collected, whatever the usage (0: none)")
	addShutdownFlags(fs, &c)
	fs.BoolVar(&c.demo, "demo", false, "run the demo story on the embedded runtime, print what happened and exit (0 when every check held)")
	c.evictionFlags.register(fs)
	fs.IntVar(&c.verbosity, "v", 2, "log verbosity: 0 errors and notable events, 2 pod lifecycle transitions, 4 every update")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	c.kubeAPIQPS = float32(qps)
	if qps <= 0 || c.kubeAPIBurst <= 0 {
		return c, fmt.Errorf("--kube-api-qps and --kube-api-burst must be positive, got %v and %d", qps, c.kubeAPIBurst)
	}
	c.eventQPS = float32(eventQPS)
	if eventQPS <= 0 || c.eventBurst <= 0 {
		return c, fmt.Errorf("--event-qps and --event-burst must be positive, got %v and %d", eventQPS, c.eventBurst)
	}
	if c.inCluster && c.kubeconfig != "" {
		return c, errors.New("--in-cluster and --kubeconfig exclude each other")
	}
	if c.port < -1 || c.port > 65535 {
		return c, fmt.Errorf("--port %d: want a port, 0 (any free port) or -1 (no node server)", c.port)
	}
	if (c.tlsCertFile == "") != (c.tlsKeyFile == "") {
		return c, errors.New("--tls-cert-file and --tls-private-key-file go together")
	}
	if c.authorizationMode != "Webhook" && c.authorizationMode != "AlwaysAllow" {
		return c, fmt.Errorf("--authorization-mode %q: want Webhook or AlwaysAllow", c.authorizationMode)
	}
	if c.nodeIP != "" && net.ParseIP(c.nodeIP) == nil {
		return c, fmt.Errorf("--node-ip %q is not an IP address", c.nodeIP)
	}
	var err error
	if c.containerLogMaxSize, err = parseLogMaxSize(logMaxSize); err != nil {
		return c, err
	}
	if c.eviction, err = c.evictionFlags.options(); err != nil {
		return c, err
	}
	if c.containerLogMaxFiles < 2 {
		return c, fmt.Errorf("--container-log-max-files %d: want at least 2", c.containerLogMaxFiles)
	}
	if c.minimumContainerTTL < 0 {
		return c, fmt.Errorf("--minimum-container-ttl-duration %s: must not be negative", c.minimumContainerTTL)
	}
	if c.containerGCPeriod == 0 {
		return c, errors.New("--container-gc-period 0: want a period, or a negative value for no container garbage collection")
	}
	if err := checkImageGCFlags(c); err != nil {
		return c, err
	}
	if err := checkShutdownFlags(fs, &c); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if c.demo && (c.kubeconfig != "" || c.inCluster) {
		return c, errors.New("--demo runs without an API server; it cannot run with --kubeconfig")
	}
	if c.podNetwork && c.criEndpoint == "" {
		return c, errors.New("--pod-network needs a runtime with a CNI network (--cri-endpoint)")
	}
	if c.demo && c.criEndpoint != "" {
		return c, errors.New("--demo injects faults into the embedded runtime; it cannot run with --cri-endpoint")
	}
	return c, nil
}

// checkImageGCFlags checks the image garbage collection flags as the
// kubelet checks its configuration.
func checkImageGCFlags(c config) error {
	if c.imageGCHighThreshold < 1 || c.imageGCHighThreshold > 100 {
		return fmt.Errorf("--image-gc-high-threshold %d: want 1 to 100", c.imageGCHighThreshold)
	}
	if c.imageGCLowThreshold < 1 || c.imageGCLowThreshold > 100 {
		return fmt.Errorf("--image-gc-low-threshold %d: want 1 to 100", c.imageGCLowThreshold)
	}
	if c.imageGCLowThreshold >= c.imageGCHighThreshold {
		return fmt.Errorf("--image-gc-low-threshold %d must be less than --image-gc-high-threshold %d", c.imageGCLowThreshold, c.imageGCHighThreshold)
	}
	if c.imageMinimumGCAge < 0 || c.imageMaximumGCAge < 0 {
		return errors.New("--image-minimum-gc-age and --image-maximum-gc-age must not be negative")
	}
	if c.imageMaximumGCAge != 0 && c.imageMaximumGCAge <= c.imageMinimumGCAge {
		return fmt.Errorf("--image-maximum-gc-age %s must be greater than --image-minimum-gc-age %s", c.imageMaximumGCAge, c.imageMinimumGCAge)
	}
	return nil
}

// parseLogMaxSize reads --container-log-max-size, a quantity as the
// kubelet's (10Mi, 500Ki, 1G); negative turns the rotation off.
func parseLogMaxSize(s string) (int64, error) {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return 0, fmt.Errorf("--container-log-max-size %q: %w", s, err)
	}
	n, ok := q.AsInt64()
	if !ok || n == 0 {
		return 0, fmt.Errorf("--container-log-max-size %q: want a whole number of bytes, not 0 (negative: no rotation)", s)
	}
	return n, nil
}

// newLogger logs readable lines on w: time, logger name, message, key/values.
func newLogger(w io.Writer, verbosity int) logr.Logger {
	return funcr.New(func(prefix, args string) {
		if prefix != "" {
			prefix += ": "
		}
		fmt.Fprintf(w, "%s %s%s\n", time.Now().Format("15:04:05.000"), prefix, args)
	}, funcr.Options{Verbosity: verbosity})
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	c, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "nodeagent:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// SIGUSR1 asks for a graceful node shutdown (the kubelet hears of one
	// from systemd-logind); SIGINT and SIGTERM, which a plain stop or
	// restart sends, stop the agent and leave the pods running, adopted at
	// the next start.
	shutdownSigs := make(chan os.Signal, 1)
	signal.Notify(shutdownSigs, syscall.SIGUSR1)
	defer signal.Stop(shutdownSigs)
	log := newLogger(stderr, c.verbosity)
	if c.demo {
		ok, err := runDemo(ctx, stdout, log)
		if err != nil {
			fmt.Fprintln(stderr, "nodeagent: demo:", err)
			return 1
		}
		if !ok {
			return 1
		}
		return 0
	}
	if err := serveWith(ctx, c, log, shutdownSigs); err != nil {
		fmt.Fprintln(stderr, "nodeagent:", err)
		return 1
	}
	return 0
}

// containerGCPolicy maps the kubelet's garbage collection flags to
// gc.Policy, whose zero values mean the defaults, and whether no dead
// instance is kept at all: the kubelet's 0 per container, or 0 on the
// node (which the kubelet reaches by removing every dead container, the
// same).
func containerGCPolicy(c config) (p gc.Policy, keepNone bool) {
	p = gc.Policy{MinAge: c.minimumContainerTTL, MaxPerPodContainer: c.maxDeadContainersPerContainer, MaxContainers: c.maxDeadContainers}
	return p, c.maxDeadContainersPerContainer == 0 || c.maxDeadContainers == 0
}
