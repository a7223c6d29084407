package podworker

import (
	"context"
	"errors"
	"fmt"
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/podlife/podlife/runtime"
)

// numShards is the number of independently locked partitions of the pod
// records. No operation holds more than one shard lock at a time.
const numShards = 64

const (
	stateNew int32 = iota
	stateRunning
	stateStopping
	stateStopped
)

// Workers is the pod lifecycle engine: one Machine per pod, driven by a
// goroutine that exists only while the pod has work. It implements
// PodWorkers. Create it with New and start it with Run.
type Workers struct {
	syncer  Syncer
	log     logr.Logger
	clock   clock.WithTicker
	cache   runtime.Cache
	metrics MetricsRecorder
	opts    Options

	shards [numShards]shard
	count  atomic.Int64 // records in all shards

	podsSynced atomic.Bool

	// knownMu serialises SyncKnownPods calls; epoch numbers them. A call
	// marks each desired pod's record with its epoch instead of building a
	// set of desired UIDs.
	knownMu sync.Mutex
	epoch   atomic.Uint64
	state   atomic.Int32
	baseCtx context.Context // set by Run before state becomes running
	wg      sync.WaitGroup  // pod goroutines

	// Pod goroutines. A pod with work is handed to a parked goroutine if
	// one waits, else to a new goroutine, unless maxStarting goroutines
	// have been started but not yet scheduled: then it waits in ready, and
	// each goroutine, when it begins, passes one waiting pod on to a new
	// goroutine. A pod thus never waits for another pod's Syncer call, yet
	// a burst of pods needs about as many goroutines as the scheduler runs
	// at once, not one per pod: the Go runtime keeps every goroutine it ever
	// made, and stacks of dead ones pin stack memory (~100 B per pod after a
	// burst of 10,000, docs/benchmarks.md). A goroutine whose pod has no more
	// work takes the next ready pod, else parks while fewer than maxParked
	// are parked; stopCh, closed when Run stops, ends the parked ones.
	poolMu      sync.Mutex // taken after a shard lock, never before
	starting    int        // goroutines started but not yet begun; guarded by poolMu
	ready       []podTask  // guarded by poolMu; ready[readyHead:] wait
	readyHead   int
	maxStarting int
	handoff     chan podTask // unbuffered: a send succeeds only to a parked goroutine
	parked      atomic.Int32
	maxParked   int32
	stopCh      chan struct{}

	staticMu sync.Mutex
	static   staticNames // guarded by staticMu; taken after a shard lock, never before

	sched *schedule
}

var _ PodWorkers = (*Workers)(nil)

type shard struct {
	mu   sync.Mutex
	pods map[types.UID]*podRecord // guarded by mu, as is every *podRecord in it
	_    [40]byte                 // keep shards on separate cache lines
}

// podRecord is one pod: its Machine plus what the driver needs to run it.
type podRecord struct {
	m            Machine
	cancel       context.CancelFunc // cancels the running loop's Syncer context; nil when none
	lastSyncTime nanotime           // end of the previous Syncer call
	dueAt        int64              // pending scheduled re-delivery, 0 if none
	// desiredEpoch and createdEpoch hold the low 32 bits of SyncKnownPods
	// epochs: the last one that desired the pod, and the one current when the
	// record was created. Only equality with the current epoch is tested, so
	// a wrap could only hide an orphan from one call, for a record untouched
	// through 2^32 calls.
	desiredEpoch uint32
	createdEpoch uint32
	running      bool // a goroutine owns the pod's work loop
}

// New validates opts and returns Workers. It starts no goroutine.
func New(opts Options) (*Workers, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	w := &Workers{
		syncer:  opts.Syncer,
		log:     opts.Logger,
		clock:   opts.Clock,
		cache:   opts.Cache,
		metrics: opts.Metrics,
		opts:    opts,
		static:  newStaticNames(),
		sched:   newSchedule(),

		maxStarting: max(2, goruntime.GOMAXPROCS(0)),
		handoff:     make(chan podTask),
		maxParked:   int32(max(2, goruntime.GOMAXPROCS(0))),
		stopCh:      make(chan struct{}),
	}
	for i := range w.shards {
		w.shards[i].pods = make(map[types.UID]*podRecord)
	}
	return w, nil
}

