package eviction

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/podlife/podlife/podmanager"
	"github.com/podlife/podlife/runtime"
)

// systemCriticalPriority is the priority from which a pod is critical
// (the scheduling API's SystemCriticalPriority).
const systemCriticalPriority = 2 * 1000000000

// podStatsFunc gives a pod's stats, if any.
type podStatsFunc func(*v1.Pod) (*statsapi.PodStats, bool)

// Manager is the kubelet's eviction manager: it observes the node's
// signals, sets the pressure conditions, reclaims disk space and evicts
// pods. Create it with New; run it with Run, or call Synchronize.
type Manager struct {
	opts    Options
	log     logr.Logger
	metrics *metrics

	started atomic.Bool
	passes  atomic.Uint64
	// pass holds the token of the one pass that may run at a time.
	pass chan struct{}

	// Touched only by the pass holding the token.
	firstObserved map[key]time.Time
	condObserved  map[v1.NodeConditionType]time.Time
	met           []Threshold
	lastObs       observations
	bad           map[Signal]string // signals whose stats were nonsense (logged)
	nodeFailing   bool
	podFailing    bool
	dedicated     *bool
	// Reused from pass to pass (a map keeps its buckets when cleared):
	// the stats index and the rank keys.
	byUID map[types.UID]*statsapi.PodStats
	keys  []rankKey

	mu sync.RWMutex
	// conditions are the pressure conditions on, in a fixed order.
	conditions []v1.NodeConditionType
}

// New validates opts and returns a Manager. It starts no goroutine and
// asks no provider.
func New(opts Options) (*Manager, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	m := &Manager{
		opts:          opts,
		log:           opts.Logger,
		pass:          make(chan struct{}, 1),
		firstObserved: map[key]time.Time{},
		condObserved:  map[v1.NodeConditionType]time.Time{},
		bad:           map[Signal]string{},
	}
	var err error
	if m.metrics, err = newMetrics(opts.Registerer, opts.MetricsNamespace); err != nil {
		return nil, err
	}
	return m, nil
}

// Thresholds returns the Manager's thresholds.
func (m *Manager) Thresholds() []Threshold { return slices.Clone(m.opts.Thresholds) }

// Run makes a pass at once, then every Options.MonitoringInterval, until
// ctx is done; after a pass that evicted, it waits for the evicted pods
// to be cleaned up (Options.PodCleanedUp, up to 30 s) and passes again at
// once. It returns nil once ctx is done. Run may be called once.
func (m *Manager) Run(ctx context.Context) error {
	if !m.started.CompareAndSwap(false, true) {
		return errors.New("eviction: Run called twice")
	}
	m.log.V(2).Info("eviction manager starting", "thresholds", len(m.opts.Thresholds), "interval", m.opts.MonitoringInterval,
		"pressureTransitionPeriod", m.opts.PressureTransitionPeriod)
	for {
		evicted, _ := m.Synchronize(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if len(evicted) > 0 && m.opts.PodCleanedUp != nil {
			m.waitForCleanup(ctx, evicted)
			continue
		}
		t := m.opts.Clock.NewTimer(m.opts.MonitoringInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C():
		}
	}
}

// waitForCleanup polls Options.PodCleanedUp until every pod is cleaned
// up, ctx is done or 30 s have passed.
func (m *Manager) waitForCleanup(ctx context.Context, pods []*v1.Pod) {
	timeout := m.opts.Clock.NewTimer(podCleanupTimeout)
	defer timeout.Stop()
	tick := m.opts.Clock.NewTicker(podCleanupPollInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timeout.C():
			m.log.Info("eviction manager: timed out waiting for pods to be cleaned up", "pods", podRefs(pods))
			return
		case <-tick.C():
			if !slices.ContainsFunc(pods, func(p *v1.Pod) bool { return !m.opts.PodCleanedUp(p) }) {
				m.log.V(2).Info("eviction manager: pods successfully cleaned up", "pods", podRefs(pods))
				return
			}
		}
	}
}

// Passes returns the number of completed passes.
func (m *Manager) Passes() uint64 { return m.passes.Load() }

// Conditions returns the pressure conditions that are on
// (MemoryPressure, DiskPressure, PIDPressure, in that order).
func (m *Manager) Conditions() []v1.NodeConditionType {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return slices.Clone(m.conditions)
}

func (m *Manager) has(c v1.NodeConditionType) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return hasCondition(m.conditions, c)
}

// IsUnderMemoryPressure reports whether MemoryPressure is on.
func (m *Manager) IsUnderMemoryPressure() bool { return m.has(v1.NodeMemoryPressure) }

