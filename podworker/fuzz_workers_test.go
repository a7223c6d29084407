package podworker_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/podlife/podlife/podworker"
	pwt "github.com/podlife/podlife/podworker/podworkertest"
	"github.com/podlife/podlife/runtime"
)

// invariantSyncer wraps a FakeSyncer and checks, per pod incarnation, that
// no SyncPod follows the start of termination and that the grace period
// never grows.
type invariantSyncer struct {
	*pwt.FakeSyncer
	mu          sync.Mutex
	terminating map[types.UID]bool
	lastGP      map[types.UID]int64
	violations  []string
}

func (s *invariantSyncer) violate(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.violations = append(s.violations, fmt.Sprintf(format, args...))
}

func (s *invariantSyncer) SyncPod(ctx context.Context, t podworker.SyncPodType, pod, mirror *v1.Pod, st *runtime.PodStatus) (bool, error) {
	s.mu.Lock()
	bad := s.terminating[pod.UID]
	s.mu.Unlock()
	if bad {
		s.violate("SyncPod for %s after termination began", pod.UID)
	}
	return s.FakeSyncer.SyncPod(ctx, t, pod, mirror, st)
}

func (s *invariantSyncer) SyncTerminatingPod(ctx context.Context, pod *v1.Pod, st *runtime.PodStatus, gp *int64, fn func(*v1.PodStatus)) error {
	s.mu.Lock()
	s.terminating[pod.UID] = true
	if last, ok := s.lastGP[pod.UID]; ok && *gp > last {
		s.violations = append(s.violations, fmt.Sprintf("grace period of %s grew from %d to %d", pod.UID, last, *gp))
	}
	if *gp < 1 {
		s.violations = append(s.violations, fmt.Sprintf("grace period of %s is %d", pod.UID, *gp))
	}
	s.lastGP[pod.UID] = *gp
	s.mu.Unlock()
	return s.FakeSyncer.SyncTerminatingPod(ctx, pod, st, gp, fn)
}

func (s *invariantSyncer) SyncTerminatedPod(ctx context.Context, pod *v1.Pod, st *runtime.PodStatus) error {
	err := s.FakeSyncer.SyncTerminatedPod(ctx, pod, st)
	if err == nil {
		// The incarnation is over; the UID may be created again.
		s.mu.Lock()
		delete(s.terminating, pod.UID)
		delete(s.lastGP, pod.UID)
		s.mu.Unlock()
	}
	return err
}