func (w *Workers) shardFor(uid types.UID) *shard { return &w.shards[shardIndex(uid)] }

// shardIndex is FNV-1a over the UID, modulo numShards.
func shardIndex(uid types.UID) uint8 {
	h := uint32(2166136261)
	for i := 0; i < len(uid); i++ {
		h ^= uint32(uid[i])
		h *= 16777619
	}
	return uint8(h % numShards)
}

// Run starts processing and blocks until ctx is done. It then cancels the
// Syncer calls in flight and returns once every pod goroutine has exited.
// Run may be called once.
func (w *Workers) Run(ctx context.Context) error {
	if ctx == nil {
		return errors.New("podworker: Run needs a context")
	}
	if w.state.Load() != stateNew {
		return errors.New("podworker: Run called twice")
	}
	// Syncer calls keep the values of ctx but are cancelled by the driver
	// itself (per pod, and all of them at shutdown), so they need not be
	// registered with ctx.
	w.baseCtx = context.WithoutCancel(ctx)
	if !w.state.CompareAndSwap(stateNew, stateRunning) {
		return errors.New("podworker: Run called twice")
	}
	w.log.V(2).Info("pod workers starting")
	for i := range w.shards {
		sh := &w.shards[i]
		sh.mu.Lock()
		for uid, rec := range sh.pods {
			if rec.m.HasPending() {
				w.spawnLocked(uid, rec)
			}
		}
		sh.mu.Unlock()
	}

	w.runSchedule(ctx)

	w.state.Store(stateStopping)
	close(w.stopCh)
	for i := range w.shards {
		sh := &w.shards[i]
		sh.mu.Lock()
		for _, rec := range sh.pods {
			if rec.cancel != nil {
				rec.cancel()
			}
		}
		sh.mu.Unlock()
	}
	w.wg.Wait()
	w.state.Store(stateStopped)
	w.log.V(2).Info("pod workers stopped")
	return nil
}

// runSchedule fires due re-deliveries until ctx is done.
func (w *Workers) runSchedule(ctx context.Context) {
	var buf []dueItem
	for {
		at, ok := w.sched.next()
		if !ok {
			select {
			case <-w.sched.wake:
				continue
			case <-ctx.Done():
				return
			}
		}
		now := w.clock.Now()
		if at <= now.UnixNano() {
			buf = w.fireDue(now, buf[:0])
			continue
		}
		timer := w.clock.NewTimer(time.Duration(at - now.UnixNano()))
		if w.clock.Now().UnixNano() >= at {
			// The clock reached the deadline while the timer was being
			// armed (a fake clock stepped meanwhile): fire now.
			timer.Stop()
			continue
		}
		select {
		case <-timer.C():
		case <-w.sched.wake:
			timer.Stop()
		case <-ctx.Done():
			timer.Stop()
			return
		}
	}
}

func (w *Workers) fireDue(now time.Time, buf []dueItem) []dueItem {
	buf = w.sched.popDue(now.UnixNano(), buf)
	for _, it := range buf {
		sh := w.shardFor(it.uid)
		sh.mu.Lock()
		if rec := sh.pods[it.uid]; rec != nil && rec.dueAt == it.at {
			rec.dueAt = 0
			if eff := rec.m.Due(); eff.Notify {
				w.spawnLocked(it.uid, rec)
			}
		}
		sh.mu.Unlock()
	}
	return buf
}

