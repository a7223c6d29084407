package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/podlife/podlife/agent/gc"
	"github.com/podlife/podlife/agent/imagegc"
	"github.com/podlife/podlife/agent/logrotate"
	"github.com/podlife/podlife/agent/server"
	"github.com/podlife/podlife/agent/shutdown"
	"github.com/podlife/podlife/internal/sysctl"
	"github.com/podlife/podlife/metrics"
	"github.com/podlife/podlife/podmanager"
	"github.com/podlife/podlife/podmanager/source"
	"github.com/podlife/podlife/podworker"
	"github.com/podlife/podlife/runtime"
	"github.com/podlife/podlife/runtime/cri"
	"github.com/podlife/podlife/runtime/prober"
)

// Agent is the pod lifecycle part of a node agent: pod sources, the pod
// manager, admission, the pod workers with a runtime-backed Syncer, the
// housekeeping loop, mirror pods, status reporting and metrics. Create it with
// New and start it with Run.
type Agent struct {
	opts    Options
	log     logr.Logger
	clock   clock.WithTicker
	rt      runtime.Runtime
	cache   *runtime.MemoryCache
	relist  *runtime.Relister
	workers *podworker.Workers
	pods    *podmanager.Manager
	config  *source.Config
	sources []namedRunner
	metrics *metrics.Metrics
	status  *MemoryStatusReporter
	report  StatusReporter  // Options.StatusReporter's, the cluster's status manager, or nil
	cluster clusterParts    // what Options.Cluster adds
	prober  *prober.Manager // nil with Options.DisableProbes
	syncer  *syncer
	server  *server.Server     // Options.Server's, or nil
	logs    *logrotate.Manager // container log rotation, or nil
	gc      *gc.Manager        // container garbage collection, or nil
	images  *imagegc.Manager   // image garbage collection, or nil
	// shutdown is the graceful node shutdown (nodeshutdown.go), or nil.
	shutdown *shutdown.Manager
	sysctls  *sysctl.Allowlist

	// evictions: the eviction manager and its evictions (eviction.go).
	evictions evictionParts

	// workerCache is cache as the pod workers read it (stoppedstatus.go).
	workerCache *workerCache

	started atomic.Bool
	// runtimeEvents: the runtime records the container events itself,
	// Started included (runtime/cri); otherwise the agent records Started
	// when a relist sees a container running.
	runtimeEvents bool
	// forgotten are the pods the workers forgot in recent housekeeping
	// passes, with the relister's count of begun relists right after: a
	// listing numbered up to it may still show them. Only housekeeping
	// touches it, one pass at a time (on the sync loop, or a direct call
	// while Run is not running).
	forgotten map[types.UID]uint64

	// publishing orders the statuses published for a pod (publish.go): a
	// lock per pod, striped.
	publishing [publishStripes]sync.Mutex

	mu sync.Mutex
	// tracked are the pods the agent has handed to the pod workers, for
	// Pods; housekeeping prunes the ones the workers forgot.
	tracked map[types.UID]trackedPod
	// rejected are pods that admission rejected, with the reason.
	rejected map[types.UID]AdmitResult
	// exceeded are pods failed for their active deadline (deadline.go).
	exceeded map[types.UID]bool
	// pending are, per pod, the containers its last sync could not start:
	// deferred by the crash-loop back-off or failed with a reason
	// (syncer.go: noteStartFailures), for the next status.
	pending map[types.UID]pendingStarts
	// finishedDeleting are the pods whose final status was published while
	// they were being deleted (finished.go).
	finishedDeleting map[types.UID]bool
	// housekeepings counts completed housekeeping passes; lastHousekeeping
	// is the result of the last one.
	housekeepings    uint64
	lastHousekeeping HousekeepingResult
	// killStatus are the status edits of the pods' kills (killstatus.go).
	killStatus map[types.UID]killEdit
	// shutdownPods are the pods the node shutdown stopped (nodeshutdown.go).
	shutdownPods []*v1.Pod
}

type namedRunner struct {
	name string
	r    Runner
}

