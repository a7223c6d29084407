package imagegc

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/runtime"
)

// The kubelet's event reasons (pkg/kubelet/events).
const (
	EventImageGCFailed       = "ImageGCFailed"
	EventFreeDiskSpaceFailed = "FreeDiskSpaceFailed"
	EventInvalidDiskCapacity = "InvalidDiskCapacity"
)

// Manager garbage collects a runtime's unused images, as the kubelet's
// image GC manager, and keeps the image list of the Node's status. Create
// it with New and run it with Run; GarbageCollect and DeleteUnusedImages
// make a pass at once (for an eviction manager).
type Manager struct {
	opts    Options
	log     logr.Logger
	metrics *metrics
	stats   StatsFunc
	pinned  map[string]bool // Options.PinnedImages, normalized
	nodeRef *v1.ObjectReference

	started atomic.Bool
	passes  atomic.Uint64
	// pass holds the token of the one pass (detection or collection) that
	// may run at a time: a pass calls the runtime, so no mutex is held
	// across it.
	pass chan struct{}

	mu sync.Mutex
	// records of the images present, by ID.
	records map[string]*record
	// images is the last listing, largest first.
	images []runtime.Image
	// began is when Run started (the kubelet's beganGC): images are
	// removed for age only MaxAge after it. Zero: never.
	began time.Time

	// Touched only by the pass holding the token.
	gcFailures    int             // collection passes failed in a row
	statsOff      bool            // the stats are unsupported (said once)
	statsRead     bool            // the last collection pass read the stats
	warned        map[string]bool // warning events sent in the current row of failed passes
	detectFailing bool
}

// record is what the Manager knows of an image.
type record struct {
	firstDetected, lastUsed time.Time
	size                    int64
	pinned                  bool
	// removeFailing: the last removal of the image failed (and was
	// logged).
	removeFailing bool
}

// candidate is an image that may be removed.
type candidate struct {
	id string
	record
}

// New validates opts and returns a Manager. It starts no goroutine and
// makes no call to the runtime.
func New(opts Options) (*Manager, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	m := &Manager{
		opts:    opts,
		log:     opts.Logger,
		stats:   opts.Stats,
		pinned:  map[string]bool{},
		pass:    make(chan struct{}, 1),
		records: map[string]*record{},
		warned:  map[string]bool{},
	}
	if m.stats == nil {
		m.stats = CRIStats(opts.Runtime.(FsInfoRuntime))
	}
	for _, p := range opts.PinnedImages {
		m.pinned[normalizeRef(p)] = true
	}
	if opts.NodeName != "" {
		// The kubelet's reference to its node.
		m.nodeRef = &v1.ObjectReference{Kind: "Node", Name: opts.NodeName, UID: types.UID(opts.NodeName)}
	}
	var err error
	if m.metrics, err = newMetrics(opts.Registerer, opts.MetricsNamespace); err != nil {
		return nil, err
	}
	return m, nil
}

// Run detects the images at once and every Options.DetectPeriod, lists
// them (for the Node's status) every Options.ImageListPeriod, and garbage
// collects at once and every Options.GCPeriod (unless
// HighThresholdPercent is 100), until ctx is done; then it returns nil,
// once the pass under way has ended. Run may be called once.
func (m *Manager) Run(ctx context.Context) error {
	if !m.started.CompareAndSwap(false, true) {
		return errors.New("imagegc: Run called twice")
	}
	m.mu.Lock()
	m.began = m.opts.Clock.Now()
	m.mu.Unlock()
	gcOn := m.opts.HighThresholdPercent < 100
	m.log.V(2).Info("image garbage collection starting", "highThreshold", m.opts.HighThresholdPercent,
		"lowThreshold", m.opts.LowThresholdPercent, "minAge", m.opts.MinAge, "maxAge", m.opts.MaxAge, "period", m.opts.GCPeriod)
	if !gcOn {
		m.log.V(2).Info("ImageGCHighThresholdPercent is set 100, Disable image GC")
	}
	detect := m.opts.Clock.NewTicker(m.opts.DetectPeriod)
	defer detect.Stop()
	list := m.opts.Clock.NewTicker(m.opts.ImageListPeriod)
	defer list.Stop()
	var gcC <-chan time.Time
	if gcOn {
		gc := m.opts.Clock.NewTicker(m.opts.GCPeriod)
		defer gc.Stop()
		gcC = gc.C()
	}
	m.Detect(ctx)
	if gcOn {
		m.collectAndReport(ctx)
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-detect.C():
			m.Detect(ctx)
		case <-list.C():
			m.refreshImageList(ctx)
		case <-gcC:
			m.collectAndReport(ctx)
		}
	}
}

