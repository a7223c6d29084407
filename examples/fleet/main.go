// Command fleet runs a fleet of simulated podlife nodes in one process
// against a Kubernetes API server (package agent/fleet): each node
// registers its Node and Lease and runs the pods bound to it through the
// kubelet's real lifecycle on an in-process fake runtime, as the pods'
// fleet.podlife.io/script annotation scripts them.
//
//	go run ./examples/fleet --kubeconfig admin.kubeconfig --nodes 100
//	go run ./examples/fleet --kubeconfig admin.kubeconfig --nodes 3 \
//	    --prefix edge- --cpu 4 --memory 8Gi --pods 30 \
//	    --labels topology.kubernetes.io/zone=a,tier=edge --taints dedicated=edge:NoSchedule
//
// --kube-api-qps and --kube-api-burst (50 and 100) limit each node's API
// requests, --event-qps and --event-burst (50 and 100) its events, as the
// kubelet's flags of those names.
//
// The kubeconfig's user must be allowed to impersonate the nodes (a
// cluster admin is): each node talks as system:node:NAME, a kubelet's
// rights. The command prints when every node is Ready, then runs until
// SIGINT or SIGTERM.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/podlife/podlife/agent"
	"github.com/podlife/podlife/agent/events"
	"github.com/podlife/podlife/agent/fleet"
)

// config is the command line.
type config struct {
	kubeconfig string
	nodes      int
	prefix     string
	capacity   v1.ResourceList
	labels     map[string]string
	taints     []v1.Taint
	qps        float32
	burst      int
	eventQPS   float32
	eventBurst int
	root       string
	pprof      string
	verbosity  int
}

func parse(args []string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("fleet", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c := config{capacity: v1.ResourceList{}}
	fs.StringVar(&c.kubeconfig, "kubeconfig", "", "kubeconfig of a user who may impersonate nodes (required)")
	fs.IntVar(&c.nodes, "nodes", 10, "how many nodes")
	fs.StringVar(&c.prefix, "prefix", fleet.DefaultNamePrefix, "node name prefix: nodes are PREFIX0, PREFIX1, ...")
	cpu := fs.String("cpu", "", "each node's cpu capacity (default 32)")
	memory := fs.String("memory", "", "each node's memory capacity (default 256Gi)")
	pods := fs.String("pods", "", "each node's pod capacity (default 110)")
	storage := fs.String("ephemeral-storage", "", "each node's ephemeral-storage capacity (default 1Ti)")
	labels := fs.String("labels", "", "labels of every Node, KEY=VALUE,...")
	taints := fs.String("taints", "", "taints of every Node, KEY[=VALUE]:EFFECT,...")
	qps := fs.Float64("kube-api-qps", fleet.DefaultQPS, "each node's API requests per second")
	fs.IntVar(&c.burst, "kube-api-burst", fleet.DefaultBurst, "each node's API request burst")
	eventQPS := fs.Float64("event-qps", events.DefaultQPS, "each node's events per second, the kubelet's --event-qps (events over it are dropped)")
	fs.IntVar(&c.eventBurst, "event-burst", events.DefaultBurst, "each node's event burst, the kubelet's --event-burst")
	fs.StringVar(&c.root, "root-dir", "", "folder of the nodes' pod files (default: a temporary folder, removed at exit)")
	fs.StringVar(&c.pprof, "pprof-address", "", "serve Go's profiles (net/http/pprof) on this address, e.g. 127.0.0.1:6060 (default: none)")
	fs.IntVar(&c.verbosity, "v", 0, "log verbosity")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if c.kubeconfig == "" {
		return c, errors.New("--kubeconfig is required")
	}
	c.qps, c.eventQPS = float32(*qps), float32(*eventQPS)
	if c.eventQPS <= 0 || c.eventBurst <= 0 {
		return c, errors.New("--event-qps and --event-burst must be positive")
	}
	for name, v := range map[v1.ResourceName]string{v1.ResourceCPU: *cpu, v1.ResourceMemory: *memory, v1.ResourcePods: *pods, v1.ResourceEphemeralStorage: *storage} {
		if v == "" {
			continue
		}
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return c, fmt.Errorf("--%s %q: %w", name, v, err)
		}
		c.capacity[name] = q
	}
	var err error
	if c.labels, err = parseLabels(*labels); err != nil {
		return c, fmt.Errorf("--labels: %w", err)
	}
	if c.taints, err = parseTaints(*taints); err != nil {
		return c, fmt.Errorf("--taints: %w", err)
	}
	return c, nil
}