type trackedPod struct {
	name, namespace string
	runtimeOnly     bool
	// forgotten: the workers no longer knew the pod at the last
	// housekeeping pass (Agent.forgotten noted when).
	forgotten bool
}

// New validates opts, builds every component and returns the Agent. It
// starts no goroutine and talks to no runtime.
func New(opts Options) (*Agent, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	a := &Agent{
		opts:    opts,
		log:     opts.Logger,
		clock:   opts.Clock,
		rt:      opts.Runtime,
		cache:   runtime.NewCache(),
		pods:    podmanager.New(),
		tracked: map[types.UID]trackedPod{},

		finishedDeleting: map[types.UID]bool{},
		pending:          map[types.UID]pendingStarts{},
		rejected:         map[types.UID]AdmitResult{},
		exceeded:         map[types.UID]bool{},
		killStatus:       map[types.UID]killEdit{},
		forgotten:        map[types.UID]uint64{},
	}
	var err error
	// Validated above: cannot fail.
	if a.sysctls, err = sysctl.NewAllowlist(opts.AllowedUnsafeSysctls); err != nil {
		return nil, fmt.Errorf("agent: invalid options: AllowedUnsafeSysctls: %w", err)
	}
	if opts.Registerer != nil {
		m, err := metrics.New(metrics.Options{Registerer: opts.Registerer, Namespace: opts.MetricsNamespace})
		if err != nil {
			return nil, fmt.Errorf("agent: metrics: %w", err)
		}
		a.metrics = m
	}
	a.relist, err = runtime.NewRelister(runtime.RelisterOptions{
		Runtime:         opts.Runtime,
		Cache:           a.cache,
		Interval:        opts.RelistInterval,
		MinKickInterval: opts.RelistKickInterval,
		Workers:         opts.RelistWorkers,
		Clock:           opts.Clock,
		Logger:          opts.Logger.WithName("relister"),
		OnEvent:         a.handleRuntimeEvent,
	})
	if err != nil {
		return nil, a.cleanup(fmt.Errorf("agent: relister: %w", err))
	}
	// A pod worker waiting for a status newer than its last sync gets a
	// relist soon, not up to RelistInterval later.
	a.cache.OnWait(a.relist.Kick)
	a.syncer = &syncer{a: a}
	a.workerCache = newWorkerCache(a.cache)
	wopts := podworker.Options{
		Syncer:            a.syncer,
		Logger:            opts.Logger.WithName("podworker"),
		Clock:             opts.Clock,
		Cache:             a.workerCache,
		ResyncInterval:    opts.ResyncInterval,
		BackOffPeriod:     opts.BackOffPeriod,
		MaxBackOffPeriod:  opts.MaxBackOffPeriod,
		StatusWaitTimeout: opts.StatusWaitTimeout,
	}
	if a.metrics != nil {
		wopts.Metrics = a.metrics
	}
	a.workers, err = podworker.New(wopts)
	if err != nil {
		return nil, a.cleanup(fmt.Errorf("agent: pod workers: %w", err))
	}
	a.status = NewMemoryStatusReporter(a.workers)
	if opts.Server != nil {
		if err := a.newServer(); err != nil {
			return nil, a.cleanup(fmt.Errorf("agent: node server: %w", err))
		}
	}
	if opts.Cluster != nil {
		if err := a.newCluster(); err != nil {
			return nil, a.cleanup(fmt.Errorf("agent: cluster: %w", err))
		}
		opts = a.opts // newCluster fills MirrorClient, NodeIPs, Recorder
	}
	// The runtime records its own events (Pulled, Created, ...) when it
	// can (runtime/cri), on the agent's recorder.
	if s, ok := opts.Runtime.(interface{ SetRecorder(cri.EventRecorder) }); ok && opts.Recorder != nil {
		s.SetRecorder(opts.Recorder)
		a.runtimeEvents = true
	}
	if !opts.DisableProbes {
		if err := a.newProber(); err != nil {
			return nil, a.cleanup(fmt.Errorf("agent: prober: %w", err))
		}
		// A sidecar with a startup probe holds the next init container until
		// the probe passed (runtime/cri).
		if s, ok := opts.Runtime.(interface {
			SetStarted(func(types.UID, string) bool)
		}); ok {
			s.SetStarted(a.prober.Started)
		}
	}
	if opts.StatusReporter != nil {
		if a.report, err = opts.StatusReporter(a.workers); err != nil {
			return nil, a.cleanup(fmt.Errorf("agent: status reporter: %w", err))
		}
	}

	a.config, err = source.NewConfig(source.ConfigOptions{
		Clock:   opts.Clock,
		Logger:  opts.Logger.WithName("config"),
		OnError: a.sourceError,
	})
	if err != nil {
		return nil, a.cleanup(fmt.Errorf("agent: config: %w", err))
	}
	if opts.ManifestPath != "" {
		f, err := source.NewFile(a.config.Sink(podmanager.FileSource), source.FileOptions{
			Path:           opts.ManifestPath,
			NodeName:       opts.NodeName,
			ResyncInterval: opts.ManifestResyncInterval,
			Clock:          opts.Clock,
			Logger:         opts.Logger.WithName("file"),
			OnError:        a.sourceError,
		})
		if err != nil {
			return nil, a.cleanup(fmt.Errorf("agent: file source: %w", err))
		}
		a.sources = append(a.sources, namedRunner{podmanager.FileSource, f})
	}
	for _, s := range opts.Sources {
		r, err := s.New(a.config.Sink(s.Name))
		if err != nil {
			return nil, a.cleanup(fmt.Errorf("agent: source %q: %w", s.Name, err))
		}
		a.sources = append(a.sources, namedRunner{s.Name, r})
	}
	if opts.Cluster != nil {
		api, err := a.apiSource()
		if err != nil {
			return nil, a.cleanup(fmt.Errorf("agent: api source: %w", err))
		}
		a.sources = append(a.sources, api)
	}
	if len(a.sources) == 0 {
		// No source: readiness comes at once (an empty snapshot), so that
		// housekeeping still terminates what the runtime runs.
		a.sources = append(a.sources, namedRunner{"none", emptySource{a.config.Sink("none")}})
	}
	// Last: they register metrics, and nothing fails after them.
	if err := a.newContainerGC(); err != nil {
		return nil, a.cleanup(fmt.Errorf("agent: container gc: %w", err))
	}
	// Before the log rotation: its options are checked (and may fail)
	// before it registers its metrics, last.
	if err := a.newImageGC(); err != nil {
		return nil, a.cleanup(fmt.Errorf("agent: image garbage collection: %w", err))
	}
	// Before the log rotation: it registers metrics, and only fails on
	// options.
	if err := a.newEviction(); err != nil {
		return nil, a.cleanup(fmt.Errorf("agent: eviction: %w", err))
	}
	if err := a.newNodeShutdown(); err != nil {
		return nil, a.cleanup(fmt.Errorf("agent: node shutdown: %w", err))
	}
	// Last: it registers metrics, and nothing fails after it.
	if err := a.newLogRotation(); err != nil {
		return nil, a.cleanup(fmt.Errorf("agent: log rotation: %w", err))
	}
	return a, nil
}

