package podworker

import (
	"context"
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

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
