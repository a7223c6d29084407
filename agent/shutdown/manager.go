package shutdown

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ErrShuttingDown is the error of ShutdownStatus while the node shuts
// down; its text is the Node's not-ready message.
var ErrShuttingDown = errors.New(MessageNodeShuttingDown)

// Manager shuts a node down gracefully, as the kubelet's node shutdown
// manager: asked by Shutdown, it refuses new pods (AdmitPod), marks the
// Node not ready (ConfigureNode, Options.SyncNode) and stops the active
// pods group by group, lowest priority first, each group within its grace
// period. Create it with New; Run keeps the metrics of the last shutdown.
type Manager struct {
	opts    Options
	log     logr.Logger
	groups  []PriorityGracePeriod
	metrics *metrics
	started atomic.Bool

	mu sync.Mutex
	// shuttingDown: Shutdown was called (it is never undone: the node
	// goes down).
	shuttingDown bool
	// done is closed when the shutdown has ended, with result set.
	done   chan struct{}
	result Result
}

// Result sums up a shutdown.
type Result struct {
	// Start and End are when the shutdown began and ended (Options.Clock).
	Start, End time.Time
	// Pods is the number of active pods it stopped; Stopped of them
	// stopped within their group's grace period, the others (Failed) did
	// not, or KillPod failed for them.
	Pods, Stopped, Failed int
	// TimedOut are the priorities of the groups whose grace period ran out
	// before all their pods stopped.
	TimedOut []int32
}

// New validates opts and returns a Manager. It starts no goroutine and
// touches no file.
func New(opts Options) (*Manager, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	m := &Manager{opts: opts, log: opts.Logger, groups: groups(opts)}
	var err error
	if m.metrics, err = newMetrics(opts.Registerer, opts.MetricsNamespace); err != nil {
		return nil, err
	}
	m.log.Info("Creating node shutdown manager", "shutdownGracePeriodRequested", opts.ShutdownGracePeriod,
		"shutdownGracePeriodCriticalPods", opts.ShutdownGracePeriodCriticalPods, "shutdownGracePeriodByPodPriority", m.groups)
	return m, nil
}

// Groups returns the priority groups, lowest priority first.
func (m *Manager) Groups() []PriorityGracePeriod {
	return append([]PriorityGracePeriod(nil), m.groups...)
}

// Budget is the time a shutdown may take: the sum of the groups' grace
// periods (what the kubelet asks logind to wait for).
func (m *Manager) Budget() time.Duration { return budget(m.groups) }

// Run shows the times of the last shutdown, read from Options.StateFile,
// in the metrics, then waits until ctx is done and returns nil. It may be
// called once. A shutdown does not need Run.
func (m *Manager) Run(ctx context.Context) error {
	if !m.started.CompareAndSwap(false, true) {
		return errors.New("shutdown: Run called twice")
	}
	if m.opts.StateFile != "" {
		s, err := loadState(m.opts.StateFile)
		if err != nil {
			m.log.Error(err, "Failed to load graceful shutdown state")
		} else {
			m.mu.Lock()
			if !m.shuttingDown {
				m.metrics.set(s.StartTime, s.EndTime)
			}
			m.mu.Unlock()
		}
	}
	<-ctx.Done()
	return nil
}

// ShuttingDown reports whether Shutdown was called.
func (m *Manager) ShuttingDown() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.shuttingDown
}

// ShutdownStatus returns ErrShuttingDown once Shutdown was called, nil
// before (the kubelet's ShutdownStatus).
func (m *Manager) ShutdownStatus() error {
	if m.ShuttingDown() {
		return ErrShuttingDown
	}
	return nil
}

// AdmitPod tells whether a new pod may start: not once the node shuts
// down, with the kubelet's reason and message (ReasonNotAdmitted,
// MessageNotAdmitted).
func (m *Manager) AdmitPod(*v1.Pod) (admit bool, reason, message string) {
	if m.ShuttingDown() {
		return false, ReasonNotAdmitted, MessageNotAdmitted
	}
	return true, "", ""
}

