package status

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// ErrAlreadyRunning is returned by Run when the Manager already runs.
var ErrAlreadyRunning = errors.New("status: manager already running")

// Manager records the newest status of every pod and writes it to the API
// server in the background; see the package documentation. Its methods are
// safe for concurrent use. The zero value is not usable; call New.
type Manager struct {
	opts    Options
	metrics *managerMetrics
	// reconciles counts the full reconciles done (Reconciles).
	reconciles atomic.Uint64
	// wake has room for one signal: the dispatcher looks at the queue again.
	wake chan struct{}

	mu      sync.Mutex
	running bool
	version uint64
	pods    map[types.UID]*entry
	// queue holds the pods ready to be written, each at most once
	// (entry.queued); backoff the pods waiting for a retry (entry.retryAt);
	// held the pods whose transient status waits (entry.holdUntil).
	queue   []types.UID
	backoff map[types.UID]*entry
	held    map[types.UID]*entry
}

// entry is what the Manager knows of one pod, under Manager.mu.
type entry struct {
	// Recorded by SetPodStatus and PodFinished.
	pod, mirror *v1.Pod
	status      v1.PodStatus
	version     uint64
	finished    bool

	// The write side.
	writtenVersion uint64        // version last written (or found in the API)
	written        *v1.PodStatus // the status as last written, merged
	lastResponse   *v1.Pod       // the object the last PATCH returned
	deleted        bool          // deleted from the API server by us
	gone           bool          // the API object is gone: nothing more to write
	goneMirrorUID  types.UID     // static pods: a mirror pod found gone
	queued         bool
	inFlight       bool
	failures       int
	retryAt        time.Time // non-zero while backing off
	holdUntil      time.Time // non-zero while a transient status is held
}

// New returns a Manager. It starts nothing; call Run.
func New(opts Options) (*Manager, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	m := &Manager{
		opts:    opts,
		wake:    make(chan struct{}, 1),
		pods:    map[types.UID]*entry{},
		backoff: map[types.UID]*entry{},
		held:    map[types.UID]*entry{},
	}
	if opts.Registerer != nil {
		mm, err := newManagerMetrics(opts.Registerer, opts.MetricsNamespace, m.queueLength)
		if err != nil {
			return nil, err
		}
		m.metrics = mm
	}
	return m, nil
}

// SetPodStatus records status as the newest status of pod (for a static
// pod, mirrorPod is its mirror pod or nil) and returns at once: the write
// happens in the background. It never fails; the error is there for the
// agent's StatusReporter interface.
func (m *Manager) SetPodStatus(_ context.Context, pod, mirrorPod *v1.Pod, status v1.PodStatus) error {
	m.record(pod, mirrorPod, status, false)
	return nil
}

// PodFinished records the final status of a pod whose containers have all
// stopped and been removed, and returns at once. Once that status is in the
// API server, a pod being deleted (deletion timestamp set, in pod or in the
// pod as last seen) is deleted from it with grace period 0 and a UID
// precondition. It may be called again, with the updated pod, when the
// deletion comes after the pod finished. It never fails.
func (m *Manager) PodFinished(_ context.Context, pod, mirrorPod *v1.Pod, status v1.PodStatus) error {
	m.record(pod, mirrorPod, status, true)
	return nil
}