// spawnLocked starts the pod's work loop unless it runs already or Workers
// is not running. The pod's shard lock must be held.
func (w *Workers) spawnLocked(uid types.UID, rec *podRecord) {
	if rec.running || w.state.Load() != stateRunning {
		return
	}
	rec.running = true
	t := podTask{uid: uid, rec: rec}
	select {
	case w.handoff <- t:
		return
	default:
	}
	w.poolMu.Lock()
	if w.starting >= w.maxStarting {
		w.ready = append(w.ready, t)
		w.poolMu.Unlock()
		return
	}
	w.starting++
	w.poolMu.Unlock()
	w.wg.Add(1)
	go w.podGoroutine(t)
}

// podTask is a pod whose work loop is to run.
type podTask struct {
	uid types.UID
	rec *podRecord
}

// popReadyLocked takes the oldest ready pod. poolMu must be held.
func (w *Workers) popReadyLocked() (podTask, bool) {
	if w.readyHead == len(w.ready) {
		return podTask{}, false
	}
	t := w.ready[w.readyHead]
	w.ready[w.readyHead] = podTask{}
	w.readyHead++
	if w.readyHead == len(w.ready) {
		w.ready, w.readyHead = nil, 0 // a burst's queue is not kept
	}
	return t, true
}

// podGoroutine runs pods' work loops: first t, then ready pods, then,
// parked, pods handed to it.
func (w *Workers) podGoroutine(t podTask) {
	defer w.wg.Done()
	w.poolMu.Lock()
	w.starting--
	if next, ok := w.popReadyLocked(); ok {
		// Whatever t's Syncer does, next gets a goroutine of its own.
		w.starting++
		w.wg.Add(1)
		go w.podGoroutine(next)
	}
	w.poolMu.Unlock()
	for {
		w.podLoop(t.uid, t.rec)
		w.poolMu.Lock()
		next, ok := w.popReadyLocked()
		w.poolMu.Unlock()
		if ok {
			t = next
			continue
		}
		t = podTask{} // do not keep a finished pod alive while parked
		if w.parked.Add(1) > w.maxParked {
			w.parked.Add(-1)
			return
		}
		select {
		case t = <-w.handoff:
			w.parked.Add(-1)
		case <-w.stopCh:
			w.parked.Add(-1)
			return
		}
	}
}

// scheduleLocked arranges a re-delivery after d. The shard lock must be held.
func (w *Workers) scheduleLocked(uid types.UID, rec *podRecord, now time.Time, d time.Duration) {
	at := now.Add(d).UnixNano()
	rec.dueAt = at
	w.sched.add(uid, at)
}

// delay returns the jittered delay of a requeue.
func (w *Workers) delay(r Requeue, failures int, syncErr error) time.Duration {
	switch r {
	case RequeueResync:
		return jitter(w.opts.ResyncInterval, w.opts.Random)
	case RequeueBackOff:
		d := w.opts.BackOffPeriod
		for i := 1; i < failures && d < w.opts.MaxBackOffPeriod; i++ {
			d *= 2
		}
		d = min(d, w.opts.MaxBackOffPeriod)
		var ra retryAfterError
		if errors.As(syncErr, &ra) {
			d = ra.RetryAfter()
		}
		d = max(0, min(d, w.opts.ResyncInterval))
		return jitter(d, w.opts.Random)
	default:
		return 0
	}
}

// closeAll closes CompletedCh channels. A channel the caller already closed,
// or passed twice, is skipped rather than crashing the agent.
func closeAll(chs []chan<- struct{}) {
	for _, ch := range chs {
		closeQuietly(ch)
	}
}

func closeQuietly(ch chan<- struct{}) {
	defer func() { _ = recover() }()
	close(ch)
}

// kick delivers the last update of a pod that may now start.
func (w *Workers) kick(uid types.UID) {
	if uid == "" {
		return
	}
	sh := w.shardFor(uid)
	sh.mu.Lock()
	if rec := sh.pods[uid]; rec != nil {
		if eff := rec.m.Due(); eff.Notify {
			w.spawnLocked(uid, rec)
		}
	}
	sh.mu.Unlock()
}