// ConfigureNode turns the Node's Ready condition False once the node shuts
// down (reason KubeletNotReady, message "node is shutting down", after the
// other causes when it was not ready already), as the kubelet's Ready
// setter. It implements agent/node's Provider.
func (m *Manager) ConfigureNode(_ context.Context, status *v1.NodeStatus) error {
	if !m.ShuttingDown() {
		return nil
	}
	for i := range status.Conditions {
		c := &status.Conditions[i]
		if c.Type != v1.NodeReady {
			continue
		}
		msg := MessageNodeShuttingDown
		if c.Status == v1.ConditionFalse && c.Message != "" && c.Message != MessageNodeShuttingDown {
			// The kubelet joins its not-ready causes as an aggregate error.
			msg = "[" + c.Message + ", " + MessageNodeShuttingDown + "]"
		}
		c.Status, c.Reason, c.Message = v1.ConditionFalse, "KubeletNotReady", msg
		return nil
	}
	status.Conditions = append(status.Conditions, v1.NodeCondition{Type: v1.NodeReady, Status: v1.ConditionFalse,
		Reason: "KubeletNotReady", Message: MessageNodeShuttingDown})
	return nil
}

// Shutdown shuts the node down: from now on new pods are refused and the
// Node is not ready (Options.SyncNode writes it at once); the active pods
// are stopped group by group, lowest priority first, each pod with the
// grace period of its group (or its own terminationGracePeriodSeconds when
// shorter), each group waited for at most its grace period. A stopped
// pod's status is Failed (unless it Succeeded), reason Terminated, with a
// DisruptionTarget condition. It returns when every group is done, after
// SyncNode returned; a second call waits for the first one's end and
// returns its result. When ctx ends first, the pods under way are no
// longer waited for, and ctx's error is returned.
func (m *Manager) Shutdown(ctx context.Context) (Result, error) {
	m.mu.Lock()
	if m.shuttingDown {
		done := m.done
		m.mu.Unlock()
		select {
		case <-done:
			m.mu.Lock()
			defer m.mu.Unlock()
			return m.result, nil
		case <-ctx.Done():
			return Result{}, ctx.Err()
		}
	}
	m.shuttingDown = true
	m.done = make(chan struct{})
	m.mu.Unlock()

	res := Result{Start: m.opts.Clock.Now()}
	m.log.Info("Shutdown manager detected new shutdown event", "budget", m.Budget())
	if m.opts.Recorder != nil && m.opts.NodeRef != nil {
		m.opts.Recorder.Event(m.opts.NodeRef, v1.EventTypeNormal, ReasonNodeShutdown, "Shutdown manager detected shutdown event")
	}
	m.metrics.set(res.Start, time.Time{})
	m.store(state{StartTime: res.Start})

	var node sync.WaitGroup
	if m.opts.SyncNode != nil {
		node.Add(1)
		go func() {
			defer node.Done()
			if err := m.opts.SyncNode(ctx); err != nil && ctx.Err() == nil {
				m.log.Error(err, "Node status not written at shutdown")
			}
		}()
	}

	err := m.stopPods(ctx, &res)
	node.Wait()

	res.End = m.opts.Clock.Now()
	m.metrics.set(res.Start, res.End)
	m.store(state{StartTime: res.Start, EndTime: res.End})
	m.log.Info("Shutdown manager completed processing shutdown event, node will shutdown shortly",
		"pods", res.Pods, "stopped", res.Stopped, "failed", res.Failed, "duration", res.End.Sub(res.Start))
	m.mu.Lock()
	m.result = res
	close(m.done)
	m.mu.Unlock()
	return res, err
}

