package chaos

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/agent"
	"github.com/podlife/podlife/podmanager"
	"github.com/podlife/podlife/podmanager/source"
	"github.com/podlife/podlife/podworker"
	"github.com/podlife/podlife/runtime/cri"
)

// timings of the agent under test, shorter than the defaults so that a soak
// sees many lifecycles; larger runs list the runtime less often.
type timings struct {
	relist, housekeeping, resync, backOff, maxBackOff time.Duration
}

func timingsFor(pods int) timings {
	t := timings{relist: 100 * time.Millisecond, housekeeping: 250 * time.Millisecond,
		resync: 2 * time.Second, backOff: 50 * time.Millisecond, maxBackOff: time.Second}
	if pods > 1000 {
		t.relist, t.housekeeping, t.resync = 500*time.Millisecond, time.Second, 5*time.Second
	}
	return t
}

// newCRI returns a CRI client with the soak's settings: short deadlines and
// reconnects, a short crash-loop back-off, and the pods' files (termination
// messages, logs) beside the socket, in the soak's temporary folder.
func newCRI(endpoint string) (*cri.Runtime, error) {
	return cri.New(cri.Options{
		VolumeRoot:        filepath.Join(filepath.Dir(strings.TrimPrefix(endpoint, "unix://")), "volumes"),
		Endpoint:          endpoint,
		Timeout:           5 * time.Second,
		ReconnectMaxDelay: 100 * time.Millisecond,
		BackOffInitial:    50 * time.Millisecond,
		BackOffMax:        500 * time.Millisecond,
		CgroupParent:      "/podlife-chaos",
	})
}

// agentRun is one incarnation of the agent over the soak's fakecri.
type agentRun struct {
	*agent.Agent
	rt     *cri.Runtime
	reg    *prometheus.Registry
	api    *source.Channel
	rep    *checkReporter
	cancel context.CancelFunc
	done   chan error
}

// startAgent builds and runs an agent over endpoint and the manifest folder
// dir, with the API pods of the channel source pushed by the soak.
func startAgent(endpoint, dir string, tm timings, inv *invariants, mirrors podmanager.MirrorClient, log logr.Logger) (*agentRun, error) {
	rt, err := newCRI(endpoint)
	if err != nil {
		return nil, err
	}
	ar := &agentRun{rt: rt, reg: prometheus.NewRegistry(), done: make(chan error, 1)}
	ar.Agent, err = agent.New(agent.Options{
		Runtime:                rt,
		NodeName:               nodeName,
		ManifestPath:           dir,
		ManifestResyncInterval: 2 * time.Second,
		Sources: []agent.Source{{Name: podmanager.APISource, New: func(sink source.Sink) (agent.Runner, error) {
			ch, err := source.NewChannel(sink, source.ChannelOptions{Source: podmanager.APISource, OnError: inv.sourceError})
			ar.api = ch
			return ch, err
		}}},
		OnSourceError: inv.sourceError,
		MirrorClient:  mirrors,
		AdmitHandlers: []agent.AdmitHandler{agent.AdmitHandlerFunc(func(attrs *agent.AdmitAttributes) agent.AdmitResult {
			if rejected(attrs.Pod) {
				return agent.AdmitResult{Reason: rejectReason, Message: "the chaos soak rejects pods labelled " + rejectLabel}
			}
			return agent.AdmitResult{Admit: true}
		})},
		StatusReporter: func(pods agent.PodStateProvider) (agent.StatusReporter, error) {
			ar.rep = newCheckReporter(pods, inv)
			return ar.rep, nil
		},
		Registerer:           ar.reg,
		Logger:               log,
		HousekeepingInterval: tm.housekeeping,
		RelistInterval:       tm.relist,
		ResyncInterval:       tm.resync,
		BackOffPeriod:        tm.backOff,
		MaxBackOffPeriod:     tm.maxBackOff,
	})
	if err != nil {
		_ = rt.Close()
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	ar.cancel = cancel
	go func() { ar.done <- ar.Run(ctx) }()
	return ar, nil
}

// push hands the API pods to the agent's channel source.
func (ar *agentRun) push(pods []*v1.Pod) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := ar.api.Push(ctx, pods); err != nil {
		return fmt.Errorf("push %d API pods: %w", len(pods), err)
	}
	return nil
}