// staticEffectsLocked applies the static-name effects of eff and returns the
// waiter to kick once the shard lock is released.
func (w *Workers) staticEffectsLocked(rec *podRecord, eff Effects) (next types.UID) {
	if !rec.m.Static() || (!eff.WithdrawStatic && !eff.ReleaseStatic) {
		return ""
	}
	w.staticMu.Lock()
	defer w.staticMu.Unlock()
	if eff.WithdrawStatic {
		return w.static.withdraw(rec.m.FullName(), rec.m.UID())
	}
	return w.static.release(rec.m.FullName(), rec.m.UID())
}

func podRef(pod *v1.Pod) string {
	if pod == nil {
		return ""
	}
	return pod.Namespace + "/" + pod.Name
}

// UpdatePod implements PodWorkers. An update with neither Pod nor RunningPod,
// or for a pod without UID, is logged and changes nothing.
func (w *Workers) UpdatePod(o UpdatePodOptions) {
	uid := uidOf(&o)
	cachedTerminal := true
	if o.Pod != nil && isTerminalPhase(o.Pod) && w.cache != nil && uid != "" {
		st, err := w.cache.Get(uid)
		cachedTerminal = err == nil && st != nil && st.IsTerminal()
	}
	now := w.clock.Now()
	sh := w.shardFor(uid)

	sh.mu.Lock()
	rec := sh.pods[uid]
	created := rec == nil
	if created {
		rec = &podRecord{}
	}
	eff, err := rec.m.Update(o, now, cachedTerminal)
	if err != nil || (created && eff.Ignored != "") {
		sh.mu.Unlock()
		closeAll(eff.Close)
		if err != nil {
			w.log.Error(err, "rejected pod update", "pod", podRef(o.Pod), "podUID", uid, "updateType", o.UpdateType.String())
		} else {
			w.log.V(4).Info("ignored pod update", "podUID", uid, "reason", eff.Ignored)
		}
		return
	}
	if created {
		rec.createdEpoch = uint32(w.epoch.Load())
		sh.pods[uid] = rec
		w.count.Add(1)
		if rec.m.Static() {
			w.staticMu.Lock()
			w.static.add(rec.m.FullName(), uid)
			w.staticMu.Unlock()
		}
	}
	if eff.CancelSync {
		rec.releaseCtxLocked()
	}
	next := w.staticEffectsLocked(rec, eff)
	if eff.Notify {
		w.spawnLocked(uid, rec)
	}
	lifecycle := rec.m.Lifecycle()
	sh.mu.Unlock()

	closeAll(eff.Close)
	w.kick(next)
	if log := w.log.V(4); log.Enabled() {
		log.Info("pod update", "pod", podRef(o.Pod), "podUID", uid, "updateType", o.UpdateType.String(),
			"lifecycle", lifecycle.String(), "ignored", eff.Ignored)
	}
	if eff.CancelSync {
		w.log.V(2).Info("pod terminating", "pod", podRef(o.Pod), "podUID", uid)
	}
}

// releaseCtxLocked cancels the pod's sync context, freeing it. The work loop
// that owns the context sees rec.cancel gone and makes a new one for its next
// Syncer call.
func (rec *podRecord) releaseCtxLocked() {
	if rec.cancel != nil {
		rec.cancel()
		rec.cancel = nil
	}
}