// stopPods stops the active pods group by group.
func (m *Manager) stopPods(ctx context.Context, res *Result) error {
	for _, g := range groupPods(m.groups, m.opts.ActivePods()) {
		// As the kubelet: a group without pods is not waited for.
		if len(g.pods) == 0 {
			continue
		}
		res.Pods += len(g.pods)
		stopped, timedOut := m.stopGroup(ctx, g)
		res.Stopped += stopped
		res.Failed += len(g.pods) - stopped
		if timedOut {
			res.TimedOut = append(res.TimedOut, g.Priority)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}

// stopGroup kills the pods of g at once and waits until they have all
// stopped, the group's grace period has passed, or ctx is done; then it
// cancels the kills still under way and waits for them to return. It
// returns how many pods stopped and whether the grace period ran out.
func (m *Manager) stopGroup(ctx context.Context, g group) (stopped int, timedOut bool) {
	gctx, cancel := context.WithCancel(ctx)
	defer cancel()
	now := metav1.NewTime(m.opts.Clock.Now())
	var wg sync.WaitGroup
	var ok atomic.Int64
	for _, pod := range g.pods {
		gp := gracePeriod(g.PriorityGracePeriod, pod)
		m.log.V(1).Info("Shutdown manager killing pod with gracePeriod", "pod", klogRef(pod), "gracePeriod", gp)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := m.opts.KillPod(gctx, pod, gp, terminatedStatus(pod, now)); err != nil {
				m.log.V(1).Info("Shutdown manager failed killing pod", "pod", klogRef(pod), "err", err.Error())
				return
			}
			ok.Add(1)
			m.log.V(1).Info("Shutdown manager finished killing pod", "pod", klogRef(pod))
		}()
	}
	all := make(chan struct{})
	go func() {
		wg.Wait()
		close(all)
	}()
	timer := m.opts.Clock.NewTimer(time.Duration(g.ShutdownGracePeriodSeconds) * time.Second)
	defer timer.Stop()
	select {
	case <-all:
		m.log.V(1).Info("Done waiting for all pods in group to terminate", "gracePeriod", g.ShutdownGracePeriodSeconds, "priority", g.Priority)
	case <-timer.C():
		timedOut = true
		m.log.V(1).Info("Shutdown manager pod killing time out", "gracePeriod", g.ShutdownGracePeriodSeconds, "priority", g.Priority)
	case <-ctx.Done():
	}
	cancel()
	<-all
	return int(ok.Load()), timedOut
}

// terminatedStatus edits the status of a pod stopped for the shutdown, as
// the kubelet's: Failed unless it Succeeded, reason Terminated, and a
// DisruptionTarget condition (TerminationByKubelet).
func terminatedStatus(pod *v1.Pod, now metav1.Time) func(*v1.PodStatus) {
	return func(st *v1.PodStatus) {
		if st.Phase != v1.PodSucceeded {
			st.Phase = v1.PodFailed
		}
		st.Reason, st.Message = ReasonTerminated, MessageTerminated
		cond := v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, ObservedGeneration: pod.Generation,
			Reason: v1.PodReasonTerminationByKubelet, Message: MessageTerminated, LastTransitionTime: now}
		for i := range st.Conditions {
			if c := &st.Conditions[i]; c.Type == v1.DisruptionTarget {
				if c.Status == cond.Status {
					cond.LastTransitionTime = c.LastTransitionTime
				}
				*c = cond
				return
			}
		}
		st.Conditions = append(st.Conditions, cond)
	}
}

// store writes the state file, when there is one; a failure is logged.
func (m *Manager) store(s state) {
	if m.opts.StateFile == "" {
		return
	}
	if err := storeState(m.opts.StateFile, s); err != nil {
		m.log.Error(err, "Failed to store graceful shutdown state")
	}
}

func klogRef(pod *v1.Pod) string {
	if pod.Namespace == "" {
		return pod.Name
	}
	return fmt.Sprintf("%s/%s", pod.Namespace, pod.Name)
}
