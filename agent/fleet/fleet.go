package fleet

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"
	"k8s.io/utils/clock"

	"github.com/podlife/podlife/agent"
	"github.com/podlife/podlife/agent/envvars"
)

// Defaults of Options.
const (
	DefaultNamePrefix = "fleet-"
	// DefaultQPS and DefaultBurst limit each node's API requests, as the
	// kubelet's kubeAPIQPS and kubeAPIBurst.
	DefaultQPS   = 50
	DefaultBurst = 100
)

// DefaultCapacity is a node's capacity unless Options.Capacity says
// otherwise: a large machine, with the kubelet's 110 pods.
func DefaultCapacity() v1.ResourceList {
	return v1.ResourceList{
		v1.ResourceCPU:              resource.MustParse("32"),
		v1.ResourceMemory:           resource.MustParse("256Gi"),
		v1.ResourcePods:             resource.MustParse("110"),
		v1.ResourceEphemeralStorage: resource.MustParse("1Ti"),
	}
}

// Options configure a Fleet. Config or Client is required; every other
// field's zero value means its documented default.
type Options struct {
	// Config reaches the API server with credentials that may impersonate
	// the nodes (a cluster admin's): each node talks as the user
	// system:node:NAME in the group system:nodes, so that the Node
	// authorizer and NodeRestriction treat it as a kubelet. The nodes
	// share its connections; each has its own rate limit (QPS, Burst), and
	// another for its events. The nodes' one watch of the Services is the
	// first node's.
	Config *rest.Config
	// Client, when set, gives each node its clients instead (for nodes
	// with credentials of their own, or a fake clientset in tests). It is
	// called twice at each start of a node: for its API requests and for
	// its events, which the kubelet sends with a client (a rate limit) of
	// their own; and once by Run, with the first node's name, for the
	// watch of the Services that every node reads.
	Client func(name string) (kubernetes.Interface, error)
	// QPS and Burst limit each node's API requests (with Config). Defaults
	// DefaultQPS and DefaultBurst.
	QPS   float32
	Burst int

	// Nodes is how many nodes the fleet has: NamePrefix0, NamePrefix1, ...
	// Required, at least 1.
	Nodes int
	// NamePrefix starts every node's name. Default DefaultNamePrefix.
	NamePrefix string
	// Capacity of every node: given resources replace those of
	// DefaultCapacity, others are added. Allocatable is the capacity.
	Capacity v1.ResourceList
	// Labels and Taints of every Node, set when it is registered.
	Labels map[string]string
	Taints []v1.Taint

	// Root is the folder under which each node keeps its pods' files
	// (emptyDirs, configMap, secret and token volumes, container logs), in
	// Root/NAME. On a tmpfs, secret and projected volumes are plain
	// folders; elsewhere, when the process may mount, each is a tmpfs
	// mounted for it, as the kubelet's, which costs a mount per pod.
	// Default: a new folder in /dev/shm when it is a tmpfs, else in
	// os.TempDir(), removed by Run when it returns.
	Root string
	// Agent, when set, adjusts each node's agent options before the agent
	// is made (intervals, eviction, graceful shutdown, ...). The fleet's
	// Runtime, NodeName, Cluster, Probe and admission handler should be
	// kept.
	Agent func(name string, o *agent.Options)

	// Logger receives every node's logs, with the node's name. The zero
	// value discards.
	Logger logr.Logger
	// Clock drives every timer of every node and of their runtimes.
	// Default: the real clock.
	Clock clock.WithTicker
	// Registerer receives every node's metrics, with a "node" label; a
	// node started again replaces the metrics of its previous agent (and,
	// after a Kill, runtime). Default nil: no metrics.
	Registerer prometheus.Registerer
}

