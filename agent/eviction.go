package agent

import (
	"context"
	"errors"
	"sync"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/agent/eviction"
	"github.com/podlife/podlife/agent/gc"
	"github.com/podlife/podlife/agent/imagegc"
	"github.com/podlife/podlife/podworker"
)

// evictionParts are what Options.Eviction adds: the eviction manager and
// the evictions it asked for, kept in every later status of their pods.
type evictionParts struct {
	mgr *eviction.Manager // nil without Options.Eviction

	mu      sync.Mutex
	evicted map[types.UID]eviction.Eviction
}

// newEviction builds the eviction manager (agent/eviction) of
// Options.Eviction: the agent's active pods, evicted through their pod
// workers; the machine's signals on the file system of the runtime's
// volume root, and for the image file system on the one where the
// runtime's ImageFsInfo says its images are; the runtime's pod stats with
// the disk usage of the pods' emptyDirs and logs; the agent's clock,
// logger, recorder and registerer unless set. Its admission comes first
// among the AdmitHandlers, and with Cluster it gives the Node its pressure
// conditions.
func (a *Agent) newEviction() error {
	if a.opts.Eviction == nil {
		return nil
	}
	o := *a.opts.Eviction
	root, _ := a.rt.(interface{ VolumeRoot() string })
	if o.NodeStats == nil {
		m := &eviction.Machine{Clock: a.clock}
		if root != nil {
			m.RootDir = root.VolumeRoot()
		}
		// The image file system is where the runtime says its images are
		// (CRI ImageFsInfo), as the kubelet's; the node's otherwise.
		if fi, ok := a.rt.(imagegc.FsInfoRuntime); ok {
			m.ImageFsMountpoint = func(ctx context.Context) (string, error) {
				u, err := fi.ImageFsInfo(ctx)
				return u.Mountpoint, err
			}
		}
		o.NodeStats = m
	}
	if o.PodStats == nil {
		ps, ok := a.rt.(eviction.PodStatsProvider)
		if !ok {
			return errors.New("Eviction.PodStats is required: the runtime gives no pod stats")
		}
		if root != nil {
			ps = &eviction.LocalStorage{Stats: ps, PodsDir: root.VolumeRoot(), Clock: a.clock}
		}
		o.PodStats = ps
	}
	// Disk is reclaimed by the agent's own garbage collectors first, as
	// the kubelet's eviction manager does, unless the caller gave others.
	if o.ImageGC == nil && a.images != nil {
		o.ImageGC = a.images
	}
	if o.ContainerGC == nil && a.gc != nil {
		o.ContainerGC = containerGCReclaimer{a.gc}
	}
	o.ActivePods = a.evictablePods
	o.Evict = a.evictPod
	o.PodCleanedUp = func(pod *v1.Pod) bool { return !a.workers.CouldHaveRunningContainers(pod.UID) }
	if o.Recorder == nil {
		o.Recorder = a.opts.Recorder
	}
	if o.NodeRef == nil {
		o.NodeRef = &v1.ObjectReference{Kind: "Node", Name: a.opts.NodeName, UID: types.UID(a.opts.NodeName)}
	}
	if o.Clock == nil {
		o.Clock = a.clock
	}
	if o.Logger.GetSink() == nil {
		o.Logger = a.opts.Logger.WithName("eviction")
	}
	if o.Registerer == nil {
		o.Registerer = a.opts.Registerer
	}
	if o.MetricsNamespace == "" {
		o.MetricsNamespace = a.opts.MetricsNamespace
	}
	m, err := eviction.New(o)
	if err != nil {
		return err
	}
	a.evictions.mgr = m
	a.evictions.evicted = map[types.UID]eviction.Eviction{}
	admitUnderPressure := AdmitHandlerFunc(func(attrs *AdmitAttributes) AdmitResult {
		ok, reason, message := m.Admit(attrs.Pod)
		return AdmitResult{Admit: ok, Reason: reason, Message: message}
	})
	a.opts.AdmitHandlers = append([]AdmitHandler{admitUnderPressure}, a.opts.AdmitHandlers...)
	return nil
}