// cleanup undoes what New registered, and returns err.
func (a *Agent) cleanup(err error) error {
	a.metrics.Unregister()
	if a.server != nil {
		_ = a.server.Close()
	}
	return err
}

// emptySource sends one empty snapshot and waits.
type emptySource struct{ sink source.Sink }

func (s emptySource) Run(ctx context.Context) error {
	if err := s.sink.Set(ctx, nil); err != nil {
		return err
	}
	<-ctx.Done()
	return ctx.Err()
}

// Run runs the agent until ctx is done: the pod sources, the runtime
// relister, the pod workers and the sync loop (config updates and
// housekeeping). It returns nil once ctx is done and every goroutine it
// started has returned; it returns an error, after stopping everything, if a
// component fails for good. Pods keep running in the runtime after Run
// returns, as containers outlive a kubelet restart. Run may be called once.
func (a *Agent) Run(ctx context.Context) error {
	if !a.started.CompareAndSwap(false, true) {
		return errors.New("agent: Run called twice")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	a.log.Info("agent starting", "node", a.opts.NodeName, "sources", len(a.sources))

	var wg sync.WaitGroup
	var firstErr error
	var errOnce sync.Once
	run := func(name string, f func(context.Context) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := f(ctx)
			if err != nil && ctx.Err() == nil {
				errOnce.Do(func() { firstErr = fmt.Errorf("agent: %s: %w", name, err) })
				cancel()
			}
		}()
	}
	run("pod workers", a.workers.Run)
	run("relister", a.relist.Run)
	for _, s := range a.sources {
		run("source "+s.name, s.r.Run)
	}
	if a.prober != nil {
		run("prober", a.prober.Run)
	}
	for _, r := range a.clusterRunners() {
		run(r.name, r.r.Run)
	}
	if a.server != nil {
		run("node server", a.server.Run)
	}
	if a.logs != nil {
		run("log rotation", a.logs.Run)
	}
	if a.gc != nil {
		run("container gc", a.gc.Run)
	}
	if a.images != nil {
		run("image garbage collection", a.images.Run)
	}
	if a.evictions.mgr != nil {
		run("eviction manager", a.evictions.mgr.Run)
	}
	if a.shutdown != nil {
		run("node shutdown", a.shutdown.Run)
	}
	run("sync loop", a.syncLoop)
	<-ctx.Done()
	wg.Wait()
	a.log.Info("agent stopped")
	return firstErr
}

