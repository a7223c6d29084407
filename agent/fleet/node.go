package fleet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podlife/podlife/agent"
	"github.com/podlife/podlife/agent/envvars"
	"github.com/podlife/podlife/agent/imagegc"
	"github.com/podlife/podlife/agent/node"
	"github.com/podlife/podlife/agent/volume"
	"github.com/podlife/podlife/runtime/cri"
	"github.com/podlife/podlife/runtime/fakecri"
	"github.com/podlife/podlife/runtime/prober"
)

// Node is one node of a Fleet: an agent on its own fake runtime. The
// runtime outlives the agent (Stop, Start: a kubelet restart, the
// containers keep running) unless the node is killed (Kill: the machine
// is lost with everything on it).
type Node struct {
	f     *Fleet
	name  string
	index int
	ip    string

	// cur is the agent the runtime's and the prober's hooks ask about pods:
	// the running one, or the last one. The hooks never take mu: the
	// runtime calls them with its own lock held, and Stop holds mu while
	// the agent finishes its runtime calls.
	cur atomic.Pointer[instance]

	// mu guards the fields below and serializes Start, Stop and Kill.
	mu     sync.Mutex
	srv    *fakecri.Server // nil before the first start and after a kill
	rt     *cri.Runtime
	agent  *agent.Agent // the agent started last; nil when stopped
	cancel context.CancelFunc
	done   chan error
	// exited is set when the agent's Run returned by itself (an error).
	exited *atomic.Bool

	pullMu  sync.Mutex
	pulls   map[string]int // pulls by pod UID and image, for PullFailures
	pruneAt int            // len(pulls) from which it is pruned
}

func newNode(f *Fleet, i int, name string) *Node {
	// Each node gets an InternalIP of its own, 10.192.0.0/10 upward.
	k := i + 1
	ip := net.IPv4(10, byte(192+k>>16), byte(k>>8), byte(k)).String()
	return &Node{f: f, name: name, index: i, ip: ip, pulls: map[string]int{}, pruneAt: 1024}
}

// Name is the node's name.
func (n *Node) Name() string { return n.name }

// IP is the node's InternalIP, which its pods share (they run in the
// node's network).
func (n *Node) IP() string { return n.ip }

// Agent is the node's agent, nil while the node is stopped.
func (n *Node) Agent() *agent.Agent {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.agent
}

// Runtime is the node's fake runtime, nil before the node first started
// and after it was killed.
func (n *Node) Runtime() *fakecri.Server {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.srv
}

// Running tells whether the node's agent runs: it was started, was not
// stopped and did not fail (its error is logged, and Stop returns it).
func (n *Node) Running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.agent != nil && !n.exited.Load()
}

// Start starts the node's agent (again), on its runtime as the last agent
// left it, or on a new, empty one after a Kill. It fails when the node
// runs already or the fleet does not run.
func (n *Node) Start() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.agent != nil {
		return fmt.Errorf("fleet: node %s runs already", n.name)
	}
	n.f.mu.Lock()
	ctx, services := n.f.runCtx, n.f.services
	if ctx != nil {
		n.f.wg.Add(1)
	}
	n.f.mu.Unlock()
	if ctx == nil {
		return fmt.Errorf("fleet: node %s: the fleet does not run", n.name)
	}
	a, err := n.newAgentLocked(services)
	if err != nil {
		n.f.wg.Done()
		return fmt.Errorf("fleet: node %s: %w", n.name, err)
	}
	actx, cancel := context.WithCancel(ctx)
	done, exited := make(chan error, 1), new(atomic.Bool)
	n.agent, n.cancel, n.done, n.exited = a, cancel, done, exited
	go func() {
		defer n.f.wg.Done()
		err := a.Run(actx)
		if err != nil {
			n.f.log.Error(err, "agent failed", "node", n.name)
		}
		exited.Store(actx.Err() == nil)
		done <- err
	}()
	return nil
}

// Stop stops the node's agent, as a kubelet stopped: its containers keep
// running in its runtime, its Lease is no longer renewed, and the node
// controller marks the Node NotReady after its grace period. It waits for
// the agent's goroutines to return.
func (n *Node) Stop() error { return n.stop(false) }

// Kill stops the node's agent and loses its runtime with every container
// in it, as a machine that died: Start then starts an empty node.
func (n *Node) Kill() error { return n.stop(true) }

// Restart stops the node's agent and starts a new one on the same runtime
// (a kubelet restart).
func (n *Node) Restart() error {
	if err := n.Stop(); err != nil {
		return err
	}
	return n.Start()
}

func (n *Node) stop(kill bool) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	var err error
	if n.agent != nil {
		n.cancel()
		if err = <-n.done; errors.Is(err, context.Canceled) {
			err = nil
		}
		n.agent, n.cancel, n.done, n.exited = nil, nil, nil, nil
	}
	if kill {
		n.closeRuntimeLocked()
	}
	if err != nil {
		return fmt.Errorf("fleet: node %s: %w", n.name, err)
	}
	return nil
}

// closeRuntime stops the node's runtime (when the fleet stops).
func (n *Node) closeRuntime() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.closeRuntimeLocked()
}