// IsUnderDiskPressure reports whether DiskPressure is on.
func (m *Manager) IsUnderDiskPressure() bool { return m.has(v1.NodeDiskPressure) }

// IsUnderPIDPressure reports whether PIDPressure is on.
func (m *Manager) IsUnderPIDPressure() bool { return m.has(v1.NodePIDPressure) }

// Admit decides, as the kubelet's eviction admission, whether a new pod
// may run: under MemoryPressure alone, every pod but BestEffort ones that
// do not tolerate the memory-pressure taint; under any other pressure,
// critical pods only (static, mirror, or of system-critical priority).
// A refusal has reason Evicted and the message "The node had condition:
// [DiskPressure]. ".
func (m *Manager) Admit(pod *v1.Pod) (admit bool, reason, message string) {
	conds := m.Conditions()
	if len(conds) == 0 || critical(pod) {
		return true, "", ""
	}
	if len(conds) == 1 && conds[0] == v1.NodeMemoryPressure {
		if runtime.QOSClass(pod) != v1.PodQOSBestEffort {
			return true, "", ""
		}
		taint := &v1.Taint{Key: v1.TaintNodeMemoryPressure, Effect: v1.TaintEffectNoSchedule}
		for i := range pod.Spec.Tolerations {
			if pod.Spec.Tolerations[i].ToleratesTaint(m.log, taint, false) {
				return true, "", ""
			}
		}
	}
	return false, Reason, fmt.Sprintf(nodeConditionMessageFmt, conds)
}

// critical reports whether the pod is never evicted and always admitted,
// as the kubelet's IsCriticalPod: a static or mirror pod, or one of
// system-critical priority.
func critical(pod *v1.Pod) bool {
	if podmanager.IsStaticPod(pod) || podmanager.IsMirrorPod(pod) {
		return true
	}
	return pod.Spec.Priority != nil && *pod.Spec.Priority >= systemCriticalPriority
}

// Synchronize makes one eviction pass, as the kubelet's synchronize:
// observe the signals, update the thresholds met and the pressure
// conditions, evict pods over their local storage limits, then, for the
// first threshold met past its grace period (memory first), reclaim disk
// space with the garbage collectors or evict the first pod in rank. It
// returns the pods evicted. Passes never overlap. Its error tells why the
// pass could not observe (it is logged once per row of failures).
func (m *Manager) Synchronize(ctx context.Context) ([]*v1.Pod, error) {
	select {
	case m.pass <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-m.pass }()
	defer m.passes.Add(1)
	start := m.opts.Clock.Now()
	defer func() { m.metrics.observePass(m.opts.Clock.Since(start)) }()

	if m.dedicated == nil {
		d := false
		if p, ok := m.opts.NodeStats.(DedicatedImageFs); ok {
			var err error
			if d, err = p.HasDedicatedImageFs(ctx); err != nil {
				return nil, m.nodeFailed(fmt.Errorf("eviction: image file system: %w", err))
			}
		}
		m.dedicated = &d
	}
	ns, err := m.opts.NodeStats.NodeStats(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, m.nodeFailed(fmt.Errorf("eviction: node stats: %w", err))
	}
	if m.nodeFailing {
		m.log.V(2).Info("eviction manager: node stats available again")
		m.nodeFailing = false
	}
	obs := m.observe(ns)
	pods := m.opts.ActivePods()

	now := m.opts.Clock.Now()
	thresholds := thresholdsMet(m.opts.Thresholds, obs, false)
	if len(m.met) > 0 {
		thresholds = mergeThresholds(thresholds, thresholdsMet(m.met, obs, true))
	}
	m.firstObserved = firstObservedAt(thresholds, m.firstObserved, now)
	m.condObserved = conditionsLastObservedAt(conditionsOf(thresholds), m.condObserved, now)
	conds := conditionsObservedSince(m.condObserved, m.opts.PressureTransitionPeriod, now)
	thresholds = metGracePeriod(thresholds, m.firstObserved, now)
	m.met = thresholds
	thresholds = updatedStats(thresholds, obs, m.lastObs)
	m.lastObs = obs
	m.setConditions(conds)

	// The pods' stats are read only when something will look at them: the
	// pods with local storage limits, or the ranking for a threshold met.
	// The kubelet reads them every pass from cAdvisor's cache; here they
	// come from the runtime (every pod's stats: seconds at 100,000 pods),
	// and a pass with nothing to check skips them.
	var limited []*v1.Pod
	if !m.opts.DisableLocalStorageEviction {
		limited = storageLimitedPods(pods)
	}
	if len(limited) == 0 && len(thresholds) == 0 {
		m.log.V(4).Info("eviction manager: no resources are starved")
		return nil, nil
	}
	podList, err := m.opts.PodStats.ListPodStats(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if !m.podFailing {
			m.log.Error(err, "eviction manager: cannot get the pods' stats; no pod is evicted until they come back")
		}
		m.podFailing = true
		return nil, nil
	}
	if m.podFailing {
		m.log.V(2).Info("eviction manager: pod stats available again")
		m.podFailing = false
	}
	if evicted := m.localStorageEviction(ctx, limited, podList); len(evicted) > 0 {
		return evicted, nil
	}
	if len(thresholds) == 0 {
		m.log.V(4).Info("eviction manager: no resources are starved")
		return nil, nil
	}
	m.byUID = indexStats(m.byUID, podList, nil)
	defer clear(m.byUID) // keeps the buckets, drops this pass's stats
	podStats := lookup(m.byUID)
	thresholds = evictionPriority(thresholds)
	t := thresholds[0]
	res := signalResource(t.Signal)
	m.log.Info("eviction manager: attempting to reclaim", "resourceName", res, "threshold", t.String())
	if m.opts.Recorder != nil && m.opts.NodeRef != nil {
		m.opts.Recorder.Eventf(m.opts.NodeRef, v1.EventTypeWarning, "EvictionThresholdMet", "Attempting to reclaim %s", res)
	}
	if m.reclaimNodeLevel(ctx, t.Signal, res) {
		m.log.Info("eviction manager: able to reduce resource pressure without evicting pods", "resourceName", res)
		return nil, nil
	}
	if len(pods) == 0 {
		m.log.Info("eviction manager: eviction thresholds have been met, but no pods are active to evict")
		return nil, nil
	}
	grace := ImmediateGracePeriodSeconds
	if !t.Hard() {
		grace = m.opts.MaxPodGracePeriodSeconds
	}
	// The first pod in rank that is not critical: the kubelet tries them
	// in rank and refuses the critical ones.
	m.keys = rankKeys(m.keys[:0], pods, podStats, t.Signal, *m.dedicated)
	pod := first(m.keys, func(p *v1.Pod) bool { return !critical(p) })
	clear(m.keys) // drop the pods
	if pod == nil {
		m.log.Info("eviction manager: unable to evict any pods from the node")
		return nil, nil
	}
	message, annotations := evictionMessage(res, pod, podStats, thresholds, obs)
	cond := &v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: v1.PodReasonTerminationByKubelet, Message: message}
	m.evict(ctx, pod, Eviction{GracePeriodSeconds: grace, Message: message, Condition: cond, Signal: string(t.Signal)}, annotations)
	return []*v1.Pod{pod}, nil
}

