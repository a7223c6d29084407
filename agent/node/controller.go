package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	goruntime "runtime"
	"sync"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Controller registers a Node, keeps its Lease renewed and reports its
// status; see the package documentation. Create it with New and start it
// with Run.
type Controller struct {
	opts    Options
	log     logr.Logger
	machine machine
	metrics *metrics

	registered chan struct{}
	// syncs carries SyncStatus's requests to the status goroutine, each
	// with the channel its answer goes to.
	syncs chan chan error
	// lastLease is the Lease as the API server last returned it; only the
	// lease goroutine uses it.
	lastLease *coordinationv1.Lease

	// watch holds the Node as the API server has it (nil until Run
	// starts it); only the status goroutine reads it.
	watch *nodeWatch

	mu      sync.Mutex
	started bool
	// lastRuntimeSync is when the runtime last answered that it is ready;
	// runtimeProblem why its last answer said it is not ("": it is).
	lastRuntimeSync time.Time
	runtimeProblem  string
	node            *v1.Node // as the API server last returned it; nil before registration
	rnd             *rand.Rand
}

// New validates opts, reads the machine (CPUs, memory, disk, addresses,
// system information) and returns a Controller. It starts nothing and
// talks to no API server.
func New(opts Options) (*Controller, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	c := &Controller{
		opts:       opts,
		log:        opts.Logger,
		machine:    readMachine(opts.EphemeralStoragePath),
		registered: make(chan struct{}),
		syncs:      make(chan chan error),
		rnd:        rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())),
	}
	if opts.Registerer != nil {
		m, err := newMetrics(opts.Registerer, opts.MetricsNamespace)
		if err != nil {
			return nil, err
		}
		c.metrics = m
	}
	return c, nil
}

// Registered is closed once the Node exists in the API server (created or
// adopted) for the first time.
func (c *Controller) Registered() <-chan struct{} { return c.registered }

// Node returns a copy of the Node as the API server last returned it, or
// nil before registration.
func (c *Controller) Node() *v1.Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.node == nil {
		return nil
	}
	return c.node.DeepCopy()
}

// NodeIPs returns the Node's InternalIP addresses, then its ExternalIP
// ones, as the kubelet picks a pod's hostIPs: from the last status written,
// or from the configured (or the machine's) addresses before that.
func (c *Controller) NodeIPs() []string {
	c.mu.Lock()
	addrs := c.opts.Addresses
	if c.node != nil && len(c.node.Status.Addresses) > 0 {
		addrs = c.node.Status.Addresses
	}
	c.mu.Unlock()
	if len(addrs) == 0 {
		addrs = c.machine.addresses
	}
	var out []string
	for _, t := range []v1.NodeAddressType{v1.NodeInternalIP, v1.NodeExternalIP} {
		for _, a := range addrs {
			if a.Type == t {
				out = append(out, a.Address)
			}
		}
	}
	return out
}

// Allocatable returns the node's allocatable resources: from the last
// status written (a Provider may have changed them), or before that as
// the Controller computes them (the machine's capacity with
// Options.Capacity and Options.Allocatable over it). It is what the
// kubelet gives a resourceFieldRef to a limit a container does not set.
func (c *Controller) Allocatable() v1.ResourceList {
	c.mu.Lock()
	if c.node != nil && len(c.node.Status.Allocatable) > 0 {
		out := c.node.Status.Allocatable.DeepCopy()
		c.mu.Unlock()
		return out
	}
	c.mu.Unlock()
	_, alloc := c.resources()
	return alloc
}

// resources are the capacity and allocatable the Controller computes.
func (c *Controller) resources() (capacity, allocatable v1.ResourceList) {
	capacity = maps.Clone(c.machine.capacity)
	maps.Copy(capacity, c.opts.Capacity)
	allocatable = maps.Clone(capacity)
	maps.Copy(allocatable, c.opts.Allocatable)
	return capacity, allocatable
}