func (n *Node) closeRuntimeLocked() {
	if n.rt != nil {
		_ = n.rt.Close()
	}
	if n.srv != nil {
		n.srv.Stop()
	}
	n.srv, n.rt = nil, nil
	n.pullMu.Lock()
	clear(n.pulls)
	n.pullMu.Unlock()
}

// newAgentLocked makes the node's runtime when it has none, and a new
// agent on it, which reads the fleet's Services.
func (n *Node) newAgentLocked(services envvars.ServiceReader) (*agent.Agent, error) {
	f := n.f
	log := f.log.WithValues("node", n.name)
	var reg prometheus.Registerer
	if f.opts.Registerer != nil {
		reg = replacing{prometheus.WrapRegistererWith(prometheus.Labels{"node": n.name}, f.opts.Registerer)}
	}
	if n.srv == nil {
		srv := fakecri.New(fakecri.Options{
			Clock:      f.opts.Clock,
			Logger:     log.WithName("fakecri"),
			Script:     n.containerScript,
			PullScript: n.pullScript,
		})
		if err := srv.StartInMemory(); err != nil {
			return nil, fmt.Errorf("runtime: %w", err)
		}
		rt, err := cri.New(cri.Options{
			Endpoint: "fleet/" + n.name,
			// No transport: the calls run fakecri's handlers directly.
			Conn:       srv.Conn(),
			Clock:      f.opts.Clock,
			Logger:     log.WithName("cri"),
			VolumeRoot: f.nodeDir(n.name) + "/pods",
			// The node's memory, for the OOM scores of Burstable pods.
			NodeMemoryCapacity: f.opts.Capacity.Memory().Value(),
			Registerer:         reg,
		})
		if err != nil {
			srv.Stop()
			return nil, fmt.Errorf("runtime: %w", err)
		}
		n.srv, n.rt = srv, rt
	}
	client, err := f.client(n.name)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	// Events get a client of their own, as the kubelet's do, so that they
	// never use the share of the pods' and the Node's requests.
	eventClient, err := f.client(n.name)
	if err != nil {
		return nil, fmt.Errorf("event client: %w", err)
	}
	srv := n.srv
	o := agent.Options{
		Runtime:  n.rt,
		NodeName: n.name,
		Cluster: &agent.Cluster{
			Client:      client,
			EventClient: eventClient,
			Services:    services,
			Labels:      f.opts.Labels,
			Taints:      f.opts.Taints,
			Node: node.Options{
				Capacity: f.opts.Capacity,
				Addresses: []v1.NodeAddress{
					{Type: v1.NodeInternalIP, Address: n.ip},
					{Type: v1.NodeHostName, Address: n.name},
				},
			},
			Volumes: volume.Options{Root: f.nodeDir(n.name) + "/volumes"},
		},
		Probe: func(ctx context.Context, req prober.Request) (prober.Result, string) {
			return n.probe(req)
		},
		AdmitHandlers: []agent.AdmitHandler{agent.AdmitHandlerFunc(func(attrs *agent.AdmitAttributes) agent.AdmitResult {
			n.checkScript(attrs.Pod)
			return agent.AdmitResult{Admit: true}
		})},
		ImageFsStats: func(context.Context) (imagegc.FsStats, error) {
			capacity, used := srv.ImageFsStats()
			return imagegc.FsStats{Mountpoint: "/", CapacityBytes: capacity, AvailableBytes: capacity - min(used, capacity), UsedBytes: used}, nil
		},
		Logger:     log,
		Clock:      f.opts.Clock,
		Registerer: reg,
	}
	if f.opts.Agent != nil {
		f.opts.Agent(n.name, &o)
	}
	a, err := agent.New(o)
	if err != nil {
		return nil, err
	}
	rec := o.Recorder
	if rec == nil && a.EventRecorder() != nil {
		rec = a.EventRecorder()
	}
	n.cur.Store(&instance{a, rec})
	return a, nil
}

// instance is an agent of the node and its event recorder.
type instance struct {
	a   *agent.Agent
	rec record.EventRecorder // nil: no events
}

// replacing registers a collector in place of the one registered before
// with the same descriptors: a restarted node's new agent (or a killed
// node's new runtime) takes over the metrics of the one before, instead
// of failing to register them again.
type replacing struct{ prometheus.Registerer }

func (r replacing) Register(c prometheus.Collector) error {
	err := r.Registerer.Register(c)
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) && r.Registerer.Unregister(are.ExistingCollector) {
		return r.Registerer.Register(c)
	}
	return err
}

// MustRegister registers cs, and panics on an error, as every
// Registerer's MustRegister does.
func (r replacing) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

// pod returns the pod of the node's current agent with this UID.
func (n *Node) pod(uid string) (*v1.Pod, bool) {
	in := n.cur.Load()
	if in == nil {
		return nil, false
	}
	return in.a.PodManager().GetPodByUID(types.UID(uid))
}

