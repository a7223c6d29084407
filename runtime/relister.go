package runtime

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// PodEventType says what the relister saw change in a pod.
type PodEventType string

// Pod event types, named as the kubelet's PLEG names them.
const (
	// ContainerStarted: a container or sandbox is running that was not before.
	ContainerStarted PodEventType = "ContainerStarted"
	// ContainerDied: a container or sandbox that was running has exited.
	ContainerDied PodEventType = "ContainerDied"
	// ContainerRemoved: a container or sandbox is gone from the runtime.
	ContainerRemoved PodEventType = "ContainerRemoved"
	// ContainerChanged: any other state change (created, unknown).
	ContainerChanged PodEventType = "ContainerChanged"
	// PodSync: the pod's status could not be read; the pod should be synced
	// anyway (the cache holds the error).
	PodSync PodEventType = "PodSync"
)

// PodEvent is one change the relister observed.
type PodEvent struct {
	ID   types.UID
	Type PodEventType
	// ContainerID is the runtime ID of the container or sandbox that changed
	// (empty for PodSync).
	ContainerID string
}

// RelisterOptions configures a Relister.
type RelisterOptions struct {
	// Runtime is listed. Required.
	Runtime Runtime
	// Cache receives the statuses. Required.
	Cache Cache
	// Interval between the end of a periodic relist and the start of the
	// next (as the kubelet's PLEG period). Default 1s.
	Interval time.Duration
	// Clock drives the interval and stamps the cache. It must be the clock
	// whose times the cache's readers pass to GetNewerThan. Default: the real
	// clock.
	Clock clock.WithTicker
	// Logger. The zero value discards.
	Logger logr.Logger
	// OnEvent, when set, is called once per observed change, after the cache
	// holds the pod's new status, from the goroutine that relisted and with no
	// lock held. It should hand the event off quickly (to a channel, a work
	// queue or PodWorkers.UpdatePod); relisting waits for it.
	OnEvent func(PodEvent)
	// MinKickInterval spaces the relists Kick asks for: one starts no
	// sooner than MinKickInterval, nor sooner than three times the last
	// relist's duration (so that kicked relists take at most a third of
	// the time), after the previous relist began. Default
	// DefaultMinKickInterval (100 ms); negative: Kick does nothing and
	// relists follow Interval alone, as the kubelet's PLEG.
	MinKickInterval time.Duration
	// Workers is how many changed pods a relist inspects at once (their
	// GetPodStatus calls run in parallel; the cache is written and OnEvent
	// called by the relisting goroutine alone). Default 8
	// (DefaultRelistWorkers); 1 inspects them one after the other.
	Workers int
}

// DefaultRelistInterval is the default RelisterOptions.Interval.
const DefaultRelistInterval = time.Second

// DefaultMinKickInterval is the default RelisterOptions.MinKickInterval.
const DefaultMinKickInterval = 100 * time.Millisecond

// DefaultRelistWorkers is the default RelisterOptions.Workers.
const DefaultRelistWorkers = 8

