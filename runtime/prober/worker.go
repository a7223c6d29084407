package prober

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
)

// Defaults of the probe fields, as the API server sets them.
const (
	DefaultPeriodSeconds    = 10
	DefaultTimeoutSeconds   = 1
	DefaultSuccessThreshold = 1
	DefaultFailureThreshold = 3
)

// worker runs one probe of one container, in its own goroutine, from the
// container's first instance until RemovePod (or StopLivenessAndStartup).
// A worker that has nothing to do (its container is not running, its
// startup probe has not passed, it is on hold) waits on wake, not on a timer.
type worker struct {
	m     *Manager
	pod   *podState
	c     *containerState
	typ   ProbeType
	probe *v1.Probe // normalized: zero fields replaced by defaults
	// fixed at creation
	period, timeout, initialDelay      time.Duration
	successThreshold, failureThreshold int
	metrics                            *probeMetrics
	wake                               chan struct{} // capacity 1

	// Guarded by Manager.mu.
	result    Result    // published
	published Update    // the Update that published result, for Unhealthy
	last      Result    // last outcome
	inARow    int       // how many outcomes in a row were last
	onHold    bool      // a liveness/startup failure was published: wait for a new instance
	due       time.Time // next probe
	stopped   bool
	goroutine bool // started
	cancel    context.CancelFunc
}

func newWorker(m *Manager, p *podState, c *containerState, t ProbeType, pr *v1.Probe) *worker {
	pr = pr.DeepCopy()
	def := func(v *int32, d int32) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&pr.PeriodSeconds, DefaultPeriodSeconds)
	def(&pr.TimeoutSeconds, DefaultTimeoutSeconds)
	def(&pr.SuccessThreshold, DefaultSuccessThreshold)
	def(&pr.FailureThreshold, DefaultFailureThreshold)
	if t != Readiness {
		pr.SuccessThreshold = 1 // the API requires it; the kubelet assumes it
	}
	if pr.InitialDelaySeconds < 0 {
		pr.InitialDelaySeconds = 0
	}
	return &worker{
		m: m, pod: p, c: c, typ: t, probe: pr,
		period:           time.Duration(pr.PeriodSeconds) * time.Second,
		timeout:          time.Duration(pr.TimeoutSeconds) * time.Second,
		initialDelay:     time.Duration(pr.InitialDelaySeconds) * time.Second,
		successThreshold: int(pr.SuccessThreshold),
		failureThreshold: int(pr.FailureThreshold),
		metrics:          m.metrics.forProbe(t, c.spec.Name, p.name, p.namespace, p.uid),
		wake:             make(chan struct{}, 1),
		result:           initialResult(t, false),
	}
}

// initialResult is the published result of a probe of an instance that has
// not been probed yet: a container is not ready until its readiness probe
// passes, alive until its liveness probe fails, and its startup unknown.
func initialResult(t ProbeType, running bool) Result {
	switch t {
	case Readiness:
		return Failure
	case Liveness:
		if running {
			return Success
		}
	}
	return Unknown
}

// resetLocked starts the probe over for the container's new instance (or
// its absence).
func (w *worker) resetLocked(now time.Time) {
	w.result = initialResult(w.typ, w.c.id != "")
	w.last, w.inARow, w.onHold = Unknown, 0, false
	w.due = w.c.startedAt.Add(w.initialDelay)
	if !w.m.ran || now.Sub(w.m.runStart) < w.period {
		// Containers found at (re)start: spread their probes over a period.
		w.due = maxTime(w.due, now).Add(time.Duration(w.m.opts.Rand() * float64(w.period)))
	}
	w.signal()
}

func (w *worker) stopLocked() {
	if w.stopped {
		return
	}
	w.stopped = true
	if w.cancel != nil {
		w.cancel()
	}
	w.signal()
}

func (w *worker) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// target is what one probe needs, copied under the lock.
type target struct {
	containerID string
	startedAt   time.Time
	podIP       string
}

// nextLocked says what the worker does now: stop, probe (ok), or wait
// (wait > 0 for a timer, wait == 0 for a wake-up only).
func (w *worker) nextLocked(now time.Time) (stop, probe bool, wait time.Duration, t target) {
	switch {
	case w.stopped:
		return true, false, 0, t
	case w.c.id == "", w.onHold:
		return false, false, 0, t
	case w.typ == Startup && w.c.started:
		return false, false, 0, t // done for this instance
	case w.typ != Startup && !w.c.started:
		return false, false, 0, t // gated by the startup probe
	}
	if d := w.due.Sub(now); d > 0 {
		return false, false, d, t
	}
	return false, true, 0, target{containerID: w.c.id, startedAt: w.c.startedAt, podIP: w.pod.ip}
}