func (m *Manager) record(pod, mirrorPod *v1.Pod, status v1.PodStatus, finished bool) {
	if pod == nil {
		return
	}
	status = *status.DeepCopy()
	// Asked before locking: the pod workers' lock is never taken under
	// ours.
	could := m.opts.HoldTransient > 0 && !finished && isTerminalPhase(status.Phase) &&
		m.opts.PodStates.CouldHaveRunningContainers(pod.UID)
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.pods[pod.UID]
	if !ok {
		e = &entry{}
		m.pods[pod.UID] = e
	}
	m.version++
	e.pod, e.mirror, e.status, e.version = pod, mirrorPod, status, m.version
	e.finished = e.finished || finished
	transient := m.opts.HoldTransient > 0 && !e.finished &&
		(could || (e.written == nil && e.lastResponse == nil && notStarted(&status)))
	switch {
	case transient && e.holdUntil.IsZero():
		e.holdUntil = m.opts.Clock.Now().Add(m.opts.HoldTransient)
		m.held[pod.UID] = e
		m.signal() // the dispatcher's next wake-up may be sooner now
	case transient:
		// Still held: the hold is counted from the first transient status.
	default:
		if !e.holdUntil.IsZero() {
			e.holdUntil = time.Time{}
			delete(m.held, pod.UID)
		}
		m.enqueueLocked(pod.UID, e)
	}
}

// notStarted reports whether st says nothing of the pod has run yet: phase
// Pending and no container, init or regular, running or terminated, now or
// before.
func notStarted(st *v1.PodStatus) bool {
	if st.Phase != v1.PodPending {
		return false
	}
	for _, list := range [][]v1.ContainerStatus{st.InitContainerStatuses, st.ContainerStatuses} {
		for i := range list {
			c := &list[i]
			if c.State.Running != nil || c.State.Terminated != nil || c.LastTerminationState.Terminated != nil || c.RestartCount > 0 {
				return false
			}
		}
	}
	return true
}

// enqueueLocked queues the pod for a write unless it is queued, being
// written (it is queued again when that write ends), backing off (the retry
// writes the newest status), held (the hold's end queues it) or gone.
func (m *Manager) enqueueLocked(uid types.UID, e *entry) {
	if e.gone || e.queued || e.inFlight || !e.retryAt.IsZero() || !e.holdUntil.IsZero() {
		return
	}
	e.queued = true
	m.queue = append(m.queue, uid)
	m.signal()
}

func (m *Manager) signal() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// GetPodStatus returns the newest status recorded for the pod and whether
// there is one.
func (m *Manager) GetPodStatus(uid types.UID) (v1.PodStatus, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.pods[uid]
	if !ok {
		return v1.PodStatus{}, false
	}
	return *e.status.DeepCopy(), true
}

// Forget drops everything the Manager knows of the pod; a write in flight
// for it is not retried.
func (m *Manager) Forget(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.forgetLocked(uid)
}

func (m *Manager) forgetLocked(uid types.UID) {
	delete(m.pods, uid)
	delete(m.backoff, uid)
	delete(m.held, uid)
	// The queue skips UIDs it no longer knows.
}

// RemoveOrphanStatuses forgets every pod whose UID is not in keep (the
// agent's housekeeping passes the UIDs of the pods it still has) and
// returns how many it forgot.
func (m *Manager) RemoveOrphanStatuses(keep map[types.UID]bool) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for uid := range m.pods {
		if !keep[uid] {
			m.forgetLocked(uid)
			n++
		}
	}
	return n
}

// Pending returns the number of pods whose newest status is queued, being
// written, held (Options.HoldTransient) or waiting for a retry. Zero means
// every status recorded has been written, held back by the terminal-phase
// rule, or dropped.
func (m *Manager) Pending() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, e := range m.pods {
		if e.queued || e.inFlight || !e.retryAt.IsZero() || !e.holdUntil.IsZero() {
			n++
		}
	}
	return n
}

// Reconciles returns the number of full reconciles (Options.
// ReconcileInterval) done so far: a caller that saw it grow by two knows
// that every pod was compared with the API server at least once since.
func (m *Manager) Reconciles() uint64 { return m.reconciles.Load() }

// IsGone reports whether the Manager dropped the pod because its API object
// is gone (NotFound, Forbidden, or a new UID under its name).
func (m *Manager) IsGone(uid types.UID) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.pods[uid]
	return ok && e.gone
}

