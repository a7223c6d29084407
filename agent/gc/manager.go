package gc

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/runtime"
)

// Manager removes dead containers and sandboxes and orphaned pod folders,
// as the kubelet's container garbage collection. Create it with New and
// run it with Run, or call GarbageCollect for one pass.
type Manager struct {
	opts    Options
	log     logr.Logger
	metrics *metrics

	started atomic.Bool
	passes  atomic.Uint64
	// pass holds the token of the one pass that may run at a time: a
	// pass calls the runtime, so no mutex is held across it.
	pass chan struct{}

	// Touched only by the pass holding the token.
	failing     map[string]bool // objects whose removal failed, and was logged
	listFailing bool            // the last listing failed (and was logged)
	// locks of the PodFolderRoots (rootlock.go), and the roots whose
	// sharing with another agent was logged.
	locks  []*rootLock
	shared map[string]bool
}

// Result sums up one pass.
type Result struct {
	// Containers, Sandboxes and PodFolders count what was removed.
	Containers, Sandboxes, PodFolders int
	// Failed counts the removals that failed (each is retried at the
	// next pass).
	Failed int
	// SourcesReady: the pass could remove what deleted pods left and
	// sweep the pod folders (Options.SourcesReady held).
	SourcesReady bool
	// Duration of the pass, on Options.Clock.
	Duration time.Duration
}

// New validates opts and returns a Manager. It starts no goroutine and
// makes no call to the runtime.
func New(opts Options) (*Manager, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	m := &Manager{opts: opts, log: opts.Logger, pass: make(chan struct{}, 1), failing: map[string]bool{}, shared: map[string]bool{}}
	for _, r := range opts.PodFolderRoots {
		m.locks = append(m.locks, &rootLock{root: r})
	}
	var err error
	if m.metrics, err = newMetrics(opts.Registerer, opts.MetricsNamespace); err != nil {
		return nil, err
	}
	return m, nil
}

// Run collects at once, then every Options.Period, until ctx is done;
// then it returns nil, once the pass under way has ended. Until a pass
// ran with the sources ready, it checks them every second and makes that
// pass as soon as they are (the sweep of what a previous agent left).
// Run may be called once.
func (m *Manager) Run(ctx context.Context) error {
	if !m.started.CompareAndSwap(false, true) {
		return errors.New("gc: Run called twice")
	}
	p := m.opts.Policy
	m.log.V(2).Info("container garbage collection starting", "minAge", p.MinAge, "maxPerPodContainer", p.MaxPerPodContainer,
		"maxContainers", p.MaxContainers, "period", m.opts.Period, "podFolderRoots", m.opts.PodFolderRoots)
	defer m.Close()
	// Mark the roots as used by this agent before any pod has a folder
	// (failures are retried and logged by the passes).
	m.pass <- struct{}{}
	for _, l := range m.locks {
		_ = l.hold()
	}
	<-m.pass
	t := m.opts.Clock.NewTicker(m.opts.Period)
	defer t.Stop()
	res, _ := m.GarbageCollect(ctx) // errors are logged by the pass
	ready := res.SourcesReady
	var poll <-chan time.Time
	if !ready {
		pt := m.opts.Clock.NewTicker(m.opts.sourcesReadyPoll)
		defer pt.Stop()
		poll = pt.C()
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		case <-poll:
			if !m.opts.SourcesReady() {
				continue
			}
		}
		res, _ := m.GarbageCollect(ctx)
		if res.SourcesReady && !ready {
			ready, poll = true, nil
		}
	}
}

// Close releases the locks that mark the pod folder roots as used by this
// Manager (see the package doc); Run calls it when it returns. A later
// pass takes them again. It waits for a pass under way.
func (m *Manager) Close() error {
	m.pass <- struct{}{}
	defer func() { <-m.pass }()
	for _, l := range m.locks {
		l.drop()
	}
	return nil
}

// Passes returns the number of completed passes.
func (m *Manager) Passes() uint64 { return m.passes.Load() }

// GarbageCollect makes one pass (the kubelet's GarbageCollect): it lists
// the runtime and removes the dead containers and sandboxes beyond the
// policy, everything dead of deleted pods and, with the sources ready,
// the orphaned pod folders. Passes never overlap: a call waits for the
// one under way. It returns an error only when the runtime cannot be
// listed or ctx is done; a removal that fails is counted in
// Result.Failed, logged the first time in a row, and retried at the next
// pass.
func (m *Manager) GarbageCollect(ctx context.Context) (Result, error) {
	return m.collect(ctx, false)
}