// Passes returns the number of completed passes (detections and
// collections, of Run and of the callers).
func (m *Manager) Passes() uint64 { return m.passes.Load() }

// acquire takes the pass token; release gives it back.
func (m *Manager) acquire(ctx context.Context) error {
	select {
	case m.pass <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (m *Manager) release() {
	m.passes.Add(1)
	<-m.pass
}

// Detect lists the images and the containers using them: it refreshes
// the image list of the Node's status and the records of each image's
// first sight and last use. A failure is logged once in a row and
// returned.
func (m *Manager) Detect(ctx context.Context) error {
	if err := m.acquire(ctx); err != nil {
		return err
	}
	defer m.release()
	_, err := m.detectLocked(ctx, m.opts.Clock.Now())
	if err != nil && ctx.Err() == nil {
		if !m.detectFailing {
			m.log.Error(err, "Failed to monitor images")
		} else {
			m.log.V(4).Info("still failing to monitor images", "err", err.Error())
		}
		m.detectFailing = true
	} else if err == nil && m.detectFailing {
		m.log.V(2).Info("monitoring images works again")
		m.detectFailing = false
	}
	return err
}

// refreshImageList lists the images for the Node's status (the kubelet's
// image cache refresh); a failure is logged at V(2) and keeps the last list.
func (m *Manager) refreshImageList(ctx context.Context) {
	if err := m.acquire(ctx); err != nil {
		return
	}
	defer m.release()
	if _, err := m.listImagesLocked(ctx); err != nil && ctx.Err() == nil {
		m.log.V(2).Info("Failed to update image list", "err", err.Error())
	}
}

// listImagesLocked (holding the pass token) lists the images and keeps them,
// largest first, as the image list.
func (m *Manager) listImagesLocked(ctx context.Context) ([]runtime.Image, error) {
	images, err := m.opts.Runtime.ListImages(ctx)
	if err != nil {
		return nil, fmt.Errorf("list images: %w", err)
	}
	sorted := slices.Clone(images)
	slices.SortStableFunc(sorted, func(a, b runtime.Image) int {
		if a.Size != b.Size {
			if a.Size > b.Size {
				return -1
			}
			return 1
		}
		return -strings.Compare(a.ID, b.ID)
	})
	m.mu.Lock()
	m.images = sorted
	m.mu.Unlock()
	return images, nil
}

// detectLocked (holding the pass token) lists the images and the
// containers, and returns the IDs of the images in use.
func (m *Manager) detectLocked(ctx context.Context, now time.Time) (map[string]bool, error) {
	images, err := m.listImagesLocked(ctx)
	if err != nil {
		return nil, err
	}

	pods, err := m.opts.Runtime.GetPods(ctx, true)
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	inUse := usedImages(images, pods)

	m.mu.Lock()
	defer m.mu.Unlock()
	present := make(map[string]bool, len(images))
	for _, img := range images {
		present[img.ID] = true
		r := m.records[img.ID]
		if r == nil {
			r = &record{firstDetected: now}
			m.records[img.ID] = r
		}
		// A clock set back leaves no record in the future.
		if r.firstDetected.After(now) {
			r.firstDetected = now
		}
		if r.lastUsed.After(now) {
			r.lastUsed = now
		}
		if inUse[img.ID] {
			r.lastUsed = now
		}
		r.size = img.Size
		r.pinned = img.Pinned || m.pinnedByName(img)
	}
	for id := range m.records {
		if !present[id] {
			delete(m.records, id)
		}
	}
	return inUse, nil
}

// usedImages returns the IDs of the images a container (running or not)
// or sandbox was created from: by the image ID the runtime gives, or by
// the reference the container names.
func usedImages(images []runtime.Image, pods []*runtime.Pod) map[string]bool {
	byRef := map[string]string{}
	for _, img := range images {
		byRef[img.ID] = img.ID
		for _, r := range img.RepoTags {
			byRef[r] = img.ID
		}
		for _, r := range img.RepoDigests {
			byRef[r] = img.ID
		}
	}
	inUse := map[string]bool{}
	mark := func(c *runtime.Container) {
		if c == nil {
			return
		}
		for _, ref := range []string{c.ImageID, c.Image} {
			if ref == "" {
				continue
			}
			inUse[ref] = true
			if id, ok := byRef[ref]; ok {
				inUse[id] = true
			} else if id, ok := byRef[normalizeRef(ref)]; ok {
				inUse[id] = true
			}
		}
	}
	for _, p := range pods {
		if p == nil {
			continue
		}
		for _, c := range p.Containers {
			mark(c)
		}
		for _, c := range p.Sandboxes {
			mark(c)
		}
	}
	return inUse
}

// pinnedByName reports whether Options.PinnedImages names img.
func (m *Manager) pinnedByName(img runtime.Image) bool {
	if len(m.pinned) == 0 {
		return false
	}
	if m.pinned[img.ID] {
		return true
	}
	for _, r := range img.RepoTags {
		if m.pinned[r] || m.pinned[normalizeRef(r)] {
			return true
		}
	}
	for _, r := range img.RepoDigests {
		if m.pinned[r] || m.pinned[normalizeRef(r)] {
			return true
		}
	}
	return false
}

// evictionOrderLocked (holding the pass token) detects the images and
// returns those that may be removed, least recently used first (then
// first detected first): neither in use nor pinned.
func (m *Manager) evictionOrderLocked(ctx context.Context, freeTime time.Time) ([]candidate, error) {
	inUse, err := m.detectLocked(ctx, freeTime)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]candidate, 0, len(m.records))
	for id, r := range m.records {
		if inUse[id] || r.pinned {
			continue
		}
		out = append(out, candidate{id: id, record: *r})
	}
	sortEvictionOrder(out)
	return out, nil
}