// queueLength is the queue-length gauge: pods waiting to be written.
func (m *Manager) queueLength() float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return float64(len(m.queue) + len(m.backoff) + len(m.held))
}

// Run writes statuses until ctx is done, then waits for every write in
// flight and returns ctx's error.
func (m *Manager) Run(ctx context.Context) error {
	m.mu.Lock()
	if m.running {
		m.mu.Unlock()
		return ErrAlreadyRunning
	}
	m.running = true
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		m.running = false
		m.mu.Unlock()
	}()

	// A goroutine per write, at most Workers at once: an idle manager
	// (most of a fleet's nodes, most of the time) holds none.
	var wg sync.WaitGroup
	slots := make(chan struct{}, m.opts.Workers)
	m.dispatch(ctx, slots, func(uid types.UID) {
		wg.Go(func() {
			defer func() { <-slots }()
			m.syncPod(ctx, uid)
		})
	})
	wg.Wait()
	// Writes that were handed out but not done are written by the next
	// Run.
	m.mu.Lock()
	for uid, e := range m.pods {
		if e.inFlight {
			e.inFlight = false
			m.enqueueLocked(uid, e)
		}
	}
	m.mu.Unlock()
	return fmt.Errorf("status: manager stopped: %w", ctx.Err())
}

// dispatch hands each queued pod to write once it takes a slot (a send on
// slots, which write's goroutine frees), moves pods whose back-off is over
// back to the queue, and runs the full reconcile every ReconcileInterval.
func (m *Manager) dispatch(ctx context.Context, slots chan<- struct{}, write func(types.UID)) {
	ticker := m.opts.Clock.NewTicker(m.opts.ReconcileInterval)
	defer ticker.Stop()
	var (
		held types.UID
		have bool
	)
	for {
		var wait time.Duration
		if !have {
			held, have, wait = m.next()
		}
		var take chan<- struct{}
		if have {
			take = slots
		}
		var timerC <-chan time.Time
		var stop func() bool
		if !have && wait > 0 {
			t := m.opts.Clock.NewTimer(wait)
			timerC, stop = t.C(), t.Stop
		}
		select {
		case <-ctx.Done():
			if stop != nil {
				stop()
			}
			return
		case take <- struct{}{}:
			write(held)
			have = false
		case <-m.wake:
		case <-timerC:
		case <-ticker.C():
			m.reconcile()
		}
		if stop != nil {
			stop()
		}
	}
}

// next moves the pods whose back-off or hold is over to the queue and pops
// the first ready pod, marking it in flight. Without one, wait is how long
// until the next back-off or hold ends (0: none).
func (m *Manager) next() (uid types.UID, ok bool, wait time.Duration) {
	now := m.opts.Clock.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	for id, e := range m.backoff {
		if !e.retryAt.After(now) {
			delete(m.backoff, id)
			e.retryAt = time.Time{}
			m.enqueueLocked(id, e)
		}
	}
	for id, e := range m.held {
		if !e.holdUntil.After(now) {
			delete(m.held, id)
			e.holdUntil = time.Time{}
			m.enqueueLocked(id, e)
		}
	}
	for len(m.queue) > 0 {
		id := m.queue[0]
		m.queue[0] = ""
		m.queue = m.queue[1:]
		e, known := m.pods[id]
		if !known || !e.queued {
			continue // forgotten meanwhile
		}
		e.queued = false
		if e.gone || !e.holdUntil.IsZero() {
			continue // a held pod is queued again when its hold ends
		}
		e.inFlight = true
		return id, true, 0
	}
	if len(m.queue) == 0 {
		m.queue = nil // let the backing array go
	}
	for _, e := range m.backoff {
		if d := e.retryAt.Sub(now); wait == 0 || d < wait {
			wait = d
		}
	}
	for _, e := range m.held {
		if d := e.holdUntil.Sub(now); wait == 0 || d < wait {
			wait = d
		}
	}
	return "", false, wait
}