func (o RelisterOptions) withDefaults() RelisterOptions {
	if o.Interval == 0 {
		o.Interval = DefaultRelistInterval
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Workers == 0 {
		o.Workers = DefaultRelistWorkers
	}
	if o.MinKickInterval == 0 {
		o.MinKickInterval = DefaultMinKickInterval
	}
	return o
}

func (o RelisterOptions) validate() error {
	var errs []error
	if o.Runtime == nil {
		errs = append(errs, errors.New("Runtime is required"))
	}
	if o.Cache == nil {
		errs = append(errs, errors.New("Cache is required"))
	}
	if o.Interval < 0 {
		errs = append(errs, fmt.Errorf("Interval must not be negative, got %s", o.Interval))
	}
	if o.Workers < 0 {
		errs = append(errs, fmt.Errorf("Workers must not be negative, got %d", o.Workers))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid relister options: %w", err)
	}
	return nil
}

// Relister keeps a Cache up to date with the runtime, the way the kubelet's
// PLEG does: it lists every pod on an interval (Run) or on demand
// (ForceRefresh, ForceUpdateIfOlder), compares each container's state with the
// previous listing, reads the status of every pod that changed (or whose
// status could not be read last time), stores it in the cache, stamps the
// whole cache with the listing's start time (Cache.UpdateTime) and reports the
// changes through OnEvent.
//
// A pod that disappears from the runtime gets an empty status in the cache;
// the owner of the cache deletes the entry once it no longer needs it.
type Relister struct {
	opts RelisterOptions
	log  logr.Logger
	// kick has room for one request: Run relists soon (Kick).
	kick chan struct{}

	// sem serialises relists (capacity 1). Its holder owns the fields below
	// it; they are never touched without it.
	sem       chan struct{}
	previous  map[types.UID]*Pod
	reinspect map[types.UID]struct{}

	mu         sync.Mutex
	stored     map[types.UID]struct{} // pods given to Reinspect since the last relist took them
	lastRelist time.Time              // start time of the last successful relist
	begun      uint64                 // relists begun so far; each relist's number
	lastNumber uint64                 // the number of the last successful relist
	lastPods   []*Pod                 // what it listed
}

// NewRelister validates opts and returns a Relister. It starts nothing.
func NewRelister(opts RelisterOptions) (*Relister, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	r := &Relister{
		opts:      opts,
		log:       opts.Logger.WithName("relister"),
		sem:       make(chan struct{}, 1),
		kick:      make(chan struct{}, 1),
		previous:  map[types.UID]*Pod{},
		reinspect: map[types.UID]struct{}{},
	}
	return r, nil
}

// Run relists at once and then Interval after each relist ended, and when
// kicked (Kick), until ctx is done; it then returns nil. A failed relist is
// logged and retried at the next turn. As the kubelet's PLEG (wait.Until:
// the period starts when a relist returns), a relist that lasts longer
// than Interval (a listing of 100,000 pods takes seconds) is not followed
// by another at once: the relister never lists back to back.
func (r *Relister) Run(ctx context.Context) error {
	for {
		start := r.opts.Clock.Now()
		if err := r.ForceRefresh(ctx); err != nil && ctx.Err() == nil {
			r.log.Error(err, "relist failed")
		}
		gap := max(r.opts.MinKickInterval, 3*r.opts.Clock.Since(start))
		next := r.opts.Clock.NewTimer(r.opts.Interval)
		ok := true
		select {
		case <-ctx.Done():
			ok = false
		case <-next.C():
		case <-r.kick:
			ok = r.waitUntil(ctx, next.C(), start.Add(gap))
		}
		next.Stop()
		if !ok {
			return nil
		}
	}
}

// waitUntil waits until the clock reaches at, or tick fires, and reports
// false if ctx ended first.
func (r *Relister) waitUntil(ctx context.Context, tick <-chan time.Time, at time.Time) bool {
	d := at.Sub(r.opts.Clock.Now())
	if d <= 0 {
		return true
	}
	timer := r.opts.Clock.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-tick:
	case <-timer.C():
	}
	return true
}

// Kick asks Run for a relist soon rather than at the next Interval: as soon
// as MinKickInterval (and three times the last relist's duration) has
// passed since the last relist began. Kicks coalesce; Kick never blocks.
// A pod worker waiting for a status newer than its last sync (after it
// started or stopped containers) gets one in about MinKickInterval instead
// of up to Interval. With a negative MinKickInterval it does nothing.
func (r *Relister) Kick() {
	if r.opts.MinKickInterval < 0 {
		return
	}
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// LastRelist returns the start time of the last successful relist (zero
// before the first).
func (r *Relister) LastRelist() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastRelist
}

// ForceUpdateIfOlder relists unless a relist that started at or after minTime
// has already completed.
func (r *Relister) ForceUpdateIfOlder(ctx context.Context, minTime time.Time) error {
	if !r.LastRelist().Before(minTime) {
		return nil
	}
	if err := r.acquire(ctx); err != nil {
		return err
	}
	defer r.release()
	if !r.LastRelist().Before(minTime) {
		return nil
	}
	return r.relistHeld(ctx)
}

// Begun returns the number of relists begun so far. A relist numbered
// higher began after the call: see PodsAfter.
func (r *Relister) Begun() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.begun
}

