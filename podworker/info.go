package podworker

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// PodInfo is a snapshot of where one pod stands, for logs, debugging,
// dashboards ("terminating for how long?") and tests.
type PodInfo struct {
	UID              types.UID
	FullName         string
	Lifecycle        Lifecycle
	State            PodWorkerState
	Static           bool
	HasConfig        bool
	Started          bool
	Deleted          bool
	Evicted          bool
	RestartRequested bool
	// Working: an update is pending or a Syncer call is in flight.
	Working     bool
	InFlight    bool
	GracePeriod int64
	// Failures counts consecutive Syncer errors.
	Failures      int
	SyncedAt      time.Time
	StartedAt     time.Time
	TerminatingAt time.Time
	TerminatedAt  time.Time
	// NextAttempt is when the last update will be re-delivered if nothing
	// else happens (zero if none is scheduled).
	NextAttempt time.Time
}

// PodInfo returns a snapshot of the pod's state and whether it is known.
func (w *Workers) PodInfo(uid types.UID) (PodInfo, bool) {
	sh := w.shardFor(uid)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	rec := sh.pods[uid]
	if rec == nil {
		return PodInfo{}, false
	}
	m := &rec.m
	info := PodInfo{
		UID:              uid,
		FullName:         m.FullName(),
		Lifecycle:        m.Lifecycle(),
		State:            m.WorkerState(),
		Static:           m.Static(),
		HasConfig:        m.ConfigPod() != nil,
		Started:          m.IsStarted(),
		Deleted:          m.IsDeleted(),
		Evicted:          m.IsEvicted(),
		RestartRequested: m.IsRestartRequested(),
		Working:          m.HasPending() || m.InFlight(),
		InFlight:         m.InFlight(),
		GracePeriod:      m.GracePeriod(),
		Failures:         m.Failures(),
	}
	info.SyncedAt, info.StartedAt, info.TerminatingAt, info.TerminatedAt = m.Times()
	if rec.dueAt != 0 {
		info.NextAttempt = time.Unix(0, rec.dueAt)
	}
	return info, true
}

// Len returns the number of pods the workers know, finished ones included.
func (w *Workers) Len() int { return int(w.count.Load()) }

// Busy returns the number of pods whose work loop is running.
func (w *Workers) Busy() int {
	n := 0
	for i := range w.shards {
		sh := &w.shards[i]
		sh.mu.Lock()
		for _, rec := range sh.pods {
			if rec.running {
				n++
			}
		}
		sh.mu.Unlock()
	}
	return n
}

// Running reports whether Run is processing work (it has started and its
// context has not ended).
func (w *Workers) Running() bool { return w.state.Load() == stateRunning }
