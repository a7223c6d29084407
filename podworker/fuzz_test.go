package podworker

import (
	"errors"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podlife/podlife/podmanager"
	"github.com/podlife/podlife/runtime"
)

// FuzzMachine drives one Machine with a random sequence of events, the way a
// correct driver would, and checks its invariants after every step:
//   - it never rejects an event a correct driver sends;
//   - the lifecycle never moves backwards;
//   - once termination has been requested no SyncPod is ever issued;
//   - the grace period never grows and is at least 1 once terminating;
//   - a runtime-only pod only ever gets SyncTerminatingRuntimePod;
//   - every CompletedCh handed in is closed by the time the pod terminated;
//   - once the Syncer stops failing, a killed pod finishes.
func FuzzMachine(f *testing.F) {
	f.Add([]byte{0, 10, 11, 1, 10, 11, 10, 11, 10, 11})
	f.Add([]byte{0, 10, 3, 11, 12, 10, 11, 4, 10, 11})
	f.Add([]byte{7, 5, 10, 11, 13, 10, 11})
	f.Add([]byte{0, 10, 12, 6, 14, 10, 11, 10, 11})
	f.Fuzz(func(t *testing.T, ops []byte) {
		var m Machine
		now := time.Unix(1000, 0)
		static := len(ops) > 0 && ops[0]%2 == 1
		runtimeOnly := len(ops) > 0 && ops[0] == 7
		base := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u", Name: "p", Namespace: "ns"}}
		if static {
			base.Annotations = map[string]string{podmanager.ConfigSourceAnnotationKey: podmanager.FileSource}
		}
		var handed []chan struct{}
		closedSet := map[chan<- struct{}]bool{}
		closeAll := func(chs []chan<- struct{}) {
			for _, c := range chs {
				if closedSet[c] {
					t.Fatalf("channel closed twice")
				}
				closedSet[c] = true
			}
		}
		lastLifecycle := m.Lifecycle()
		var lastGP int64
		terminationSeen := false
		check := func(step string) {
			if m.Lifecycle() < lastLifecycle {
				t.Fatalf("%s: lifecycle moved back from %s to %s", step, lastLifecycle, m.Lifecycle())
			}
			lastLifecycle = m.Lifecycle()
			if m.IsTerminationRequested() {
				terminationSeen = true
				if gp := m.GracePeriod(); gp != 0 {
					if lastGP != 0 && gp > lastGP {
						t.Fatalf("%s: grace period grew from %d to %d", step, lastGP, gp)
					}
					lastGP = gp
				}
			}
			if m.IsTerminated() && m.Lifecycle() != LifecycleFinished {
				for _, c := range handed {
					if !closedSet[c] {
						t.Fatalf("%s: pod terminated with a CompletedCh still open", step)
					}
				}
			}
		}
		next := func(decision StartDecision) {
			if m.InFlight() {
				return // a correct driver waits for Complete
			}
			w, ok, eff, err := m.Next(now, decision)
			if err != nil {
				t.Fatalf("Next: %v", err)
			}
			closeAll(eff.Close)
			if !ok {
				return
			}
			if w.Kind == WorkSyncPod && terminationSeen {
				t.Fatalf("SyncPod issued after termination was requested")
			}
			if runtimeOnly && w.Kind != WorkTerminatingRuntimePod {
				t.Fatalf("runtime-only pod got %s", w.Kind)
			}
			if (w.Kind == WorkTerminatingPod || w.Kind == WorkTerminatingRuntimePod) && w.GracePeriod < 1 {
				t.Fatalf("grace period %d", w.GracePeriod)
			}
		}
		for i, op := range ops {
			now = now.Add(time.Second)
			o := UpdatePodOptions{Pod: base.DeepCopy()}
			if runtimeOnly {
				o = UpdatePodOptions{RunningPod: &runtime.Pod{ID: "u", Name: "p", Namespace: "ns"}, UpdateType: SyncPodKill}
			}
			switch op % 16 {
			case 0, 1, 2:
				o.UpdateType = SyncPodType(op % 3)
			case 3, 4:
				o.UpdateType = SyncPodKill
				gp := int64(op) - 3
				ch := make(chan struct{})
				handed = append(handed, ch)
				o.KillPodOptions = &KillPodOptions{CompletedCh: ch, PodTerminationGracePeriodSecondsOverride: &gp}
			case 5:
				if o.Pod != nil {
					o.Pod.DeletionTimestamp = &metav1.Time{Time: now}
					gp := int64(i % 5)
					o.Pod.DeletionGracePeriodSeconds = &gp
				}
			case 6:
				if o.Pod != nil {
					o.Pod.Status.Phase = v1.PodSucceeded
				}
			case 7:
				o = UpdatePodOptions{RunningPod: &runtime.Pod{ID: "u", Name: "p", Namespace: "ns"}, UpdateType: SyncPodKill}
			case 8:
				next(StartNotYet)
				check("next-notyet")
				continue
			case 9, 10:
				next(StartAllowed)
				check("next")
				continue
			case 11, 12:
				if m.InFlight() {
					var err error
					if op%16 == 12 {
						err = errors.New("boom")
					}
					eff, cerr := m.Complete(now, i%3 == 0, err)
					if cerr != nil {
						t.Fatalf("Complete: %v", cerr)
					}
					closeAll(eff.Close)
				}
				check("complete")
				continue
			case 13:
				m.Due()
				check("due")
				continue
			case 14:
				eff := m.Orphan(now)
				closeAll(eff.Close)
				if eff.Forget {
					return
				}
				check("orphan")
				continue
			default:
				continue
			}
			eff, err := m.Update(o, now, i%2 == 0)
			if err != nil {
				t.Fatalf("Update: %v", err)
			}
			closeAll(eff.Close)
			check("update")
		}
		// The Syncer recovers: kill the pod and drive it; it must finish.
		if m.InFlight() {
			eff, _ := m.Complete(now, false, nil)
			closeAll(eff.Close)
		}
		if m.IsFinished() {
			return
		}
		if !m.seen {
			return
		}
		gp := int64(0)
		eff, err := m.Update(UpdatePodOptions{UpdateType: SyncPodKill, Pod: m.knownPod(), RunningPod: &runtime.Pod{ID: "u", Name: "p", Namespace: "ns"},
			KillPodOptions: &KillPodOptions{PodTerminationGracePeriodSecondsOverride: &gp}}, now, true)
		if err != nil {
			t.Fatalf("final kill: %v", err)
		}
		closeAll(eff.Close)
		for range 10 {
			if m.IsFinished() {
				break
			}
			m.Due()
			w, ok, eff, err := m.Next(now, StartAllowed)
			if err != nil {
				t.Fatal(err)
			}
			closeAll(eff.Close)
			if ok {
				if w.Kind == WorkSyncPod {
					t.Fatalf("SyncPod after the final kill")
				}
				eff, err := m.Complete(now, false, nil)
				if err != nil {
					t.Fatal(err)
				}
				closeAll(eff.Close)
			}
		}
		if !m.IsFinished() {
			t.Fatalf("killed pod did not finish: %s", m.Lifecycle())
		}
		for _, c := range handed {
			if !closedSet[c] {
				t.Fatalf("a CompletedCh was never closed")
			}
		}
	})
}
