package prober

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Manager runs the probes of the pods it is told about. It is safe for
// concurrent use.
type Manager struct {
	opts    Options
	log     logr.Logger
	metrics *metrics
	http    *http.Client

	mu       sync.Mutex
	pods     map[types.UID]*podState
	runCtx   context.Context // Run's context; nil before Run and after it returned
	runStart time.Time
	ran      bool           // Run was called
	wg       sync.WaitGroup // worker goroutines; Add only under mu while runCtx != nil
}

// podState is what the manager knows of one pod. Guarded by Manager.mu.
type podState struct {
	uid             types.UID
	name, namespace string
	ip              string
	containers      map[string]*containerState
	workers         []*worker
}

// containerState is one container of a pod (regular or sidecar) and its
// current instance. Guarded by Manager.mu.
type containerState struct {
	spec      *v1.Container
	id        string // "" while not running
	startedAt time.Time
	// started: the startup probe passed for this instance, or there is none
	// and the instance runs.
	started bool
	probes  [3]*worker // by ProbeType; nil where the container has no such probe
}

// New returns a Manager. It starts nothing: probes run once Run is called.
func New(opts Options) (*Manager, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	met, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, err
	}
	return &Manager{
		opts:    opts,
		log:     opts.Logger.WithName("prober"),
		metrics: met,
		http:    &http.Client{Transport: opts.HTTPTransport, CheckRedirect: sameHostRedirects},
		pods:    make(map[types.UID]*podState),
	}, nil
}

// Run runs the probes until ctx is done, then stops every probe and returns
// once all have ended. It may be called once.
func (m *Manager) Run(ctx context.Context) error {
	m.mu.Lock()
	if m.ran {
		m.mu.Unlock()
		return fmt.Errorf("prober: Run called twice")
	}
	m.ran = true
	m.runCtx = ctx
	m.runStart = m.opts.Clock.Now()
	for _, p := range m.pods {
		for _, w := range p.workers {
			m.startLocked(w)
		}
	}
	m.mu.Unlock()

	<-ctx.Done()
	m.mu.Lock()
	m.runCtx = nil
	m.mu.Unlock()
	m.wg.Wait()
	return nil
}

// SetContainers tells the manager about a pod and its running containers:
// call it after each sync of the pod, before UpdatePodStatus. The first call
// for a pod UID creates its probes (from pod.Spec; later calls do not read
// the spec again). running maps a container name to its running instance;
// a container absent from it is not running (its probes pause, it is
// neither started nor ready). A new instance (a new ID) starts its probes
// over, as the kubelet does when a container restarts; that reset (a new
// instance is not ready, not started) is not an Update: the caller, who is
// syncing the pod, sees it in UpdatePodStatus. podIP is the host of
// httpGet, tcpSocket and grpc probes that name none: the pod's IP, or the
// node's for a pod on the host network.
func (m *Manager) SetContainers(pod *v1.Pod, podIP string, running map[string]RunningContainer) {
	now := m.opts.Clock.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.pods[pod.UID]
	if !ok {
		p = m.newPodLocked(pod)
		m.pods[pod.UID] = p
		for _, w := range p.workers {
			m.startLocked(w)
		}
	}
	p.ip = podIP
	for name, c := range p.containers {
		rc := running[name]
		if rc.ID == c.id {
			continue
		}
		c.id = rc.ID
		c.startedAt = rc.StartedAt
		if c.startedAt.IsZero() {
			c.startedAt = now
		}
		c.started = c.id != "" && c.probes[Startup] == nil
		for _, w := range c.probes {
			if w != nil {
				w.resetLocked(now)
			}
		}
	}
}

// newPodLocked builds the state of a pod.
func (m *Manager) newPodLocked(pod *v1.Pod) *podState {
	p := &podState{uid: pod.UID, name: pod.Name, namespace: pod.Namespace, containers: make(map[string]*containerState)}
	add := func(c *v1.Container) {
		cs := &containerState{spec: c}
		for t, pr := range [3]*v1.Probe{Startup: c.StartupProbe, Liveness: c.LivenessProbe, Readiness: c.ReadinessProbe} {
			if pr == nil {
				continue
			}
			w := newWorker(m, p, cs, ProbeType(t), pr)
			cs.probes[t] = w
			p.workers = append(p.workers, w)
		}
		p.containers[c.Name] = cs
	}
	pod = pod.DeepCopy()
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			add(c) // a sidecar: probed like a regular container
		}
	}
	for i := range pod.Spec.Containers {
		add(&pod.Spec.Containers[i])
	}
	return p
}

// startLocked starts w's goroutine if Run is running and w has none yet.
func (m *Manager) startLocked(w *worker) {
	if m.runCtx == nil || w.goroutine || w.stopped {
		return
	}
	w.goroutine = true
	ctx, cancel := context.WithCancel(m.runCtx)
	w.cancel = cancel
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		defer cancel()
		w.run(ctx)
	}()
}

// StopLivenessAndStartup stops the liveness and startup probes of a pod,
// as the kubelet does once a pod is terminating: readiness probes go on
// until RemovePod.
func (m *Manager) StopLivenessAndStartup(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.pods[uid]
	if p == nil {
		return
	}
	for _, c := range p.containers {
		for _, t := range []ProbeType{Startup, Liveness} {
			if w := c.probes[t]; w != nil {
				w.stopLocked()
			}
		}
	}
}

// RemovePod stops every probe of a pod and forgets it: call it when the pod
// has terminated. It does not wait for a probe in flight to return (its
// outcome is dropped).
func (m *Manager) RemovePod(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.pods[uid]
	if p == nil {
		return
	}
	delete(m.pods, uid)
	for _, w := range p.workers {
		w.stopLocked()
	}
	m.metrics.forget(p.uid, p.name, p.namespace)
}

// containerLocked returns the state of a container, or nil.
func (m *Manager) containerLocked(uid types.UID, name string) *containerState {
	if p := m.pods[uid]; p != nil {
		return p.containers[name]
	}
	return nil
}
