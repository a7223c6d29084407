package podworker_test

import (
	"errors"
	"testing"
	"time"

	"github.com/podlife/podlife/podworker"
)

// An update type outside the four known ones is refused with a clear error
// and its CompletedCh is closed, so no caller waits for it.
func TestMachineRejectsUnknownUpdateType(t *testing.T) {
	var m podworker.Machine
	done := make(chan struct{})
	_, err := m.Update(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodType(7), Pod: newPod("u1", "web"),
		KillPodOptions: &podworker.KillPodOptions{CompletedCh: done}}, time.Unix(1, 0), true)
	if !errors.Is(err, podworker.ErrBadUpdateType) {
		t.Fatalf("Update: %v, want ErrBadUpdateType", err)
	}
	eff, err := m.Update(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodType(-1), Pod: newPod("u1", "web"),
		KillPodOptions: &podworker.KillPodOptions{CompletedCh: done}}, time.Unix(1, 0), true)
	if !errors.Is(err, podworker.ErrBadUpdateType) || len(eff.Close) != 1 {
		t.Fatalf("Update: %v, %d channels to close; want ErrBadUpdateType and 1", err, len(eff.Close))
	}
	if m.UID() != "" || m.HasPending() {
		t.Fatalf("a refused update changed the machine: uid %q, pending %v", m.UID(), m.HasPending())
	}
}

// Times are kept to the nanosecond, the Unix epoch included (stored 1 ns
// later, since 0 means unset), and the zero time stays unset.
func TestMachineTimes(t *testing.T) {
	for _, now := range []time.Time{time.Unix(1_700_000_000, 123456789), time.Unix(0, 0), time.Unix(-5, 0)} {
		var m podworker.Machine
		pod := newPod("u1", "web")
		m.Update(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodCreate, Pod: pod}, now, true)
		m.Next(now, podworker.StartAllowed)
		m.Complete(now, false, nil)
		later := now.Add(time.Second)
		m.Update(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodKill, Pod: pod}, later, true)
		synced, started, terminating, terminated := m.Times()
		if want := now; synced.Sub(want).Abs() > time.Nanosecond || started.Sub(want).Abs() > time.Nanosecond {
			t.Errorf("at %v: synced %v, started %v", now, synced, started)
		}
		if !terminating.Equal(later) || !terminated.IsZero() {
			t.Errorf("at %v: terminating %v (want %v), terminated %v (want zero)", now, terminating, later, terminated)
		}
	}
}