// nodeFailed logs err the first time in a row and returns it.
func (m *Manager) nodeFailed(err error) error {
	if !m.nodeFailing {
		m.log.Error(err, "eviction manager: cannot observe the node; nothing is evicted until it can")
	} else {
		m.log.V(4).Info("eviction manager: still cannot observe the node", "err", err.Error())
	}
	m.nodeFailing = true
	return err
}

// observe turns node stats into observations, logging each signal whose
// stats turn nonsense (once) and come back.
func (m *Manager) observe(ns *statsapi.NodeStats) observations {
	obs, bad := observe(ns)
	for s, why := range bad {
		if _, ok := m.bad[s]; !ok {
			m.log.Error(errors.New(why), "eviction manager: ignoring nonsense stats", "signal", s)
		}
	}
	for s := range m.bad {
		if _, ok := bad[s]; !ok {
			m.log.V(2).Info("eviction manager: stats make sense again", "signal", s)
		}
	}
	m.bad = bad
	m.log.V(4).Info("eviction manager: observations", "signals", len(obs))
	return obs
}

func (m *Manager) setConditions(conds []v1.NodeConditionType) {
	m.mu.Lock()
	old := m.conditions
	m.conditions = conds
	m.mu.Unlock()
	if !slices.Equal(old, conds) {
		m.log.V(2).Info("eviction manager: node conditions changed", "conditions", conds, "previous", old)
	}
}

// storageLimitedPods are the pods with an emptyDir sizeLimit or an
// ephemeral-storage limit.
func storageLimitedPods(pods []*v1.Pod) []*v1.Pod {
	var limited []*v1.Pod
	for _, pod := range pods {
		if storageLimited(pod) {
			limited = append(limited, pod)
		}
	}
	return limited
}