// sortEvictionOrder sorts by last use, then by first detection (then by
// ID, for a stable order).
func sortEvictionOrder(cs []candidate) {
	slices.SortFunc(cs, func(a, b candidate) int {
		if c := a.lastUsed.Compare(b.lastUsed); c != 0 {
			return c
		}
		if c := a.firstDetected.Compare(b.firstDetected); c != 0 {
			return c
		}
		return strings.Compare(a.id, b.id)
	})
}

// GarbageCollect makes one collection pass, as the kubelet's: unused
// images older than MaxAge go first; then, if the image file system's
// usage is at or above HighThresholdPercent, unused images older than
// MinAge are removed, least recently used first, until the usage is down
// to LowThresholdPercent. It returns an error when the stats cannot be
// read or are not sensible (nothing is removed for space then), when a
// removal failed, or when not enough could be freed; the failure is
// logged by Run, not here. Passes never overlap: a call waits for the one
// under way.
func (m *Manager) GarbageCollect(ctx context.Context) error {
	if err := m.acquire(ctx); err != nil {
		return err
	}
	defer m.release()
	return m.garbageCollectLocked(ctx)
}

func (m *Manager) garbageCollectLocked(ctx context.Context) error {
	err := m.collectLocked(ctx)
	if err == nil {
		// The row of failures, if any, has ended.
		clear(m.warned)
	}
	return err
}

