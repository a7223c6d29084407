package logrotate

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/go-logr/logr"

	"github.com/podlife/podlife/runtime"
)

// Manager rotates the log files of the running containers of a runtime,
// as the kubelet's container log manager. Create it with New and run it
// with Run, or call Rotate for one pass.
type Manager struct {
	opts    Options
	log     logr.Logger
	metrics *metrics

	started atomic.Bool
	passes  atomic.Uint64
	// pass holds the token of the one pass that may run at a time
	// (Run's or a Rotate call's): a pass calls the runtime, so no mutex
	// is held across it.
	pass chan struct{}

	// Touched only by the pass holding the token.
	containers  map[string]*container // running containers by runtime ID
	listFailing bool                  // the last listing failed (and was logged)
}

// container is what the Manager remembers of a running container between
// passes, and the outcome of the current pass.
type container struct {
	id, pod, name string
	// path is the container's log file, once known; noLog: the runtime
	// gives none.
	path  string
	noLog bool
	// failing: its last check failed, and that failure was logged.
	failing bool

	// Set by the worker that checks it in the current pass.
	rotated bool
	size    int64
	err     error
}

// Result sums up one rotation pass.
type Result struct {
	// Containers is the number of running containers checked.
	Containers int
	// Rotated is the number of logs rotated.
	Rotated int
	// Failed is the number of containers whose check or rotation failed.
	Failed int
}

// New validates opts and returns a Manager. It starts no goroutine and
// makes no call to the runtime.
func New(opts Options) (*Manager, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	m := &Manager{
		opts:       opts,
		log:        opts.Logger,
		pass:       make(chan struct{}, 1),
		containers: map[string]*container{},
	}
	var err error
	if m.metrics, err = newMetrics(opts.Registerer, opts.MetricsNamespace); err != nil {
		return nil, err
	}
	return m, nil
}

// Run rotates at once, then every Options.Interval, until ctx is done;
// then it returns nil, once the pass under way has ended. Run may be
// called once.
func (m *Manager) Run(ctx context.Context) error {
	if !m.started.CompareAndSwap(false, true) {
		return errors.New("logrotate: Run called twice")
	}
	t := m.opts.Clock.NewTicker(m.opts.Interval)
	defer t.Stop()
	m.log.V(2).Info("container log rotation starting", "maxSize", m.opts.MaxSize, "maxFiles", m.opts.MaxFiles,
		"interval", m.opts.Interval, "workers", m.opts.Workers)
	for {
		// Errors are logged by the pass, once per row of failures.
		_, _ = m.Rotate(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		}
	}
}

// Passes returns the number of completed passes (of Run and Rotate).
func (m *Manager) Passes() uint64 { return m.passes.Load() }

// Rotate makes one pass: it lists the running containers and rotates each
// log file that has reached Options.MaxSize. Passes never overlap: a call
// waits for the one under way. It returns an error only when the
// containers cannot be listed or ctx is done; the failure of a container
// is counted in Result.Failed, logged the first time in a row, and retried
// at the next pass.
func (m *Manager) Rotate(ctx context.Context) (Result, error) {
	select {
	case m.pass <- struct{}{}:
	case <-ctx.Done():
		return Result{}, ctx.Err()
	}
	defer func() { <-m.pass }()
	defer m.passes.Add(1)

	running, err := m.listLocked(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return Result{}, ctx.Err()
		}
		if !m.listFailing {
			m.log.Error(err, "container log rotation: cannot list the running containers")
		} else {
			m.log.V(4).Info("container log rotation: still cannot list the running containers", "err", err.Error())
		}
		m.listFailing = true
		return Result{}, err
	}
	if m.listFailing {
		m.log.V(2).Info("container log rotation: listing the running containers works again")
		m.listFailing = false
	}
	m.checkAll(ctx, running)
	res := Result{Containers: len(running)}
	for _, c := range running {
		res.Rotated += m.reportLocked(c)
		if c.err != nil {
			res.Failed++
		}
	}
	return res, ctx.Err()
}

// listLocked lists the running containers, remembers the new ones and
// forgets those that no longer run.
func (m *Manager) listLocked(ctx context.Context) ([]*container, error) {
	pods, err := m.opts.Runtime.GetPods(ctx, false)
	if err != nil {
		return nil, fmt.Errorf("list running containers: %w", err)
	}
	var running []*container
	seen := make(map[string]bool, len(m.containers))
	for _, p := range pods {
		for _, rc := range p.Containers {
			if rc == nil || rc.State != runtime.ContainerStateRunning || rc.ID.ID == "" || seen[rc.ID.ID] {
				continue
			}
			seen[rc.ID.ID] = true
			c := m.containers[rc.ID.ID]
			if c == nil {
				c = &container{id: rc.ID.ID, pod: p.Namespace + "/" + p.Name, name: rc.Name}
				m.containers[c.id] = c
			}
			c.rotated, c.size, c.err = false, 0, nil
			running = append(running, c)
		}
	}
	for id := range m.containers {
		if !seen[id] {
			delete(m.containers, id)
		}
	}
	return running, nil
}