// Run registers the Node (retrying with back-off until the API server
// accepts it), then renews the Lease and reports the status until ctx is
// done. It returns nil then, once every goroutine it started has returned.
// It may be called once.
func (c *Controller) Run(ctx context.Context) error {
	c.mu.Lock()
	if c.started {
		c.mu.Unlock()
		return errors.New("node: Run called twice")
	}
	c.started = true
	c.mu.Unlock()

	c.log.Info("registering node", "node", c.opts.NodeName)
	if err := c.retry(ctx, "register node", c.register); err != nil {
		return nil // ctx done
	}
	close(c.registered)

	w, runWatch := c.startNodeWatch(ctx)
	c.watch = w
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { defer wg.Done(); runWatch() }()
	go func() { defer wg.Done(); c.runLease(ctx) }()
	go func() { defer wg.Done(); c.runStatus(ctx) }()
	wg.Wait()
	return nil
}

// retry calls f until it succeeds, waiting a jittered, doubling back-off
// between failures; it returns ctx's error once ctx is done.
func (c *Controller) retry(ctx context.Context, what string, f func(context.Context) error) error {
	delay := initialBackOff
	for {
		err := f(ctx)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		wait := c.jitter(delay)
		c.log.Error(err, what+" failed; retrying", "node", c.opts.NodeName, "retryIn", wait.String())
		if !c.sleep(ctx, wait) {
			return ctx.Err()
		}
		delay = min(2*delay, c.opts.MaxBackOff)
	}
}

// jitter returns d plus up to 20 % more.
func (c *Controller) jitter(d time.Duration) time.Duration {
	var f float64
	if c.opts.Rand != nil {
		f = c.opts.Rand()
	} else {
		c.mu.Lock()
		f = c.rnd.Float64()
		c.mu.Unlock()
	}
	return d + time.Duration(0.2*f*float64(d))
}

// sleep waits d on the clock; false when ctx ended first.
func (c *Controller) sleep(ctx context.Context, d time.Duration) bool {
	t := c.opts.Clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
		return true
	}
}

// register creates the Node, or adopts the one that exists, then writes
// its status once.
func (c *Controller) register(ctx context.Context) error {
	status, err := c.computeStatus(ctx, nil)
	if err != nil {
		return err
	}
	want := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: c.opts.NodeName, Labels: c.labels()},
		Spec:       v1.NodeSpec{Taints: c.opts.Taints},
		Status:     status,
	}
	created, err := c.opts.Client.CoreV1().Nodes().Create(ctx, want, metav1.CreateOptions{})
	switch {
	case err == nil:
		c.log.Info("node registered", "node", c.opts.NodeName, "uid", created.UID)
		c.setNode(created)
	case apierrors.IsAlreadyExists(err):
		if err := c.adopt(ctx); err != nil {
			return err
		}
		// Keep the transition times the adopted Node has.
		if status, err = c.computeStatus(ctx, &c.Node().Status); err != nil {
			return err
		}
	default:
		return fmt.Errorf("create node %s: %w", c.opts.NodeName, err)
	}
	// The API server ignores the status of a create: write it now.
	return c.writeStatus(ctx, status)
}

// adopt takes over an existing Node: it adds the labels the Controller
// sets, leaving every other label, annotation, taint and field as their
// owners set them.
func (c *Controller) adopt(ctx context.Context) error {
	nodes := c.opts.Client.CoreV1().Nodes()
	existing, err := nodes.Get(ctx, c.opts.NodeName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("read existing node %s: %w", c.opts.NodeName, err)
	}
	missing := map[string]string{}
	for k, v := range c.labels() {
		if cur, ok := existing.Labels[k]; !ok || cur != v {
			missing[k] = v
		}
	}
	if len(missing) > 0 {
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": missing}})
		if err != nil {
			return err
		}
		existing, err = nodes.Patch(ctx, c.opts.NodeName, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
		if err != nil {
			return fmt.Errorf("add labels to existing node %s: %w", c.opts.NodeName, err)
		}
	}
	c.log.Info("existing node adopted", "node", c.opts.NodeName, "uid", existing.UID, "labelsAdded", len(missing))
	c.setNode(existing)
	return nil
}

// labels are the labels the Controller sets on its Node.
func (c *Controller) labels() map[string]string {
	l := map[string]string{
		v1.LabelHostname:   c.opts.NodeName,
		v1.LabelOSStable:   goruntime.GOOS,
		v1.LabelArchStable: goruntime.GOARCH,
	}
	maps.Copy(l, c.opts.Labels)
	return l
}

func (c *Controller) setNode(n *v1.Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.node = n
}

// nodeUID returns the UID of the registered Node ("" before).
func (c *Controller) nodeUID() types.UID {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.node == nil {
		return ""
	}
	return c.node.UID
}