// stop ends Run, waits for it (bounded) and closes the CRI client.
func (ar *agentRun) stop() error {
	ar.cancel()
	defer ar.rt.Close()
	select {
	case err := <-ar.done:
		if err != nil {
			return fmt.Errorf("agent Run: %w", err)
		}
		return nil
	case <-time.After(30 * time.Second):
		return errors.New("agent Run did not return within 30s of its context ending")
	}
}

// invariants collects what the continuous checks find, across agent
// incarnations, and what the "API server" needs to know (finished pods).
type invariants struct {
	checker *cri.Runtime // a CRI client of its own, to look at the runtime
	tr      *trace

	checked, unchecked atomic.Int64

	mu         sync.Mutex
	violations []string
	finished   map[types.UID]finish // PodFinished seen, for the API server
	srcErrors  []string
}

func newInvariants(checker *cri.Runtime, tr *trace) *invariants {
	return &invariants{checker: checker, tr: tr, finished: map[types.UID]finish{}}
}

// finish is a PodFinished call: the phase, and the incarnation of the pod
// (its incarnationKey annotation).
type finish struct {
	phase       v1.PodPhase
	incarnation string
}

func (inv *invariants) violation(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	inv.tr.add("VIOLATION", "%s", msg)
	inv.mu.Lock()
	defer inv.mu.Unlock()
	inv.violations = append(inv.violations, msg)
}

func (inv *invariants) sourceError(err error) {
	inv.tr.add("source-error", "%v", err)
	inv.mu.Lock()
	defer inv.mu.Unlock()
	inv.srcErrors = append(inv.srcErrors, err.Error())
}

// takeFinished returns and forgets the pods seen finished, with the phase
// they finished in.
func (inv *invariants) takeFinished() map[types.UID]finish {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	f := inv.finished
	inv.finished = map[types.UID]finish{}
	return f
}

func (inv *invariants) problems() []string {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	out := append([]string(nil), inv.violations...)
	for _, e := range inv.srcErrors {
		out = append(out, "source rejected input: "+e)
	}
	return out
}

// checkReporter is the agent's StatusReporter (Options.StatusReporter). It
// keeps the reporter rule itself (agent.MergeStatus), and each time it is
// about to publish a terminal phase, or a pod finishes, it looks at the
// runtime: that is the continuous check that no terminal phase is reported
// while a container of the pod runs. It runs on the pod's worker goroutine,
// so the pod cannot start a container meanwhile.
type checkReporter struct {
	pods agent.PodStateProvider
	inv  *invariants

	// beforeFinished, when set before the agent runs, is called at the
	// start of each PodFinished (regression tests hold a pod there).
	beforeFinished func(pod *v1.Pod)

	mu sync.Mutex
	// statuses keep only what MergeStatus reads of the previous status.
	statuses map[types.UID]v1.PodStatus
	// deleted holds the pods seen deleted (or orphaned) by the pod workers
	// while they had not terminated yet, with the SyncedAt of the worker
	// that saw it (a UID created again gets a new worker).
	deleted map[types.UID]time.Time
}

func newCheckReporter(pods agent.PodStateProvider, inv *invariants) *checkReporter {
	return &checkReporter{pods: pods, inv: inv, statuses: map[types.UID]v1.PodStatus{}, deleted: map[types.UID]time.Time{}}
}

// forget drops the statuses of pods for which keep is false.
func (r *checkReporter) forget(keep func(types.UID) bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for uid := range r.statuses {
		if !keep(uid) {
			delete(r.statuses, uid)
		}
	}
	for uid := range r.deleted {
		if !keep(uid) {
			delete(r.deleted, uid)
		}
	}
}

// podInfo returns what the pod workers know of the pod.
func (r *checkReporter) podInfo(uid types.UID) (podworker.PodInfo, bool) {
	w, ok := r.pods.(interface {
		PodInfo(types.UID) (podworker.PodInfo, bool)
	})
	if !ok {
		return podworker.PodInfo{}, false
	}
	return w.PodInfo(uid)
}