func (o Options) withDefaults() Options {
	if o.NamePrefix == "" {
		o.NamePrefix = DefaultNamePrefix
	}
	if o.QPS == 0 {
		o.QPS = DefaultQPS
	}
	if o.Burst == 0 {
		o.Burst = DefaultBurst
	}
	capacity := DefaultCapacity()
	maps.Copy(capacity, o.Capacity)
	o.Capacity = capacity
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	return o
}

func (o Options) validate() error {
	var errs []error
	if o.Config == nil && o.Client == nil {
		errs = append(errs, errors.New("Config or Client is required"))
	}
	if o.Nodes < 1 {
		errs = append(errs, fmt.Errorf("Nodes is %d: at least 1", o.Nodes))
	} else if msgs := validation.IsDNS1123Subdomain(o.name(o.Nodes - 1)); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("node name %q: %v", o.name(o.Nodes-1), msgs))
	}
	return errors.Join(errs...)
}

func (o Options) name(i int) string { return fmt.Sprintf("%s%d", o.NamePrefix, i) }

// Fleet is many podlife agents in one process, each a node of the cluster
// on its own in-process fake runtime (see the package documentation).
type Fleet struct {
	opts    Options
	log     logr.Logger
	names   []string
	nodes   map[string]*Node
	base    http.RoundTripper // Config's transport, shared by the nodes
	scripts scriptCache
	runs    runCounter

	mu     sync.Mutex
	runCtx context.Context // Run's; nil before Run and after it returned
	ran    bool
	wg     sync.WaitGroup // the nodes' agents

	// services is the one watch of the Services that every node's agent
	// reads (agent.Cluster.Services), made and run by Run with the first
	// node's client; set with runCtx.
	services *envvars.WatchingReader
}

// New returns a fleet of opts.Nodes nodes; Run starts them.
func New(opts Options) (*Fleet, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, fmt.Errorf("fleet: %w", err)
	}
	f := &Fleet{opts: opts, log: opts.Logger, nodes: map[string]*Node{}}
	f.scripts.m = map[string]scriptEntry{}
	f.runs.n = map[string]int{}
	if opts.Config != nil && opts.Client == nil {
		rt, err := rest.TransportFor(opts.Config)
		if err != nil {
			return nil, fmt.Errorf("fleet: transport: %w", err)
		}
		f.base = identityEncoding{rt}
	}
	for i := range opts.Nodes {
		n := newNode(f, i, opts.name(i))
		f.names = append(f.names, n.name)
		f.nodes[n.name] = n
	}
	return f, nil
}

// Names are the nodes' names, in order.
func (f *Fleet) Names() []string { return slices.Clone(f.names) }

// Node returns the node called name, or nil.
func (f *Fleet) Node(name string) *Node { return f.nodes[name] }