// Eviction returns the agent's eviction manager, or nil without
// Options.Eviction. Run runs it; its Synchronize makes a pass at once.
func (a *Agent) Eviction() *eviction.Manager { return a.evictions.mgr }

// evictablePods are the pods the eviction manager may evict: desired,
// active, not mirror pods, and not already asked to terminate. Inactive or
// asked to terminate is: asked to terminate (a terminated worker was), or
// in a terminal phase, or rejected; so one question to the workers a pod.
// The pod manager's pods are never mirror pods.
func (a *Agent) evictablePods() []*v1.Pod {
	rejected := a.rejectedSnapshot()
	var out []*v1.Pod
	for _, p := range a.pods.GetPods() {
		if isTerminalPhase(p.Status.Phase) {
			continue
		}
		if _, ok := rejected[p.UID]; ok {
			continue
		}
		if a.workers.IsPodTerminationRequested(p.UID) {
			continue
		}
		out = append(out, p)
	}
	return out
}

// evictPod asks the pod's worker to kill it with the eviction's grace
// period and status, which every later status of the pod keeps.
func (a *Agent) evictPod(ctx context.Context, pod *v1.Pod, e eviction.Eviction) error {
	if e.Condition != nil {
		c := *e.Condition
		c.LastTransitionTime = metav1.NewTime(a.clock.Now())
		e.Condition = &c
	}
	a.evictions.mu.Lock()
	a.evictions.evicted[pod.UID] = e
	a.evictions.mu.Unlock()
	grace := e.GracePeriodSeconds
	_, mirror, _ := a.pods.GetPodAndMirrorPod(pod)
	a.updatePod(podworker.UpdatePodOptions{
		UpdateType: podworker.SyncPodKill,
		StartTime:  a.clock.Now(),
		Pod:        pod,
		MirrorPod:  mirror,
		KillPodOptions: &podworker.KillPodOptions{
			Evict:                                    true,
			PodStatusFunc:                            e.Apply,
			PodTerminationGracePeriodSecondsOverride: &grace,
		},
	})
	return nil
}

// applyEviction gives st, a status generated for pod, the pod's eviction.
func (a *Agent) applyEviction(pod *v1.Pod, st *v1.PodStatus) {
	if a.evictions.mgr == nil {
		return
	}
	a.evictions.mu.Lock()
	e, ok := a.evictions.evicted[pod.UID]
	a.evictions.mu.Unlock()
	if ok {
		e.Apply(st)
	}
}

// forgetEviction drops the pod's eviction (it finished, or left its
// source).
func (a *Agent) forgetEviction(pod *v1.Pod) {
	if a.evictions.mgr == nil {
		return
	}
	a.evictions.mu.Lock()
	delete(a.evictions.evicted, pod.UID)
	a.evictions.mu.Unlock()
}

// evictionPressure gives the Node the eviction manager's pressure
// conditions (node.PressureSource).
type evictionPressure struct{ a *Agent }

func (p evictionPressure) IsUnderMemoryPressure() bool {
	return p.a.evictions.mgr != nil && p.a.evictions.mgr.IsUnderMemoryPressure()
}

func (p evictionPressure) IsUnderDiskPressure() bool {
	return p.a.evictions.mgr != nil && p.a.evictions.mgr.IsUnderDiskPressure()
}

func (p evictionPressure) IsUnderPIDPressure() bool {
	return p.a.evictions.mgr != nil && p.a.evictions.mgr.IsUnderPIDPressure()
}

// containerGCReclaimer is agent/gc's Manager as the eviction manager's
// ContainerGC: a pass that removes every dead container it may.
type containerGCReclaimer struct{ m *gc.Manager }

func (r containerGCReclaimer) DeleteAllUnusedContainers(ctx context.Context) error {
	_, err := r.m.DeleteAllUnusedContainers(ctx)
	return err
}