// PodsAfter returns every pod in the runtime (GetPods(ctx, true)) as listed
// by the last successful relist, and that relist's number, provided the
// relist began after relist number n (a value Begun returned); otherwise it
// relists first. PodsAfter(ctx, 0) takes whatever was listed last;
// PodsAfter(ctx, r.Begun()) a relist that begins now or later. Numbers, not
// times, say what began after what, so a coarse or fake clock cannot blur
// it. The pods are the relister's own: read them, do not modify them.
func (r *Relister) PodsAfter(ctx context.Context, n uint64) ([]*Pod, uint64, error) {
	if pods, number, ok := r.listedAfter(n); ok {
		return pods, number, nil
	}
	if err := r.acquire(ctx); err != nil {
		return nil, 0, err
	}
	defer r.release()
	if pods, number, ok := r.listedAfter(n); ok {
		return pods, number, nil
	}
	if err := r.relistHeld(ctx); err != nil {
		return nil, 0, err
	}
	pods, number, _ := r.listedAfter(n)
	return pods, number, nil
}

func (r *Relister) listedAfter(n uint64) ([]*Pod, uint64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastPods, r.lastNumber, r.lastNumber > n
}

// Reinspect makes the next relist read the pod's status, even if its
// listing has not changed, when that listing lacks a sandbox or container
// the cached status names; it then tells the pod's worker (a PodSync event)
// if the sandboxes and containers the new status names, or their states,
// differ from the cached status. Call it after storing a status of the pod
// in the cache yourself: a status read after the relister's listing may
// name a sandbox or container the listing lacks, and the relister, which
// diffs listings, would not see that instance go if it went before the
// next listing.
func (r *Relister) Reinspect(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stored == nil {
		r.stored = map[types.UID]struct{}{}
	}
	r.stored[uid] = struct{}{}
}

// ForceRefresh relists now, waiting for a relist in progress to finish first.
func (r *Relister) ForceRefresh(ctx context.Context) error {
	if err := r.acquire(ctx); err != nil {
		return err
	}
	defer r.release()
	return r.relistHeld(ctx)
}

func (r *Relister) acquire(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("relist: %w", err)
	}
	select {
	case r.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("wait for relist: %w", ctx.Err())
	}
}

func (r *Relister) release() { <-r.sem }

// relistHeld does one relist; the caller holds sem.
func (r *Relister) relistHeld(ctx context.Context) error {
	r.mu.Lock()
	r.begun++
	number := r.begun
	r.mu.Unlock()
	ts := r.opts.Clock.Now()
	pods, err := r.opts.Runtime.GetPods(ctx, true)
	if err != nil {
		return fmt.Errorf("relist: %w", err)
	}
	current := make(map[types.UID]*Pod, len(pods))
	for _, p := range pods {
		current[p.ID] = p
	}

	var events []PodEvent
	changed := map[types.UID]struct{}{}
	for uid := range r.reinspect {
		changed[uid] = struct{}{}
	}
	r.mu.Lock()
	stored := r.stored
	r.stored = nil
	r.mu.Unlock()
	for uid := range stored {
		// Only a stored status that names what this listing lacks needs
		// reading again; one this listing agrees with is as good as read.
		if st, err := r.opts.Cache.Get(uid); err == nil && !unlisted(current[uid], st) {
			continue
		}
		changed[uid] = struct{}{}
		r.reinspect[uid] = struct{}{}
	}
	// The cached status of each pod read again without a change in its
	// listing, to tell its worker if the read changes what it names.
	var before map[types.UID]*PodStatus
	if len(r.reinspect) > 0 {
		before = make(map[types.UID]*PodStatus, len(r.reinspect))
		for uid := range r.reinspect {
			before[uid], _ = r.opts.Cache.Get(uid)
		}
	}
	for uid, p := range current {
		ev := diffPod(uid, r.previous[uid], p)
		if len(ev) > 0 {
			changed[uid] = struct{}{}
			events = append(events, ev...)
			delete(before, uid) // its worker hears of it anyway
		}
	}
	for uid, old := range r.previous {
		if _, ok := current[uid]; ok {
			continue
		}
		events = append(events, diffPod(uid, old, nil)...)
		changed[uid] = struct{}{}
		delete(before, uid)
	}

	// Pods gone from the runtime get an empty status; the others are
	// inspected, in parallel.
	var inspect []*Pod
	for uid := range changed {
		if p, ok := current[uid]; ok {
			// A status already cached that names exactly what the
			// listing shows, in the same states, is what a read would
			// give: the agent read it itself after starting or killing
			// the pod. It is stamped with the listing's time instead.
			if st, err := r.opts.Cache.Get(uid); err == nil && listingAgrees(p, st) {
				r.opts.Cache.Set(uid, st, nil, ts)
				continue
			}
			inspect = append(inspect, p)
			continue
		}
		old := r.previous[uid]
		if old == nil { // a pod to reinspect that has gone meanwhile
			updated := r.opts.Cache.Set(uid, &PodStatus{ID: uid}, nil, ts)
			if prev, ok := before[uid]; ok && updated && !sameInstances(prev, &PodStatus{ID: uid}) {
				events = append(events, PodEvent{ID: uid, Type: PodSync})
			}
			continue
		}
		r.opts.Cache.Set(uid, &PodStatus{ID: uid, Name: old.Name, Namespace: old.Namespace, TimeStamp: ts}, nil, ts)
	}
	// Every pod but the changed ones is as fresh as the listing now: their
	// waiters need not wait for the changed pods' reads.
	if lc, ok := r.opts.Cache.(ListingCache); ok {
		lc.UpdateTimeExcept(ts, changed)
	}
	reinspect := map[types.UID]struct{}{}
	err = r.inspect(ctx, inspect, func(p *Pod, status *PodStatus, err error) {
		if err != nil {
			r.log.V(4).Info("pod status not readable", "pod", p.Namespace+"/"+p.Name, "podUID", p.ID, "err", err)
			reinspect[p.ID] = struct{}{}
			events = append(events, PodEvent{ID: p.ID, Type: PodSync})
		} else if unlisted(p, status) {
			// The status names a sandbox or container created after
			// the listing: the listing kept for the next diff lacks it,
			// so its removal before the next relist would change no
			// listing and leave this status in the cache for good.
			reinspect[p.ID] = struct{}{}
		}
		updated := r.opts.Cache.Set(p.ID, status, err, ts)
		if prev, ok := before[p.ID]; ok && err == nil && updated && !sameInstances(prev, status) {
			events = append(events, PodEvent{ID: p.ID, Type: PodSync})
		}
	})
	if err != nil {
		r.mu.Lock()
		for uid := range stored {
			if r.stored == nil {
				r.stored = map[types.UID]struct{}{}
			}
			r.stored[uid] = struct{}{} // for the next relist to judge
		}
		r.mu.Unlock()
		return fmt.Errorf("relist: %w", err)
	}
	r.opts.Cache.UpdateTime(ts)
	r.previous = current
	r.reinspect = reinspect
	r.mu.Lock()
	r.lastRelist = ts
	r.lastNumber, r.lastPods = number, pods
	r.mu.Unlock()

	if r.opts.OnEvent != nil {
		for _, e := range events {
			r.opts.OnEvent(e)
		}
	}
	r.log.V(5).Info("relisted", "pods", len(current), "events", len(events))
	return nil
}