// podLoop runs a pod's work until nothing is pending.
func (w *Workers) podLoop(uid types.UID, rec *podRecord) {
	sh := w.shardFor(uid)
	var ctx context.Context // valid while rec.cancel is the one made with it
	for {
		now := w.clock.Now()
		sh.mu.Lock()
		if sh.pods[uid] != rec {
			sh.mu.Unlock()
			return
		}
		if w.state.Load() != stateRunning {
			rec.running = false
			rec.releaseCtxLocked()
			sh.mu.Unlock()
			return
		}
		decision := StartAllowed
		if rec.m.NeedsStartDecision() && rec.m.Static() && !rec.m.IsTerminationRequested() {
			w.staticMu.Lock()
			if !w.static.tryStart(rec.m.FullName(), uid) {
				decision = StartNotYet
			}
			w.staticMu.Unlock()
		}
		work, ok, eff, err := rec.m.Next(now, decision)
		if err != nil {
			w.log.Error(err, "pod state machine refused to start work", "podUID", uid)
		}
		if !ok {
			rec.running = false
			rec.releaseCtxLocked()
			next := w.staticEffectsLocked(rec, eff)
			if eff.Finished {
				rec.dueAt = 0
			}
			if eff.Waiting {
				// The full name's holder kicks us when it finishes; this is
				// only a safety net.
				w.scheduleLocked(uid, rec, now, w.delay(RequeueBackOff, 1, nil))
			}
			_, _, terminatingAt, _ := rec.m.Times()
			sh.mu.Unlock()
			closeAll(eff.Close)
			if eff.Finished {
				w.observeFinished(uid, now, terminatingAt)
			}
			w.kick(next)
			return
		}
		if rec.cancel == nil {
			ctx, rec.cancel = context.WithCancel(w.baseCtx)
		}
		lastSync := rec.lastSyncTime.Time()
		sh.mu.Unlock()

		if eff.Started && w.metrics != nil && work.Pod != nil {
			w.metrics.ObserveContainersPerPod(len(work.Pod.Spec.Containers))
		}
		isTerminal, syncErr := w.execute(ctx, uid, work, lastSync)
		done := w.clock.Now()
		if syncErr != nil {
			if errors.Is(syncErr, context.Canceled) {
				w.log.V(2).Info("pod sync cancelled", "podUID", uid, "work", work.Kind.String())
			} else {
				w.log.Error(syncErr, "pod sync failed, will retry", "pod", podRef(work.Pod), "podUID", uid, "work", work.Kind.String())
			}
		}
		if w.metrics != nil && !work.StartTime.IsZero() {
			w.metrics.ObservePodWorkerDuration(work.UpdateType.String(), done.Sub(work.StartTime))
		}

		sh.mu.Lock()
		if sh.pods[uid] != rec {
			sh.mu.Unlock()
			return
		}
		rec.lastSyncTime = stamp(done)
		eff, err = rec.m.Complete(done, isTerminal, syncErr)
		if err != nil {
			w.log.Error(err, "pod state machine refused a result", "podUID", uid, "work", work.Kind.String())
		}
		if eff.Requeue != RequeueNone {
			w.scheduleLocked(uid, rec, done, w.delay(eff.Requeue, rec.m.Failures(), syncErr))
		}
		if eff.Forget {
			delete(sh.pods, uid)
			w.count.Add(-1)
		}
		if eff.Finished {
			rec.dueAt = 0 // nothing is ever re-delivered to a finished pod
		}
		next := w.staticEffectsLocked(rec, eff)
		stop := eff.Forget || eff.Finished || !rec.m.HasPending()
		if stop {
			rec.running = false
			rec.releaseCtxLocked()
		}
		_, _, terminatingAt, _ := rec.m.Times()
		sh.mu.Unlock()

		closeAll(eff.Close)
		if eff.Finished {
			w.observeFinished(uid, done, terminatingAt)
		}
		w.kick(next)
		if stop {
			return
		}
	}
}

func (w *Workers) observeFinished(uid types.UID, now, terminatingAt time.Time) {
	w.log.V(2).Info("pod finished", "podUID", uid)
	if w.metrics != nil && !terminatingAt.IsZero() {
		w.metrics.ObservePodWorkerDuration("terminated", now.Sub(terminatingAt))
	}
}