// parseLabels reads KEY=VALUE,...
func parseLabels(s string) (map[string]string, error) {
	if s == "" {
		return nil, nil
	}
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%q: want KEY=VALUE", kv)
		}
		out[k] = v
	}
	return out, nil
}

// parseTaints reads KEY[=VALUE]:EFFECT,...
func parseTaints(s string) ([]v1.Taint, error) {
	if s == "" {
		return nil, nil
	}
	var out []v1.Taint
	for _, t := range strings.Split(s, ",") {
		kv, effect, ok := strings.Cut(t, ":")
		if !ok {
			return nil, fmt.Errorf("%q: want KEY[=VALUE]:EFFECT", t)
		}
		k, v, _ := strings.Cut(kv, "=")
		e := v1.TaintEffect(effect)
		if k == "" || (e != v1.TaintEffectNoSchedule && e != v1.TaintEffectPreferNoSchedule && e != v1.TaintEffectNoExecute) {
			return nil, fmt.Errorf("%q: want KEY[=VALUE]:EFFECT, EFFECT one of NoSchedule, PreferNoSchedule, NoExecute", t)
		}
		out = append(out, v1.Taint{Key: k, Value: v, Effect: e})
	}
	return out, nil
}

func newLogger(w io.Writer, verbosity int) logr.Logger {
	return funcr.New(func(prefix, args string) {
		if prefix != "" {
			args = prefix + ": " + args
		}
		fmt.Fprintln(w, args)
	}, funcr.Options{Verbosity: verbosity})
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is the command; it returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	c, err := parse(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(stderr, "fleet:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := serve(ctx, c, stdout, newLogger(stderr, c.verbosity)); err != nil {
		fmt.Fprintln(stderr, "fleet:", err)
		return 1
	}
	return 0
}

// serve runs the fleet until ctx ends; it says on stdout when every node
// is Ready.
func serve(ctx context.Context, c config, stdout io.Writer, log logr.Logger) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
	if err != nil {
		return err
	}
	f, err := fleet.New(fleet.Options{
		Config: cfg, QPS: c.qps, Burst: c.burst,
		Nodes: c.nodes, NamePrefix: c.prefix, Capacity: c.capacity, Labels: c.labels, Taints: c.taints,
		Root: c.root, Logger: log,
		Agent: func(_ string, o *agent.Options) {
			o.Cluster.Events.QPS, o.Cluster.Events.Burst = c.eventQPS, c.eventBurst
		},
	})
	if err != nil {
		return err
	}
	admin, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if c.pprof != "" {
		stop, err := servePprof(ctx, c.pprof)
		if err != nil {
			return err
		}
		defer stop()
	}
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- f.Run(ctx) }()
	go reportReady(ctx, admin, f.Names(), start, stdout)
	return <-done
}

// reportReady prints once every node of names is Ready.
func reportReady(ctx context.Context, admin kubernetes.Interface, names []string, start time.Time, stdout io.Writer) {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		list, err := admin.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			continue
		}
		ready := 0
		for _, n := range list.Items {
			if want[n.Name] && nodeReady(&n) {
				ready++
			}
		}
		if ready == len(names) {
			fmt.Fprintf(stdout, "%d nodes Ready in %s\n", ready, time.Since(start).Round(100*time.Millisecond))
			return
		}
	}
}

func nodeReady(n *v1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// servePprof serves Go's profiles on addr until stop.
func servePprof(ctx context.Context, addr string) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--pprof-address: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, BaseContext: func(net.Listener) context.Context { return ctx }, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	return func() { _ = srv.Close(); <-done }, nil
}