// inspect reads the status of every pod, with up to Options.Workers
// GetPodStatus calls at once, and calls done for each pod, on the calling
// goroutine, as its status arrives. It returns ctx's error, once every
// worker has returned, if ctx ends first (done is then not called for the
// pods not read).
func (r *Relister) inspect(ctx context.Context, pods []*Pod, done func(p *Pod, status *PodStatus, err error)) error {
	if len(pods) == 0 {
		return ctx.Err()
	}
	type result struct {
		pod    *Pod
		status *PodStatus
		err    error
	}
	workers := min(r.opts.Workers, len(pods))
	jobs := make(chan *Pod)
	results := make(chan result, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range jobs {
				st, err := r.opts.Runtime.GetPodStatus(ctx, p.ID, p.Name, p.Namespace)
				results <- result{p, st, err}
			}
		}()
	}
	// The feeder: it stops handing out pods when ctx ends, and closes jobs
	// so that the workers return.
	wg.Add(1)
	fed := make(chan int, 1)
	go func() {
		defer wg.Done()
		defer close(jobs)
		n := 0
		defer func() { fed <- n }()
		for _, p := range pods {
			select {
			case jobs <- p:
				n++
			case <-ctx.Done():
				return
			}
		}
	}()
	received, want := 0, -1
	for want < 0 || received < want {
		select {
		case res := <-results:
			received++
			if ctx.Err() == nil {
				done(res.pod, res.status, res.err)
			}
		case n := <-fed:
			want = n
		}
	}
	wg.Wait()
	return ctx.Err()
}