// syncLoop is the kubelet's syncLoop without what is not pod lifecycle: it
// applies config updates and runs housekeeping once every source is ready.
// Both run on this goroutine, so no config update is applied during a
// housekeeping pass.
func (a *Agent) syncLoop(ctx context.Context) error {
	t := a.clock.NewTicker(a.opts.HousekeepingInterval)
	defer t.Stop()
	updates := a.config.Updates()
	for {
		select {
		case <-ctx.Done():
			return nil
		case u := <-updates:
			a.handleUpdate(ctx, u)
		case <-t.C():
			if !a.config.SeenAllSources() {
				a.log.V(4).Info("housekeeping skipped: sources not ready")
				continue
			}
			// Apply what the sources already delivered first: a pod of the
			// first snapshot must never look like a runtime orphan.
			a.drainUpdates(ctx, updates)
			if _, err := a.housekeeping(ctx, false); err != nil && ctx.Err() == nil {
				a.log.Error(err, "housekeeping failed")
			}
		}
	}
}

// drainUpdates applies every config update already waiting.
func (a *Agent) drainUpdates(ctx context.Context, updates <-chan source.PodUpdate) {
	for {
		select {
		case u := <-updates:
			a.handleUpdate(ctx, u)
		default:
			return
		}
	}
}

// sourceError counts a rejected manifest or pod and passes it on. The
// source (or the merge) that rejected it has logged it already, once per
// change of its content.
func (a *Agent) sourceError(err error) {
	name := ""
	if e, ok := errors.AsType[*source.Error](err); ok {
		name = e.Source
	}
	a.metrics.CountPodSourceRejected(name, source.Reason(err))
	if a.opts.OnSourceError != nil {
		a.opts.OnSourceError(err)
	}
}

// Workers returns the agent's pod workers, for queries (IsPodKnownTerminated,
// CouldHaveRunningContainers, PodInfo, ...). Send updates through the agent's
// sources, not through UpdatePod.
func (a *Agent) Workers() *podworker.Workers { return a.workers }

// PodManager returns the agent's desired state store. Treat it as read-only.
func (a *Agent) PodManager() *podmanager.Manager { return a.pods }

// Metrics returns the agent's metrics, nil without Options.Registerer.
func (a *Agent) Metrics() *metrics.Metrics { return a.metrics }

// StatusReporter returns the agent's in-memory status reporter, which holds
// every pod status the agent published.
func (a *Agent) StatusReporter() *MemoryStatusReporter { return a.status }

// SourcesReady reports whether every pod source has sent its first snapshot.
func (a *Agent) SourcesReady() bool { return a.config.SeenAllSources() }

// Housekeepings returns the number of completed housekeeping passes.
func (a *Agent) Housekeepings() uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.housekeepings
}