// FuzzWorkers feeds the real driver random sequences of creates, updates,
// kills, deletions, runtime kills, SyncKnownPods calls, Syncer failures and
// clock steps, then lets the Syncer recover, stops desiring every pod, and
// requires every pod to finish and be forgotten.
func FuzzWorkers(f *testing.F) {
	f.Add([]byte{0x00, 0x10, 0x20, 0x30, 0x02, 0x15, 0x12, 0x06, 0x04})
	f.Add([]byte{0x20, 0x30, 0x22, 0x26, 0x20, 0x04, 0x38, 0x04, 0x06})
	f.Add([]byte{0x05, 0x00, 0x03, 0x00, 0x09, 0x07, 0x17, 0x04, 0x06, 0x06})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 64 {
			ops = ops[:64]
		}
		clk := testingclock.NewFakeClock(time.Unix(1_700_000_000, 0))
		s := &invariantSyncer{FakeSyncer: pwt.NewFakeSyncer(), terminating: map[types.UID]bool{}, lastGP: map[types.UID]int64{}}
		w, err := podworker.New(podworker.Options{Syncer: s, Clock: clk, Logger: logr.Discard(),
			ResyncInterval: time.Minute, BackOffPeriod: time.Second, Random: func() float64 { return 0 }})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- w.Run(ctx) }()
		defer func() {
			cancel()
			<-done
		}()
		if err := pwt.Poll(0, w.Running); err != nil {
			t.Fatal("Run did not start")
		}

		// Pods 0 and 1 are static pods with the same full name; 2 and 3 are
		// API pods.
		pods := make([]*v1.Pod, 4)
		for i := range pods {
			if i < 2 {
				pods[i] = staticPod(fmt.Sprintf("s%d", i), "etcd")
			} else {
				pods[i] = newPod(fmt.Sprintf("a%d", i), fmt.Sprintf("api%d", i))
			}
		}
		desired := map[int]bool{}
		quiesce := func() {
			// Busy is also 0 between a wake-up and its goroutine's start;
			// that is fine here: the final phase waits with a deadline.
			if err := pwt.Poll(0, func() bool { return w.Busy() == 0 }); err != nil {
				t.Fatalf("workers never went idle")
			}
		}
		boom := errors.New("injected")
		for _, op := range ops {
			i := int(op>>4) % len(pods)
			pod := pods[i]
			switch op & 15 {
			case 0:
				desired[i] = true
				w.UpdatePod(create(pod))
			case 1:
				p := pod.DeepCopy()
				p.Labels = map[string]string{"v": fmt.Sprint(op)}
				w.UpdatePod(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodUpdate, Pod: p})
			case 2, 3:
				gp := int64(op % 7)
				w.UpdatePod(kill(pod, &podworker.KillPodOptions{PodTerminationGracePeriodSecondsOverride: &gp}))
			case 4:
				var d []*v1.Pod
				for j, ok := range desired {
					if ok {
						d = append(d, pods[j])
					}
				}
				known := w.SyncKnownPods(d)
				for j, p := range pods {
					if desired[j] {
						if _, ok := known[p.UID]; !ok {
							w.UpdatePod(create(p)) // the caller re-adds desired pods
						}
					}
				}
			case 5:
				s.Fail(pwt.Method([]pwt.Method{pwt.SyncPod, pwt.SyncTerminatingPod, pwt.SyncTerminatedPod, pwt.SyncTerminatingRuntimePod}[op>>6]), pod.UID, 2, boom)
			case 6:
				quiesce()
				clk.Step(time.Second * time.Duration(1+op>>5))
			case 7:
				w.UpdatePod(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodKill,
					RunningPod: &runtime.Pod{ID: pod.UID, Name: pod.Name, Namespace: pod.Namespace}})
			case 8:
				desired[i] = false
			case 9:
				p := pod.DeepCopy()
				p.DeletionTimestamp = &metav1.Time{Time: clk.Now()}
				gp := int64(op % 3)
				p.DeletionGracePeriodSeconds = &gp
				w.UpdatePod(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodUpdate, Pod: p})
			case 10:
				p := pod.DeepCopy()
				p.Status.Phase = v1.PodSucceeded
				w.UpdatePod(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodUpdate, Pod: p})
			}
		}

		// The Syncer recovers; nothing is desired any more. Every pod must
		// finish and be forgotten.
		for _, m := range []pwt.Method{pwt.SyncPod, pwt.SyncTerminatingPod, pwt.SyncTerminatedPod, pwt.SyncTerminatingRuntimePod} {
			for _, p := range pods {
				s.Fail(m, p.UID, 0, nil)
			}
		}
		err = pwt.Poll(10*time.Second, func() bool {
			if w.Len() == 0 {
				return true
			}
			w.SyncKnownPods(nil)
			clk.Step(2 * time.Second)
			return false
		})
		if err != nil {
			for _, p := range pods {
				if info, ok := w.PodInfo(p.UID); ok {
					t.Errorf("pod stuck: %+v", info)
				}
			}
			t.Fatalf("pods did not finish within 10s after the Syncer recovered")
		}
		if o := s.Overlaps(); len(o) > 0 {
			t.Fatalf("overlapping calls: %v", o)
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if len(s.violations) > 0 {
			t.Fatalf("invariants violated: %v\ncalls: %v", s.violations, s.Calls())
		}
	})
}