// checkAll checks the containers with up to Options.Workers goroutines and
// returns once all have ended.
func (m *Manager) checkAll(ctx context.Context, cs []*container) {
	work := make(chan *container)
	var wg sync.WaitGroup
	for range min(m.opts.Workers, len(cs)) {
		wg.Go(func() {
			for c := range work {
				c.rotated, c.err = m.check(ctx, c)
			}
		})
	}
	for _, c := range cs {
		if ctx.Err() != nil {
			break
		}
		work <- c
	}
	close(work)
	wg.Wait()
}

// check rotates the container's log if it has reached MaxSize. It costs a
// stat of the log file (and once per container, a call for its path).
func (m *Manager) check(ctx context.Context, c *container) (rotated bool, err error) {
	if c.path == "" && !c.noLog {
		path, err := m.opts.Runtime.ContainerLogPath(ctx, c.id)
		switch {
		case errors.Is(err, runtime.ErrNotFound) || (err == nil && path == ""):
			c.noLog = true
		case err != nil:
			return false, fmt.Errorf("find the log file: %w", err)
		default:
			c.path = path
		}
	}
	if c.noLog {
		return false, nil
	}
	info, err := os.Stat(c.path)
	if errors.Is(err, fs.ErrNotExist) {
		// Its folder gone too: the pod is being removed (its logs go
		// with its folder) since the listing; no runtime could reopen
		// the file there. (During a drain, that is most containers of
		// a pass.)
		if _, derr := os.Stat(filepath.Dir(c.path)); errors.Is(derr, fs.ErrNotExist) {
			m.log.V(4).Info("container log folder gone: its pod is being removed", "pod", c.pod, "container", c.name, "path", c.path)
			return false, nil
		}
		// Renamed by a rotation that could not reopen it nor rename it
		// back, or lost: the runtime writes to a file no reader finds.
		if err := m.opts.Runtime.ReopenContainerLog(ctx, c.id); err != nil {
			return false, fmt.Errorf("log file %s missing, reopen it: %w", c.path, err)
		}
		info, err = os.Stat(c.path)
	}
	if err != nil {
		return false, fmt.Errorf("stat the log file: %w", err)
	}
	c.size = info.Size()
	if c.size < m.opts.MaxSize {
		return false, nil
	}
	return m.rotate(ctx, c.id, c.path)
}

// rotate removes the leftovers and the oldest rotated files of the log at
// path, compresses the others, renames the log to path.STAMP and has the
// runtime reopen it; if the runtime refuses, the log is renamed back, to
// be rotated at a later pass. It does nothing (false, nil) when a file of
// this second's stamp exists already.
func (m *Manager) rotate(ctx context.Context, id, path string) (bool, error) {
	dir, base := filepath.Dir(path), filepath.Base(path)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false, fmt.Errorf("list the log folder: %w", err)
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	p := planRotation(base, names, m.opts.MaxFiles)
	for _, n := range p.Remove {
		if err := os.Remove(filepath.Join(dir, n)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return false, fmt.Errorf("remove an old log file: %w", err)
		}
	}
	for _, n := range p.Compress {
		if err := compressFile(filepath.Join(dir, n)); err != nil {
			return false, fmt.Errorf("compress %s: %w", n, err)
		}
	}
	rotated := path + "." + m.opts.Clock.Now().Format(TimestampFormat)
	for _, n := range []string{rotated, rotated + compressSuffix} {
		if _, err := os.Lstat(n); err == nil {
			return false, nil
		}
	}
	if err := os.Rename(path, rotated); err != nil {
		return false, fmt.Errorf("rename the log file: %w", err)
	}
	if err := m.opts.Runtime.ReopenContainerLog(ctx, id); err != nil {
		err = fmt.Errorf("reopen the log file: %w", err)
		if rerr := os.Rename(rotated, path); rerr != nil {
			// The runtime writes on into the rotated file; the next pass
			// finds the log missing and asks for a reopen again.
			return false, errors.Join(err, fmt.Errorf("rename the log file back: %w", rerr))
		}
		return false, err
	}
	return true, nil
}

// reportLocked logs and counts the outcome of a container's check, and
// returns 1 if its log was rotated. A failure is logged as an error the
// first time in a row, at V(4) after that.
func (m *Manager) reportLocked(c *container) int {
	kv := []any{"pod", c.pod, "container", c.name, "containerID", c.id, "path", c.path}
	switch {
	case c.err != nil:
		m.metrics.failed()
		if !c.failing {
			m.log.Error(c.err, "container log rotation failed", kv...)
			c.failing = true
		} else {
			m.log.V(4).Info("container log rotation still failing", append(kv, "err", c.err.Error())...)
		}
		return 0
	case c.failing:
		m.log.V(2).Info("container log rotation works again", kv...)
		c.failing = false
	}
	if !c.rotated {
		return 0
	}
	m.metrics.rotatedLog()
	m.log.V(2).Info("container log rotated", append(kv, "size", c.size)...)
	return 1
}