// DeleteAllUnusedContainers makes a pass that also removes every dead
// container and sandbox of terminated pods that were not deleted (the
// kubelet's, for the eviction manager under disk pressure).
func (m *Manager) DeleteAllUnusedContainers(ctx context.Context) (Result, error) {
	return m.collect(ctx, true)
}

func (m *Manager) collect(ctx context.Context, evictNonDeleted bool) (Result, error) {
	select {
	case m.pass <- struct{}{}:
	case <-ctx.Done():
		return Result{}, ctx.Err()
	}
	defer func() { <-m.pass }()
	defer m.passes.Add(1)
	start := m.opts.Clock.Now()
	res := Result{SourcesReady: m.opts.SourcesReady()}

	pods, err := m.opts.Runtime.GetPods(ctx, true)
	if err != nil {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		err = fmt.Errorf("container garbage collection: list the runtime: %w", err)
		if !m.listFailing {
			m.log.Error(err, "container garbage collection failed")
			if m.opts.OnListFailure != nil {
				m.opts.OnListFailure(err)
			}
		} else {
			m.log.V(4).Info("container garbage collection still failing", "err", err.Error())
		}
		m.listFailing = true
		return res, err
	}
	if m.listFailing {
		m.log.V(2).Info("container garbage collection: listing the runtime works again")
		m.listFailing = false
	}

	fates := make(map[types.UID]podFate, len(pods))
	fate := func(p *runtime.Pod) podFate {
		f, ok := fates[p.ID]
		if !ok {
			f = fateOf(m.opts.Pods, p.ID, res.SourcesReady, evictNonDeleted)
			fates[p.ID] = f
		}
		return f
	}
	attempted := map[string]bool{}
	left := map[types.UID]int{} // objects of each pod that stay
	for _, p := range pods {
		left[p.ID] = len(p.Containers) + len(p.Sandboxes)
	}

	// Containers.
	dead := planContainers(pods, fate, m.opts.Policy, start)
	jobs := make([]job, len(dead))
	for i, d := range dead {
		jobs[i] = job{object: objectContainer, id: d.id.ID, pod: d.pod, name: d.name, do: func(ctx context.Context) error {
			if d.unknown {
				// It may still run: stop it first, as the kubelet.
				if err := m.opts.Runtime.KillContainer(ctx, d.id, 0); err != nil {
					return fmt.Errorf("stop the container in an unknown state: %w", err)
				}
			}
			return m.opts.Runtime.RemoveContainer(ctx, d.id.ID)
		}}
	}
	m.runAll(ctx, jobs)
	removed := map[string]bool{}
	for _, j := range jobs {
		if m.report(j, &res, attempted) {
			removed[j.id] = true
			left[j.pod.ID]--
		}
	}

	// Sandboxes, knowing which still hold a container.
	present := map[string]bool{}
	for _, p := range pods {
		for _, c := range p.Containers {
			if c != nil && !removed[c.ID.ID] {
				present[c.SandboxID] = true
			}
		}
	}
	sbs := planSandboxes(pods, fate, present)
	jobs = jobs[:0]
	for _, s := range sbs {
		jobs = append(jobs, job{object: objectSandbox, id: s.id, pod: s.pod, do: func(ctx context.Context) error {
			return m.opts.Runtime.RemoveSandbox(ctx, s.id)
		}})
	}
	m.runAll(ctx, jobs)
	for _, j := range jobs {
		if m.report(j, &res, attempted) {
			left[j.pod.ID]--
		}
	}

	// Pod folders, once the sources are ready.
	if res.SourcesReady && len(m.opts.PodFolderRoots) > 0 && ctx.Err() == nil {
		inRuntime := make(map[types.UID]bool, len(left))
		for uid, n := range left {
			if n > 0 {
				inRuntime[uid] = true
			}
		}
		m.sweep(ctx, inRuntime, &res, attempted)
	}

	// Forget the failures of objects no longer tried (gone meanwhile).
	for id := range m.failing {
		if !attempted[id] {
			delete(m.failing, id)
		}
	}
	res.Duration = m.opts.Clock.Since(start)
	m.metrics.pass(res.Duration.Seconds())
	kv := []any{"containers", res.Containers, "sandboxes", res.Sandboxes, "podFolders", res.PodFolders,
		"failed", res.Failed, "duration", res.Duration}
	if res.Containers+res.Sandboxes+res.PodFolders > 0 {
		m.log.V(2).Info("container garbage collection removed dead objects", kv...)
	} else {
		m.log.V(4).Info("container garbage collection succeeded", kv...)
	}
	return res, ctx.Err()
}