// execute makes one Syncer call. A panicking Syncer is turned into an error
// (and retried), so one bad pod cannot take the agent down.
func (w *Workers) execute(ctx context.Context, uid types.UID, work Work, lastSync time.Time) (isTerminal bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s panicked: %v", work.Kind, r)
		}
	}()
	if work.Kind == WorkTerminatingRuntimePod {
		return false, w.syncer.SyncTerminatingRuntimePod(ctx, work.RunningPod)
	}
	status, err := w.podStatus(ctx, uid, work.Pod, lastSync)
	if err != nil {
		return false, err
	}
	switch work.Kind {
	case WorkSyncPod:
		return w.syncer.SyncPod(ctx, work.UpdateType, work.Pod, work.MirrorPod, status)
	case WorkTerminatingPod:
		gp := work.GracePeriod
		return false, w.syncer.SyncTerminatingPod(ctx, work.Pod, status, &gp, work.StatusFunc)
	case WorkTerminatedPod:
		return false, w.syncer.SyncTerminatedPod(ctx, work.Pod, status)
	default:
		return false, fmt.Errorf("unknown work kind %d", work.Kind)
	}
}

// podStatus returns the status to hand the Syncer: from the Cache, newer
// than the previous sync, when there is one.
func (w *Workers) podStatus(ctx context.Context, uid types.UID, pod *v1.Pod, lastSync time.Time) (*runtime.PodStatus, error) {
	if w.cache == nil {
		return &runtime.PodStatus{ID: uid, Name: pod.Name, Namespace: pod.Namespace}, nil
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer w.afterFunc(w.opts.StatusWaitTimeout, cancel)()
	st, err := w.cache.GetNewerThan(wctx, uid, lastSync)
	if err != nil {
		if ctx.Err() == nil && wctx.Err() != nil {
			return nil, fmt.Errorf("determine status of pod %s: none newer than %s within %s: %w", uid, lastSync.Format(time.RFC3339Nano), w.opts.StatusWaitTimeout, ErrStatusWaitTimeout)
		}
		return nil, fmt.Errorf("determine status of pod %s: %w", uid, err)
	}
	return st, nil
}

// afterFunc calls f after d on the injected clock, unless the returned stop
// function is called first. stop returns only once no call to f can follow.
func (w *Workers) afterFunc(d time.Duration, f func()) (stop func()) {
	if c, ok := w.clock.(clock.WithDelayedExecution); ok {
		t := c.AfterFunc(d, f)
		return func() { t.Stop() }
	}
	t := w.clock.NewTimer(d)
	quit, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		select {
		case <-t.C():
			f()
		case <-quit:
		}
	}()
	return func() {
		close(quit)
		t.Stop()
		<-exited
	}
}

// SyncKnownPods implements PodWorkers.
func (w *Workers) SyncKnownPods(desiredPods []*v1.Pod) map[types.UID]PodWorkerSync {
	w.knownMu.Lock()
	defer w.knownMu.Unlock()
	epoch := uint32(w.epoch.Add(1))
	// Mark the records of desired pods. A record created after this point
	// (createdEpoch == epoch) is newer than the caller's view of what is
	// desired and is not treated as an orphan by this call.
	for _, pod := range desiredPods {
		if pod == nil {
			continue
		}
		sh := w.shardFor(pod.UID)
		sh.mu.Lock()
		if rec := sh.pods[pod.UID]; rec != nil {
			rec.desiredEpoch = epoch
		}
		sh.mu.Unlock()
	}
	w.podsSynced.Store(true)
	now := w.clock.Now()
	known := make(map[types.UID]PodWorkerSync, w.count.Load())
	var kicks []types.UID
	var toClose []chan<- struct{}
	for i := range w.shards {
		sh := &w.shards[i]
		sh.mu.Lock()
		for uid, rec := range sh.pods {
			orphan := rec.desiredEpoch != epoch && rec.createdEpoch != epoch
			if orphan || rec.m.IsRestartRequested() {
				if rec.m.IsFinished() {
					delete(sh.pods, uid)
					w.count.Add(-1)
					continue
				}
				if orphan {
					eff := rec.m.Orphan(now)
					toClose = append(toClose, eff.Close...)
					if next := w.staticEffectsLocked(rec, eff); next != "" {
						kicks = append(kicks, next)
					}
					if eff.Forget {
						delete(sh.pods, uid)
						w.count.Add(-1)
						rec.releaseCtxLocked()
						continue
					}
					if eff.CancelSync {
						rec.releaseCtxLocked()
					}
					if eff.Notify {
						w.spawnLocked(uid, rec)
					}
				}
			}
			known[uid] = rec.m.WorkerSync(orphan)
		}
		sh.mu.Unlock()
	}
	closeAll(toClose)
	for _, uid := range kicks {
		w.kick(uid)
	}
	return known
}