// noteDeleted remembers that the pod workers took the pod for deleted while
// it had not terminated yet: its SyncTerminatedPod, later, finds it content
// removable (deleted and terminated), whatever arrives meanwhile.
func (r *checkReporter) noteDeleted(uid types.UID) {
	info, ok := r.podInfo(uid)
	if !ok || !info.Deleted || info.Lifecycle >= podworker.LifecycleTerminated {
		return
	}
	r.mu.Lock()
	r.deleted[uid] = info.SyncedAt
	r.mu.Unlock()
}

func (r *checkReporter) SetPodStatus(ctx context.Context, pod, _ *v1.Pod, status v1.PodStatus) error {
	r.noteDeleted(pod.UID)
	r.publish(ctx, pod, status, false)
	return nil
}

func (r *checkReporter) PodFinished(ctx context.Context, pod, _ *v1.Pod, status v1.PodStatus) error {
	if r.beforeFinished != nil {
		r.beforeFinished(pod)
	}
	phase := r.publish(ctx, pod, status, true)
	r.inv.mu.Lock()
	r.inv.finished[pod.UID] = finish{phase: phase, incarnation: pod.Annotations[incarnationKey]}
	r.inv.mu.Unlock()
	return nil
}

// contentRemovable reports whether the pod's runtime remains must be gone
// once it finished: it is being deleted or was evicted (the pod workers'
// ShouldPodContentBeRemoved), as the agent saw it when its
// SyncTerminatedPod decided whether to remove them, before PodFinished. So
// the pod workers are not asked now: a deletion may have come since (a
// force delete orphans the pod in SyncKnownPods, a graceful one reaches the
// workers while the pod's final status is published), and then the remains
// are rightly still there; housekeeping removes them later, as the
// kubelet's container GC does, and the final checks see that they go.
// What the agent saw for certain: the deletion timestamp of the pod it
// passes, an eviction (only ever recorded while the pod terminates), and a
// deletion the workers had recorded before the pod terminated (noteDeleted).
func (r *checkReporter) contentRemovable(pod *v1.Pod) bool {
	if pod.DeletionTimestamp != nil {
		return true
	}
	info, ok := r.podInfo(pod.UID)
	if !ok {
		return false
	}
	if info.Evicted {
		return true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	at, ok := r.deleted[pod.UID]
	return ok && at.Equal(info.SyncedAt)
}

// publish records and checks a status; it returns the phase published.
func (r *checkReporter) publish(ctx context.Context, pod *v1.Pod, status v1.PodStatus, finished bool) v1.PodPhase {
	could := r.pods.CouldHaveRunningContainers(pod.UID)
	r.mu.Lock()
	var old *v1.PodStatus
	if prev, ok := r.statuses[pod.UID]; ok {
		old = &prev
	}
	merged := agent.MergeStatus(old, status, could)
	r.statuses[pod.UID] = v1.PodStatus{Phase: merged.Phase, Reason: merged.Reason, Message: merged.Message}
	r.mu.Unlock()
	terminal := merged.Phase == v1.PodSucceeded || merged.Phase == v1.PodFailed
	if finished && !terminal {
		r.inv.violation("pod %s/%s (%s) finished with phase %q, not a terminal one", pod.Namespace, pod.Name, pod.UID, merged.Phase)
	}
	if !terminal {
		return merged.Phase
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	st, err := r.inv.checker.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		r.inv.unchecked.Add(1) // the runtime is faulty right now
		return merged.Phase
	}
	r.inv.checked.Add(1)
	if st.HasRunningContainers() || st.HasReadySandbox() {
		r.inv.violation("pod %s/%s (%s) reported %s while the runtime runs it: %s", pod.Namespace, pod.Name, pod.UID, merged.Phase, st)
	}
	// A finished pod that is being deleted or was evicted has nothing left;
	// one that ran to completion and is still desired keeps its dead
	// containers (for its logs and exit codes), as on a kubelet.
	if finished && r.contentRemovable(pod) && (len(st.ContainerStatuses) > 0 || len(st.SandboxStatuses) > 0) {
		r.inv.violation("pod %s/%s (%s) reported finished while the runtime still holds %d containers and %d sandboxes",
			pod.Namespace, pod.Name, pod.UID, len(st.ContainerStatuses), len(st.SandboxStatuses))
	}
	return merged.Phase
}