// Run starts every node and the watch of the Services they share, keeps
// them running until ctx is done, then stops them and waits for every
// goroutine of theirs. Nodes stopped or killed meanwhile stay so until
// Node.Start. It returns an error when a node cannot start (the nodes
// started are stopped again). Run may be called once.
func (f *Fleet) Run(ctx context.Context) error {
	f.mu.Lock()
	if f.ran {
		f.mu.Unlock()
		return errors.New("fleet: Run called twice")
	}
	f.ran = true
	if f.opts.Root == "" {
		parent := ""
		if memoryBacked(shm) {
			parent = shm
		}
		root, err := os.MkdirTemp(parent, "podlife-fleet-")
		if err != nil {
			f.mu.Unlock()
			return fmt.Errorf("fleet: %w", err)
		}
		f.opts.Root = root
		defer os.RemoveAll(root)
	}
	f.mu.Unlock()
	// The Node authorizer lets any node list and watch every Service: one
	// watch, with the first node's identity, serves them all, instead of a
	// list, a watch and a copy of every Service per node.
	client, err := f.client(f.names[0])
	if err != nil {
		return fmt.Errorf("fleet: services client: %w", err)
	}
	services, err := envvars.NewWatchingReader(client)
	if err != nil {
		return fmt.Errorf("fleet: %w", err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		if err := services.Run(runCtx); err != nil {
			f.log.Error(err, "services watch failed")
		}
	}()
	f.mu.Lock()
	f.runCtx, f.services = runCtx, services
	f.mu.Unlock()

	start := f.opts.Clock.Now()
	for _, name := range f.names {
		if err = f.nodes[name].Start(); err != nil {
			break
		}
	}
	if err == nil {
		f.log.Info("fleet started", "nodes", len(f.names), "took", f.opts.Clock.Since(start).Round(time.Millisecond))
		<-ctx.Done()
	}

	f.mu.Lock()
	f.runCtx = nil // no more starts
	f.mu.Unlock()
	cancel() // a start that raced this one ends at once
	var stopErrs []error
	for _, name := range f.names {
		if e := f.nodes[name].stop(false); e != nil {
			stopErrs = append(stopErrs, e)
		}
	}
	f.wg.Wait()
	<-watched
	for _, name := range f.names {
		f.nodes[name].closeRuntime()
	}
	if err != nil {
		return err
	}
	return errors.Join(stopErrs...)
}

// identityEncoding asks for uncompressed responses: the API server is
// usually on the same machine or network, and each gzip-compressed
// response stream (a watch) holds a 32 KiB window in the client (70 of a
// 1,000-node fleet's 1,330 MB of heap). rest.Config's DisableCompression
// does not do it for a plain-HTTP server, whose transport is Go's default.
type identityEncoding struct{ rt http.RoundTripper }

func (t identityEncoding) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Header.Get("Accept-Encoding") == "" {
		req = req.Clone(req.Context())
		req.Header.Set("Accept-Encoding", "identity")
	}
	return t.rt.RoundTrip(req)
}

// client returns the client of node name.
func (f *Fleet) client(name string) (kubernetes.Interface, error) {
	if f.opts.Client != nil {
		return f.opts.Client(name)
	}
	cfg := rest.CopyConfig(f.opts.Config)
	cfg.QPS, cfg.Burst = f.opts.QPS, f.opts.Burst
	cfg.UserAgent = "podlife-fleet/" + name
	imp := transport.NewImpersonatingRoundTripper(transport.ImpersonationConfig{
		UserName: "system:node:" + name,
		Groups:   []string{"system:nodes", "system:authenticated"},
	}, f.base)
	return kubernetes.NewForConfigAndClient(cfg, &http.Client{Transport: imp, Timeout: cfg.Timeout})
}

// scriptOf returns the script of a pod's annotations: nil when it has
// none or an invalid one (reported at admission).
func (f *Fleet) scriptOf(annotations map[string]string) *Script {
	v, ok := annotations[ScriptAnnotation]
	if !ok {
		return nil
	}
	s, _ := f.scripts.get(v)
	return s
}

// scriptCache keeps parsed scripts by their text: the pods of one template
// share it.
type scriptCache struct {
	mu sync.Mutex
	m  map[string]scriptEntry
}

type scriptEntry struct {
	s   *Script
	err error
}

// maxScripts bounds the cache; when full it starts over.
const maxScripts = 4096

func (c *scriptCache) get(v string) (*Script, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[v]; ok {
		return e.s, e.err
	}
	s, err := ParseScript(v)
	if len(c.m) >= maxScripts {
		clear(c.m)
	}
	c.m[v] = scriptEntry{s, err}
	return s, err
}

// runCounter numbers the runs of RunsPerController containers, by
// controller UID and container name, fleet-wide.
type runCounter struct {
	mu sync.Mutex
	n  map[string]int
}

// next returns the number of the next run of key (0 first).
func (c *runCounter) next(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.n[key]
	c.n[key] = n + 1
	return n
}

// shm is where the default Root goes when it is a tmpfs.
const shm = "/dev/shm"

// nodeDir is the folder of node name's files.
func (f *Fleet) nodeDir(name string) string { return filepath.Join(f.opts.Root, name) }