// withPod runs f on the pod's machine under its shard lock and reports
// whether the pod is known.
func (w *Workers) withPod(uid types.UID, f func(m *Machine)) bool {
	sh := w.shardFor(uid)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	rec := sh.pods[uid]
	if rec == nil {
		return false
	}
	f(&rec.m)
	return true
}

// queryPod answers a query for a pod: f's answer for a known pod, otherwise
// unknownBefore until the first SyncKnownPods and unknownAfter since.
func (w *Workers) queryPod(uid types.UID, f func(m *Machine) bool, unknownBefore, unknownAfter bool) bool {
	var answer bool
	if w.withPod(uid, func(m *Machine) { answer = f(m) }) {
		return answer
	}
	if w.podsSynced.Load() {
		return unknownAfter
	}
	return unknownBefore
}

// IsPodKnownTerminated implements PodWorkers.
func (w *Workers) IsPodKnownTerminated(uid types.UID) bool {
	return w.queryPod(uid, (*Machine).IsTerminated, false, false)
}

// CouldHaveRunningContainers implements PodWorkers.
func (w *Workers) CouldHaveRunningContainers(uid types.UID) bool {
	return w.queryPod(uid, func(m *Machine) bool { return !m.IsTerminated() }, true, false)
}

// ShouldPodBeFinished implements PodWorkers.
func (w *Workers) ShouldPodBeFinished(uid types.UID) bool {
	return w.queryPod(uid, (*Machine).IsFinished, false, true)
}

// IsPodTerminationRequested implements PodWorkers.
func (w *Workers) IsPodTerminationRequested(uid types.UID) bool {
	return w.queryPod(uid, (*Machine).IsTerminationRequested, false, false)
}

// ShouldPodContainersBeTerminating implements PodWorkers.
func (w *Workers) ShouldPodContainersBeTerminating(uid types.UID) bool {
	return w.queryPod(uid, (*Machine).IsTerminationStarted, false, true)
}

// ShouldPodRuntimeBeRemoved implements PodWorkers.
func (w *Workers) ShouldPodRuntimeBeRemoved(uid types.UID) bool {
	return w.queryPod(uid, (*Machine).IsTerminated, false, true)
}

// ShouldPodContentBeRemoved implements PodWorkers.
func (w *Workers) ShouldPodContentBeRemoved(uid types.UID) bool {
	return w.queryPod(uid, func(m *Machine) bool {
		return m.IsEvicted() || (m.IsDeleted() && m.IsTerminated())
	}, false, true)
}

// IsPodForMirrorPodTerminatingByFullName implements PodWorkers.
func (w *Workers) IsPodForMirrorPodTerminatingByFullName(podFullName string) bool {
	w.staticMu.Lock()
	uid, ok := w.static.holder(podFullName)
	w.staticMu.Unlock()
	if !ok {
		return false
	}
	var terminating bool
	w.withPod(uid, func(m *Machine) { terminating = m.IsTerminationRequested() && !m.IsTerminated() })
	return terminating
}
