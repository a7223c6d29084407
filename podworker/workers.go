package podworker

import (
	"context"
	"errors"
	"hash/maphash"
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

	shards    [numShards]shard
	shardSeed maphash.Seed // of shardIndex
	count     atomic.Int64 // records in all shards

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
	// gen counts the records added to and removed from pods; guarded by mu.
	// SyncKnownPods skips the orphan walk of a shard whose gen did not move
	// while it marked the desired pods, if it marked every record there.
	gen uint64
	_   [32]byte // keep shards on separate cache lines
}

// podRecord is one pod: its Machine plus what the driver needs to run it.
type podRecord struct {
	// desiredEpoch and createdEpoch hold the low 32 bits of SyncKnownPods
	// epochs: the last one that desired the pod, and the one current when the
	// record was created. Only equality with the current epoch is tested, so
	// a wrap could only hide an orphan from one call, for a record untouched
	// through 2^32 calls. They come first, next to what SyncKnownPods reads of
	// the Machine (see its field order).
	desiredEpoch uint32
	createdEpoch uint32
	m            Machine
	cancel       context.CancelFunc // cancels the running loop's Syncer context; nil when none
	lastSyncTime nanotime           // end of the previous Syncer call
	dueAt        int64              // pending scheduled re-delivery, 0 if none
	running      bool               // a goroutine owns the pod's work loop
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
		shardSeed:   maphash.MakeSeed(),
	}
	for i := range w.shards {
		w.shards[i].pods = make(map[types.UID]*podRecord)
	}
	return w, nil
}

func (w *Workers) shardFor(uid types.UID) *shard { return &w.shards[w.shardIndex(uid)] }

// shardIndex is the UID's maphash (seeded per Workers), modulo numShards.
// It replaced FNV-1a, a byte at a time: 36 multiply steps for an API UID,
// 4 % of a SyncKnownPods call at 100,000 pods.
func (w *Workers) shardIndex(uid types.UID) int {
	return int(maphash.String(w.shardSeed, string(uid)) % numShards)
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
		// Only what the cache has seen counts: an entry for the pod, or a
		// whole listing of the runtime (after which a missing pod has
		// nothing). A cache that has seen nothing yet (the runtime was down
		// when the agent started) answers a miss with an empty status, and
		// a pod born terminated on it would never have its containers
		// killed: it terminates instead, and the kill finds out.
		doneCtx, cancel := context.WithCancel(context.Background())
		cancel() // answer from what the cache holds, never wait
		st, err := w.cache.GetNewerThan(doneCtx, uid, time.Time{})
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
		sh.gen++
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