// sweep removes the orphaned pod folders of the roots this Manager is
// alone on.
func (m *Manager) sweep(ctx context.Context, inRuntime map[types.UID]bool, res *Result, attempted map[string]bool) {
	var roots []string
	var errs []error
	for _, l := range m.locks {
		if err := l.hold(); err != nil {
			errs = append(errs, err)
			continue
		}
		alone, release, err := l.exclusive()
		if err != nil {
			errs = append(errs, fmt.Errorf("pod folder root %s: %w", l.root, err))
			continue
		}
		if !alone {
			if !m.shared[l.root] {
				m.shared[l.root] = true
				m.log.Info("pod folder root used by another agent too: its orphaned folders are not swept while it is", "root", l.root)
			}
			continue
		}
		if m.shared[l.root] {
			delete(m.shared, l.root)
			m.log.Info("pod folder root no longer used by another agent: its orphaned folders are swept", "root", l.root)
		}
		defer release()
		roots = append(roots, l.root)
	}
	folders, err := findOrphanFolders(roots, m.opts.Pods, inRuntime)
	if err = errors.Join(append(errs, err)...); err != nil {
		j := job{object: objectPodFolder, id: "roots", err: err}
		m.report(j, res, attempted)
	}
	var jobs []job
	for _, f := range folders {
		jobs = append(jobs, job{object: objectPodFolder, id: f.path, uid: f.uid, do: func(context.Context) error {
			// Asked again right before: a pod of this UID may have
			// come meanwhile.
			if !orphaned(m.opts.Pods, f.uid) {
				return errSkipped
			}
			return removeFolder(f.path, m.opts.mounts)
		}})
	}
	m.runAll(ctx, jobs)
	for _, j := range jobs {
		m.report(j, res, attempted)
	}
}

// errSkipped: the object was not removed, and that is no failure.
var errSkipped = errors.New("skipped")

// job is one removal.
type job struct {
	object, id, name string
	pod              *runtime.Pod // nil for a folder
	uid              types.UID    // a folder's pod
	do               func(ctx context.Context) error
	err              error
	done             bool
}

// runAll runs the jobs with up to Options.Workers goroutines and returns
// once all have ended; jobs not begun when ctx ends are not done.
func (m *Manager) runAll(ctx context.Context, jobs []job) {
	work := make(chan *job)
	var wg sync.WaitGroup
	for range min(m.opts.Workers, len(jobs)) {
		wg.Go(func() {
			for j := range work {
				j.err, j.done = j.do(ctx), true
			}
		})
	}
	for i := range jobs {
		if ctx.Err() != nil {
			break
		}
		work <- &jobs[i]
	}
	close(work)
	wg.Wait()
}

// report logs and counts the outcome of a job and reports whether the
// object was removed. A failure is logged as an error the first time in
// a row, at V(4) after that.
func (m *Manager) report(j job, res *Result, attempted map[string]bool) bool {
	if !j.done && j.err == nil {
		return false // not begun: ctx ended
	}
	attempted[j.id] = true
	kv := []any{"object", j.object, "id", j.id}
	switch {
	case j.pod != nil:
		kv = append(kv, "pod", j.pod.Namespace+"/"+j.pod.Name, "podUID", j.pod.ID)
	case j.uid != "":
		kv = append(kv, "podUID", j.uid)
	}
	if j.name != "" {
		kv = append(kv, "container", j.name)
	}
	switch {
	case errors.Is(j.err, errSkipped):
		return false
	case j.err != nil:
		res.Failed++
		m.metrics.failed(j.object)
		if !m.failing[j.id] {
			m.failing[j.id] = true
			m.log.Error(j.err, "container garbage collection could not remove an object; it is retried at the next pass", kv...)
		} else {
			m.log.V(4).Info("container garbage collection still cannot remove an object", append(kv, "err", j.err.Error())...)
		}
		return false
	}
	if m.failing[j.id] {
		delete(m.failing, j.id)
		m.log.V(2).Info("container garbage collection removed an object that failed before", kv...)
	} else {
		m.log.V(4).Info("container garbage collection removed an object", kv...)
	}
	m.metrics.removed(j.object)
	switch j.object {
	case objectContainer:
		res.Containers++
	case objectSandbox:
		res.Sandboxes++
	case objectPodFolder:
		res.PodFolders++
	}
	return true
}