func (m *Manager) collectLocked(ctx context.Context) error {
	m.statsRead = false
	freeTime := m.opts.Clock.Now()
	images, err := m.evictionOrderLocked(ctx, freeTime)
	if err != nil {
		return err
	}
	if images, err = m.freeOldImagesLocked(ctx, images, freeTime); err != nil {
		return err
	}
	st, err := m.stats(ctx)
	if err != nil {
		return fmt.Errorf("image file system stats: %w", err)
	}
	m.statsRead = true
	capacity, available := st.CapacityBytes, st.AvailableBytes
	if capacity == 0 {
		err := errors.New("invalid capacity 0 on image filesystem")
		m.warnLocked(EventInvalidDiskCapacity, err.Error())
		return err
	}
	if available > capacity {
		m.log.V(2).Info("Availability is larger than capacity", "available", available, "capacity", capacity)
		available = capacity
	}
	usagePercent := 100 - int(mulDiv(available, 100, capacity))
	if usagePercent < m.opts.HighThresholdPercent {
		m.log.V(4).Info("image file system usage under the high threshold", "usage", usagePercent,
			"highThreshold", m.opts.HighThresholdPercent, "mountpoint", st.Mountpoint)
		return nil
	}
	target := mulDiv(capacity, uint64(100-m.opts.LowThresholdPercent), 100)
	amountToFree := int64(0)
	if target > available {
		amountToFree = int64(min(target-available, math.MaxInt64))
	}
	m.log.Info("Disk usage on image filesystem is over the high threshold, trying to free bytes down to the low threshold",
		"usage", usagePercent, "highThreshold", m.opts.HighThresholdPercent, "amountToFree", amountToFree,
		"lowThreshold", m.opts.LowThresholdPercent, "mountpoint", st.Mountpoint)
	freed, err := m.freeSpaceLocked(ctx, amountToFree, freeTime, images)
	if err != nil {
		return err
	}
	if freed < amountToFree {
		err := fmt.Errorf("Failed to garbage collect required amount of images. Attempted to free %d bytes, but only found %d bytes eligible to free.", amountToFree, freed)
		m.warnLocked(EventFreeDiskSpaceFailed, err.Error())
		return err
	}
	return nil
}

// mulDiv returns a*b/c without overflow (c > 0, and a*b/c fits: b <= c
// or a <= c).
func mulDiv(a, b, c uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	if hi >= c {
		return math.MaxUint64
	}
	q, _ := bits.Div64(hi, lo, c)
	return q
}

// warnLocked records a warning event about the node, once per reason in
// a row of failed passes.
func (m *Manager) warnLocked(reason, msg string) {
	if m.warned[reason] {
		return
	}
	m.warned[reason] = true
	if m.opts.Recorder != nil {
		m.opts.Recorder.Eventf(m.nodeRef, v1.EventTypeWarning, reason, "%s", msg)
	}
}

// freeOldImagesLocked removes the images unused for longer than MaxAge
// (once the Manager has run that long) and returns the others.
func (m *Manager) freeOldImagesLocked(ctx context.Context, images []candidate, freeTime time.Time) ([]candidate, error) {
	m.mu.Lock()
	began := m.began
	m.mu.Unlock()
	if m.opts.MaxAge == 0 || began.IsZero() || freeTime.Sub(began) <= m.opts.MaxAge {
		return images, nil
	}
	var errs []error
	remaining := make([]candidate, 0, len(images))
	for _, img := range images {
		// An image never seen in use counts from its first sight.
		last := img.lastUsed
		if last.IsZero() {
			last = img.firstDetected
		}
		if freeTime.Sub(last) > m.opts.MaxAge {
			if err := m.freeImageLocked(ctx, img, ReasonAge); err != nil {
				errs = append(errs, err)
				remaining = append(remaining, img)
			}
			continue
		}
		remaining = append(remaining, img)
	}
	if len(errs) > 0 {
		return remaining, fmt.Errorf("wanted to free images older than %v, encountered errors in image deletion: %w", m.opts.MaxAge, errors.Join(errs...))
	}
	return remaining, nil
}

// DeleteUnusedImages removes every image neither in use nor pinned and
// older than MinAge, least recently used first, and returns the bytes
// freed (also with an error, when some removals failed). An eviction
// manager calls it to reclaim the image file system.
func (m *Manager) DeleteUnusedImages(ctx context.Context) (int64, error) {
	if err := m.acquire(ctx); err != nil {
		return 0, err
	}
	defer m.release()
	m.log.Info("Attempting to delete unused images")
	freeTime := m.opts.Clock.Now()
	images, err := m.evictionOrderLocked(ctx, freeTime)
	if err != nil {
		return 0, err
	}
	return m.freeSpaceLocked(ctx, math.MaxInt64, freeTime, images)
}