// localStorageEviction evicts every pod of limited (those with an emptyDir
// sizeLimit or an ephemeral-storage limit) over its limit.
func (m *Manager) localStorageEviction(ctx context.Context, limited []*v1.Pod, list []statsapi.PodStats) []*v1.Pod {
	if len(limited) == 0 {
		return nil
	}
	// Only the stats of the pods with limits are indexed: usually few.
	want := make(map[types.UID]bool, len(limited))
	for _, p := range limited {
		want[p.UID] = true
	}
	stats := statsByUID(list, want)
	var evicted []*v1.Pod
	for _, pod := range limited {
		v, ok := localStorageViolation(pod, stats, *m.dedicated)
		if !ok {
			continue
		}
		if m.evict(ctx, pod, Eviction{GracePeriodSeconds: ImmediateGracePeriodSeconds, Message: v.message, Signal: v.signal}, nil) {
			evicted = append(evicted, pod)
		}
	}
	return evicted
}

// evict evicts the pod unless it is critical, and reports whether it did.
func (m *Manager) evict(ctx context.Context, pod *v1.Pod, e Eviction, annotations map[string]string) bool {
	if critical(pod) {
		m.log.Error(nil, "eviction manager: cannot evict a critical pod", "pod", podRef(pod))
		return false
	}
	if m.opts.Recorder != nil {
		m.opts.Recorder.AnnotatedEventf(pod, annotations, v1.EventTypeWarning, Reason, "%s", e.Message)
	}
	m.log.Info("eviction manager: evicting pod", "pod", podRef(pod), "podUID", pod.UID, "signal", e.Signal,
		"gracePeriod", e.GracePeriodSeconds, "message", e.Message)
	if err := m.opts.Evict(ctx, pod, e); err != nil {
		m.log.Error(err, "eviction manager: pod failed to evict", "pod", podRef(pod))
	} else {
		m.log.Info("eviction manager: pod is evicted successfully", "pod", podRef(pod))
	}
	m.metrics.evicted(e.Signal)
	return true
}

// reclaimNodeLevel runs the garbage collectors that free the resource of
// signal and reports whether every threshold is then resolved.
func (m *Manager) reclaimNodeLevel(ctx context.Context, signal Signal, res v1.ResourceName) bool {
	var funcs []func(context.Context) error
	disk := signal == SignalNodeFsAvailable || signal == SignalNodeFsInodesFree ||
		signal == SignalImageFsAvailable || signal == SignalImageFsInodesFree
	if !disk || (*m.dedicated && (signal == SignalNodeFsAvailable || signal == SignalNodeFsInodesFree)) {
		return false
	}
	if gc := m.opts.ContainerGC; gc != nil {
		funcs = append(funcs, gc.DeleteAllUnusedContainers)
	}
	if gc := m.opts.ImageGC; gc != nil {
		funcs = append(funcs, func(ctx context.Context) error {
			freed, err := gc.DeleteUnusedImages(ctx)
			m.log.V(2).Info("eviction manager: deleted unused images", "bytesFreed", freed)
			return err
		})
	}
	if len(funcs) == 0 {
		return false
	}
	for _, f := range funcs {
		if err := f(ctx); err != nil {
			m.log.Info("eviction manager: unexpected error when attempting to reduce resource pressure", "resourceName", res, "err", err.Error())
		}
	}
	ns, err := m.opts.NodeStats.NodeStats(ctx)
	if err != nil {
		m.log.Error(err, "eviction manager: failed to get node stats after resource reclaim")
		return false
	}
	obs, _ := observe(ns)
	return len(thresholdsMet(m.opts.Thresholds, obs, true)) == 0
}

// statsByUID indexes pod stats by pod UID: all of them, or with want
// those of the pods it holds.
func statsByUID(list []statsapi.PodStats, want map[types.UID]bool) podStatsFunc {
	return lookup(indexStats(nil, list, want))
}

// indexStats adds the stats of list to byUID (made when nil): all of
// them, or with want those of the pods it holds.
func indexStats(byUID map[types.UID]*statsapi.PodStats, list []statsapi.PodStats, want map[types.UID]bool) map[types.UID]*statsapi.PodStats {
	if byUID == nil {
		n := len(list)
		if want != nil {
			n = len(want)
		}
		byUID = make(map[types.UID]*statsapi.PodStats, n)
	}
	for i := range list {
		uid := types.UID(list[i].PodRef.UID)
		if want == nil || want[uid] {
			byUID[uid] = &list[i]
		}
	}
	return byUID
}

func lookup(byUID map[types.UID]*statsapi.PodStats) podStatsFunc {
	return func(p *v1.Pod) (*statsapi.PodStats, bool) {
		s, ok := byUID[p.UID]
		return s, ok
	}
}

func podRef(p *v1.Pod) string { return p.Namespace + "/" + p.Name }

func podRefs(ps []*v1.Pod) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = podRef(p)
	}
	return out
}