// diffPod compares the containers and sandboxes of one pod between two
// listings (either may be nil) and returns the events in a stable order:
// sandboxes first, then containers, each in listing order, then removals.
func diffPod(uid types.UID, old, cur *Pod) []PodEvent {
	if unchanged(old, cur) {
		return nil
	}
	oldStates := map[string]ContainerState{}
	var oldOrder []string
	if old != nil {
		for _, c := range append(append([]*Container{}, old.Sandboxes...), old.Containers...) {
			oldStates[c.ID.ID] = c.State
			oldOrder = append(oldOrder, c.ID.ID)
		}
	}
	var events []PodEvent
	seen := map[string]bool{}
	if cur != nil {
		for _, c := range append(append([]*Container{}, cur.Sandboxes...), cur.Containers...) {
			seen[c.ID.ID] = true
			before, existed := oldStates[c.ID.ID]
			if existed && before == c.State {
				continue
			}
			events = append(events, PodEvent{ID: uid, Type: stateEvent(c.State), ContainerID: c.ID.ID})
		}
	}
	for _, id := range oldOrder {
		if !seen[id] {
			events = append(events, PodEvent{ID: uid, Type: ContainerRemoved, ContainerID: id})
		}
	}
	return events
}

// unchanged reports, without allocating, whether two listings of a pod hold
// the same sandboxes and containers in the same order and states: the
// common case, which diffPod then need not work out in full.
func unchanged(old, cur *Pod) bool {
	if old == nil || cur == nil || len(old.Sandboxes) != len(cur.Sandboxes) || len(old.Containers) != len(cur.Containers) {
		return false
	}
	same := func(a, b []*Container) bool {
		for i := range a {
			if a[i].ID.ID != b[i].ID.ID || a[i].State != b[i].State {
				return false
			}
		}
		return true
	}
	return same(old.Sandboxes, cur.Sandboxes) && same(old.Containers, cur.Containers)
}

// listingAgrees reports whether status names the sandboxes and containers
// of the listing p, no more, no fewer, each in the state the listing shows
// (a listed sandbox runs when it is ready).
func listingAgrees(p *Pod, status *PodStatus) bool {
	if status == nil || len(p.Sandboxes) != len(status.SandboxStatuses) || len(p.Containers) != len(status.ContainerStatuses) {
		return false
	}
	for _, sb := range p.Sandboxes {
		want := SandboxStateNotReady
		if sb.State == ContainerStateRunning {
			want = SandboxStateReady
		}
		if !slices.ContainsFunc(status.SandboxStatuses, func(s *SandboxStatus) bool { return s.ID == sb.ID.ID && s.State == want }) {
			return false
		}
	}
	for _, c := range p.Containers {
		if !slices.ContainsFunc(status.ContainerStatuses, func(s *ContainerStatus) bool { return s.ID.ID == c.ID.ID && s.State == c.State }) {
			return false
		}
	}
	return true
}

// unlisted reports whether status names a sandbox or container that the
// listing p (nil: the pod is not listed) lacks.
func unlisted(p *Pod, status *PodStatus) bool {
	if status == nil {
		return false
	}
	if p == nil {
		return len(status.SandboxStatuses) > 0 || len(status.ContainerStatuses) > 0
	}
	for _, sb := range status.SandboxStatuses {
		if !slices.ContainsFunc(p.Sandboxes, func(c *Container) bool { return c.ID.ID == sb.ID }) {
			return true
		}
	}
	for _, cs := range status.ContainerStatuses {
		if !slices.ContainsFunc(p.Containers, func(c *Container) bool { return c.ID.ID == cs.ID.ID }) {
			return true
		}
	}
	return false
}

// sameInstances reports whether two statuses of a pod name the same
// sandboxes and containers in the same states.
func sameInstances(a, b *PodStatus) bool {
	if a == nil || b == nil {
		return a == b
	}
	if len(a.SandboxStatuses) != len(b.SandboxStatuses) || len(a.ContainerStatuses) != len(b.ContainerStatuses) {
		return false
	}
	for _, x := range a.SandboxStatuses {
		if !slices.ContainsFunc(b.SandboxStatuses, func(y *SandboxStatus) bool { return x.ID == y.ID && x.State == y.State }) {
			return false
		}
	}
	for _, x := range a.ContainerStatuses {
		if !slices.ContainsFunc(b.ContainerStatuses, func(y *ContainerStatus) bool { return x.ID == y.ID && x.State == y.State }) {
			return false
		}
	}
	return true
}

func stateEvent(s ContainerState) PodEventType {
	switch s {
	case ContainerStateRunning:
		return ContainerStarted
	case ContainerStateExited:
		return ContainerDied
	default:
		return ContainerChanged
	}
}