// freeSpaceLocked removes images in the order given until bytesToFree
// are freed, skipping those used at or after freeTime and those first
// seen less than MinAge ago. It returns the bytes freed, and an error
// when some removals failed (the others went on).
func (m *Manager) freeSpaceLocked(ctx context.Context, bytesToFree int64, freeTime time.Time, images []candidate) (int64, error) {
	var errs []error
	var freed int64
	for _, img := range images {
		if ctx.Err() != nil {
			errs = append(errs, ctx.Err())
			break
		}
		if !img.lastUsed.Before(freeTime) && !img.lastUsed.IsZero() {
			m.log.V(5).Info("Image ID was used too recently, not eligible for garbage collection", "imageID", img.id, "lastUsed", img.lastUsed, "freeTime", freeTime)
			continue
		}
		if age := freeTime.Sub(img.firstDetected); age < m.opts.MinAge {
			m.log.V(5).Info("Image ID's age is less than the policy's minAge, not eligible for garbage collection", "imageID", img.id, "age", age, "minAge", m.opts.MinAge)
			continue
		}
		if err := m.freeImageLocked(ctx, img, ReasonSpace); err != nil {
			errs = append(errs, err)
			continue
		}
		freed += img.size
		if freed >= bytesToFree {
			break
		}
	}
	if len(errs) > 0 {
		return freed, fmt.Errorf("wanted to free %d bytes, but freed %d bytes space with errors in image deletion: %w", bytesToFree, freed, errors.Join(errs...))
	}
	return freed, nil
}

// freeImageLocked removes one image. Its removal is logged at info level,
// but at V(4) when its previous removal failed: a runtime that keeps
// refusing it is not a loop of log lines.
func (m *Manager) freeImageLocked(ctx context.Context, img candidate, reason string) error {
	kv := []any{"imageID", img.id, "size", img.size, "reason", reason}
	if img.removeFailing {
		m.log.V(4).Info("Removing image to free bytes (its last removal failed)", kv...)
	} else {
		m.log.Info("Removing image to free bytes", kv...)
	}
	err := m.opts.Runtime.RemoveImage(ctx, img.id)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil {
		if r := m.records[img.id]; r != nil {
			r.removeFailing = true
		}
		return fmt.Errorf("remove image %s: %w", img.id, err)
	}
	delete(m.records, img.id)
	m.images = slices.DeleteFunc(slices.Clone(m.images), func(i runtime.Image) bool { return i.ID == img.id })
	m.metrics.removed(reason)
	return nil
}

// collectAndReport runs a collection pass and logs its outcome as the
// kubelet: the first failure in a row as "failed once", the second as
// "failed multiple times in a row" with a Warning ImageGCFailed event,
// later ones at V(4); unsupported stats are said once.
func (m *Manager) collectAndReport(ctx context.Context) {
	if m.acquire(ctx) != nil {
		return
	}
	defer m.release()
	err := m.garbageCollectLocked(ctx)
	if ctx.Err() != nil {
		return
	}
	switch {
	case errors.Is(err, ErrUnsupported):
		if !m.statsOff {
			m.log.Info("Image garbage collection is off: the runtime gives no usage of its image file system", "err", err.Error())
			m.statsOff = true
		}
		return
	case m.statsOff && m.statsRead:
		// The stats are back, whatever the pass made of them (a full
		// disk with nothing to remove fails it).
		m.log.Info("Image garbage collection is on again: the runtime gives the usage of its image file system")
		m.statsOff = false
	}
	if err != nil {
		m.gcFailures++
		switch m.gcFailures {
		case 1:
			m.log.Error(err, "Image garbage collection failed once. Stats initialization may not have completed yet")
		case 2:
			m.log.Error(err, "Image garbage collection failed multiple times in a row")
			m.warnLocked(EventImageGCFailed, err.Error())
		default:
			m.log.V(4).Info("image garbage collection still failing", "failures", m.gcFailures, "err", err.Error())
		}
		return
	}
	level := 4
	if m.gcFailures > 0 {
		level = 1
	}
	m.gcFailures = 0
	m.log.V(level).Info("Image garbage collection succeeded")
}