// checkScript reports a pod's script that does not parse, as an event.
func (n *Node) checkScript(pod *v1.Pod) {
	v, ok := pod.Annotations[ScriptAnnotation]
	if !ok {
		return
	}
	if _, err := n.f.scripts.get(v); err != nil {
		n.f.log.Info("invalid script: the pod runs with the defaults", "node", n.name, "pod", pod.Namespace+"/"+pod.Name, "err", err.Error())
		if in := n.cur.Load(); in != nil && in.rec != nil {
			in.rec.Eventf(pod, v1.EventTypeWarning, ReasonInvalidScript,
				"annotation %s: %v; the pod runs with the defaults", ScriptAnnotation, err)
		}
	}
}

// containerScript is the runtime's Script: what a container starting
// does, from its pod's ScriptAnnotation. It is called with the runtime's
// lock held.
func (n *Node) containerScript(sb *runtimeapi.PodSandboxConfig, c *runtimeapi.ContainerConfig) (fakecri.ContainerScript, bool) {
	s := n.f.scriptOf(sb.GetAnnotations())
	name := c.GetMetadata().GetName()
	cs, ok := s.container(name)
	if !ok {
		return fakecri.ContainerScript{}, false
	}
	run := int(c.GetMetadata().GetAttempt())
	if s.Runs == RunsPerController {
		if owner := n.controllerOf(sb.GetMetadata().GetUid()); owner != "" {
			run = n.f.runs.next(owner + "/" + name)
		}
	}
	out := fakecri.ContainerScript{TermDelay: time.Duration(cs.TerminationDelay), TermExitCode: cs.TerminationExitCode}
	if cs.exits() {
		out.Exit, out.ExitCode, out.RunFor = true, cs.exitCode(run), time.Duration(cs.RunFor)
	}
	return out, true
}

// controllerOf returns the UID of the controller of the pod with this UID,
// "" when it has none or is not known.
func (n *Node) controllerOf(uid string) string {
	pod, ok := n.pod(uid)
	if !ok {
		return ""
	}
	if ref := metav1.GetControllerOf(pod); ref != nil {
		return string(ref.UID)
	}
	return ""
}

// pullScript is the runtime's PullScript: the delay and failures of the
// pulls of a container's image for its pod.
func (n *Node) pullScript(image string, sb *runtimeapi.PodSandboxConfig) (time.Duration, error) {
	s := n.f.scriptOf(sb.GetAnnotations())
	if s == nil {
		return 0, nil
	}
	uid := sb.GetMetadata().GetUid()
	pod, ok := n.pod(uid)
	if !ok {
		return 0, nil
	}
	var cs ContainerScript
	found := false
	for _, c := range allContainers(pod) {
		if c.Image == image {
			if cs, found = s.container(c.Name); found {
				break
			}
		}
	}
	if !found {
		return 0, nil
	}
	delay := time.Duration(cs.PullDelay)
	if cs.PullFailures == 0 {
		return delay, nil
	}
	n.pullMu.Lock()
	key := uid + "/" + image
	pull := n.pulls[key]
	n.pulls[key] = pull + 1
	if len(n.pulls) >= n.pruneAt {
		n.prunePullsLocked()
	}
	n.pullMu.Unlock()
	if cs.PullFailures < 0 || pull < cs.PullFailures {
		return delay, status.Errorf(codes.Unknown, "failed to pull image %q: scripted failure %d of %s (%s)",
			image, pull+1, failures(cs.PullFailures), ScriptAnnotation)
	}
	return delay, nil
}

func failures(n int) string {
	if n < 0 {
		return "every pull"
	}
	return fmt.Sprint(n)
}

// prunePullsLocked forgets the pull counts of pods the agent no longer
// has, and sets the size of the next pruning. pullMu is held.
func (n *Node) prunePullsLocked() {
	for key := range n.pulls {
		uid, _, _ := strings.Cut(key, "/")
		if _, ok := n.pod(uid); !ok {
			delete(n.pulls, key)
		}
	}
	n.pruneAt = max(1024, 2*len(n.pulls))
}

// allContainers are the pod's init and regular containers.
func allContainers(pod *v1.Pod) []v1.Container {
	return append(append([]v1.Container(nil), pod.Spec.InitContainers...), pod.Spec.Containers...)
}

// probe is the agent's Probe: the result the pod's script gives the
// container's probe of this kind at this point of the container's run.
func (n *Node) probe(req prober.Request) (prober.Result, string) {
	pod, ok := n.pod(string(req.PodUID))
	if !ok {
		return prober.Unknown, "the pod is not known"
	}
	cs, _ := n.f.scriptOf(pod.Annotations).container(req.Container.Name)
	var steps []ProbeStep
	switch req.Type {
	case prober.Startup:
		steps = cs.Startup
	case prober.Liveness:
		steps = cs.Liveness
	case prober.Readiness:
		steps = cs.Readiness
	}
	elapsed := time.Duration(0)
	if !req.StartedAt.IsZero() {
		elapsed = n.f.opts.Clock.Since(req.StartedAt)
	}
	if probeResult(steps, elapsed) == ProbeFailure {
		return prober.Failure, fmt.Sprintf("scripted %s failure at %v (%s)", req.Type, elapsed.Round(time.Second), ScriptAnnotation)
	}
	return prober.Success, ""
}