// timerSlack is how late a timer may fire for the clock having moved between
// reading it and making the timer; a larger move makes a new timer.
const timerSlack = time.Millisecond

// run is the worker's goroutine.
func (w *worker) run(ctx context.Context) {
	clk := w.m.opts.Clock
	for {
		now := clk.Now()
		w.m.mu.Lock()
		stop, probe, wait, t := w.nextLocked(now)
		w.m.mu.Unlock()
		switch {
		case stop:
			return
		case probe:
			start := clk.Now()
			res, out := w.m.runProbe(ctx, w, t)
			end := clk.Now()
			if res == warning {
				res = Success
				if w.m.opts.OnWarning != nil {
					w.m.opts.OnWarning(Update{PodUID: w.pod.uid, PodName: w.pod.name, PodNamespace: w.pod.namespace,
						ContainerName: w.c.spec.Name, ContainerID: t.containerID, Probe: w.typ, Result: Success, Output: out})
				}
			}
			w.m.mu.Lock()
			upd, changed := w.recordLocked(t.containerID, res, out, start, end)
			w.m.mu.Unlock()
			if res == Unknown {
				w.m.log.V(2).Info("probe could not run", "pod", w.pod.namespace+"/"+w.pod.name, "podUID", w.pod.uid,
					"container", w.c.spec.Name, "probe", w.typ.String(), "output", out)
			}
			if changed {
				w.m.log.V(2).Info("probe result changed", "pod", w.pod.namespace+"/"+w.pod.name, "podUID", w.pod.uid,
					"container", w.c.spec.Name, "probe", w.typ.String(), "result", upd.Result.String(), "output", upd.Output)
				if w.m.opts.OnResult != nil {
					w.m.opts.OnResult(upd)
				}
			}
		case wait > 0:
			timer := clk.NewTimer(wait)
			if clk.Since(now) > timerSlack {
				// Time jumped while the timer was made (a fake clock's
				// step): it may fire late. Look again.
				timer.Stop()
				continue
			}
			select {
			case <-ctx.Done():
				timer.Stop()
				return
			case <-w.wake:
			case <-timer.C():
			}
			timer.Stop()
		default:
			select {
			case <-ctx.Done():
				return
			case <-w.wake:
			}
		}
	}
}

// recordLocked applies one outcome of a probe of instance id that ran from
// start to end, and returns the Update to deliver when the published result
// changed.
func (w *worker) recordLocked(id string, res Result, out string, start, end time.Time) (Update, bool) {
	if w.stopped || w.c.id != id {
		return Update{}, false // removed, or a new instance began meanwhile
	}
	// Under the lock, so that no series comes back after RemovePod deleted
	// them (the metrics take no lock of ours and call nothing out).
	w.metrics.observe(res, end.Sub(start).Seconds())
	base := w.due // on schedule: no drift
	if start.Sub(base) >= w.period {
		base = start // it waited (for its startup probe, say): a new schedule
	}
	w.due = base.Add(w.period)
	if w.due.Before(end) {
		w.due = end // the probe took longer than a period: the next one now
	}
	if res == Unknown {
		return Update{}, false // the probe could not run: no verdict
	}
	if res == w.last {
		w.inARow++
	} else {
		w.last, w.inARow = res, 1
	}
	if (res == Failure && w.inARow < w.failureThreshold) || (res == Success && w.inARow < w.successThreshold) {
		return Update{}, false
	}
	changed := w.result != res
	w.result = res
	if res == Failure && w.typ != Readiness {
		// The container will be killed: probe no more until its next instance.
		w.onHold, w.inARow = true, 0
	}
	if w.typ == Startup && res == Success {
		w.c.started = true
		for _, o := range w.c.probes {
			if o != nil && o != w {
				o.signal()
			}
		}
	}
	if !changed {
		return Update{}, false
	}
	u := Update{
		PodUID: w.pod.uid, PodName: w.pod.name, PodNamespace: w.pod.namespace,
		ContainerName: w.c.spec.Name, ContainerID: id, Probe: w.typ, Result: res, Output: out,
	}
	if res == Failure && w.typ != Readiness && w.probe.TerminationGracePeriodSeconds != nil {
		g := *w.probe.TerminationGracePeriodSeconds
		u.TerminationGracePeriodSeconds = &g
	}
	w.published = u
	return u, true
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
