package chaos

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podlife/podlife/podworker/podworkertest"
	"github.com/podlife/podlife/runtime/cri"
	"github.com/podlife/podlife/runtime/fakecri"
)

// checkedFakeCRI serves a fakecri holding the test image on a unix socket
// and returns it, its endpoint, a CRI client of it and the invariants
// checked through that client; all are stopped when the test ends.
func checkedFakeCRI(t *testing.T) (*fakecri.Server, string, *cri.Runtime, *invariants) {
	t.Helper()
	srv := fakecri.New(fakecri.Options{Images: []string{testImage}})
	sockDir, err := os.MkdirTemp("", "chaos") // short: a socket path has a length limit
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(sockDir) })
	endpoint, err := srv.StartUnix(filepath.Join(sockDir, "cri.sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	checker, err := newCRI(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = checker.Close() })
	return srv, endpoint, checker, newInvariants(checker, newTrace(10))
}

// expectRuntimeEmpty waits up to 10 s for the runtime to hold no pod, and
// names what it still holds if it does.
func expectRuntimeEmpty(t *testing.T, checker *cri.Runtime) {
	t.Helper()
	if err := podworkertest.Poll(10*time.Second, func() bool {
		all, err := checker.GetPods(context.Background(), true)
		return err == nil && len(all) == 0
	}); err != nil {
		all, _ := checker.GetPods(context.Background(), true)
		for _, rp := range all {
			t.Errorf("%v: runtime still holds %s (%s): %s", err, rp.FullName(), rp.ID, describe(rp))
		}
	}
}

// TestDeadRemainsOfUnknownPodsAreRemoved: what is left, dead, of a pod that
// no pod worker knows (exited containers, a stopped sandbox) must not stay in
// the runtime. The soak found it after agent restarts: a pod the old agent had
// killed but not yet removed, or whose sandbox died while no agent ran, was
// never cleaned up, because housekeeping only looked at running pods for
// orphans (fixed in agent housekeeping, removeDeadRemains).
func TestDeadRemainsOfUnknownPodsAreRemoved(t *testing.T) {
	srv, endpoint, checker, inv := checkedFakeCRI(t)
	dir := t.TempDir()
	st := &staticSlot{idx: 1, present: true, version: 1, grace: 1}
	if err := writeManifest(dir, st); err != nil {
		t.Fatal(err)
	}

	// A first agent runs the pod.
	ar, err := startAgent(endpoint, dir, timingsFor(1), inv, nil, logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	if err := ar.push(nil); err != nil { // the API source is ready: no API pods
		t.Fatal(err)
	}
	podworkertest.WaitFor(t, 10*time.Second, "pod running", func() bool {
		pods, err := checker.GetPods(context.Background(), false)
		return err == nil && len(pods) == 1 && len(pods[0].Containers) == 1
	})
	// The agent stops; while none runs, the pod's sandbox dies and its
	// manifest is removed.
	if err := ar.stop(); err != nil {
		t.Fatal(err)
	}
	pods, err := checker.GetPods(context.Background(), false)
	if err != nil || len(pods) != 1 {
		t.Fatalf("runtime pods: %v, %v", pods, err)
	}
	if err := srv.StopSandbox(pods[0].Sandboxes[0].ID.ID); err != nil {
		t.Fatal(err)
	}
	if err := removeManifest(dir, st); err != nil {
		t.Fatal(err)
	}

	// A new agent must clean up what is left of it.
	ar, err = startAgent(endpoint, dir, timingsFor(1), inv, nil, logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	if err := ar.push(nil); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := ar.stop(); err != nil {
			t.Error(err)
		}
	}()
	expectRuntimeEmpty(t, checker)
}

// TestDeletionWhileCompletedPodFinishes: a pod that ran to completion and is
// still desired keeps its dead containers when it finishes (SyncTerminatedPod
// decides so, then publishes the final status). A deletion that reaches the
// pod workers after that decision, while the final status is being
// published, makes their ShouldPodContentBeRemoved true at once; the remains
// go afterwards, by housekeeping (removeDeadRemains for a force delete,
// republishFinished for a graceful one), as the kubelet's container GC
// removes them. The soak's finished-pod check asked the pod workers at
// PodFinished instead of taking what the agent could have seen when it
// decided, and reported "reported finished while the runtime still holds 1
// containers and 1 sandboxes" (seed 1796654583510742145, an OnFailure pod
// force deleted as it completed).
func TestDeletionWhileCompletedPodFinishes(t *testing.T) {
	for _, tc := range []struct {
		name string
		// deleted returns the API pods once the pod is deleted.
		deleted func(pod *v1.Pod) []*v1.Pod
	}{
		{"force delete", func(*v1.Pod) []*v1.Pod { return nil }},
		{"graceful delete", func(pod *v1.Pod) []*v1.Pod {
			p := pod.DeepCopy()
			ts, g := metav1.Now(), int64(1)
			p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &ts, &g
			return []*v1.Pod{p}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, endpoint, checker, inv := checkedFakeCRI(t)
			ar, err := startAgent(endpoint, t.TempDir(), timingsFor(1), inv, nil, logr.Discard())
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := ar.stop(); err != nil {
					t.Error(err)
				}
			}()

			// A job's pod whose one container exits 0 at once: it
			// succeeds, and keeps its dead container while desired.
			pod := newAPIPod(&apiSlot{idx: 1}, 1, false, 1, v1.RestartPolicyOnFailure)
			pod.Spec.Containers[0].Args = []string{"exit", "0"}
			// Its first final status waits for the deletion.
			atFinished, release := make(chan struct{}), make(chan struct{})
			var once sync.Once
			ar.rep.beforeFinished = func(p *v1.Pod) {
				if p.UID == pod.UID {
					once.Do(func() { close(atFinished); <-release })
				}
			}
			var releaseOnce sync.Once
			defer releaseOnce.Do(func() { close(release) })
			if err := ar.push([]*v1.Pod{pod}); err != nil {
				t.Fatal(err)
			}
			select {
			case <-atFinished:
			case <-time.After(30 * time.Second):
				t.Fatal("timed out waiting for the pod's final status")
			}
			st, err := checker.GetPodStatus(context.Background(), pod.UID, pod.Name, pod.Namespace)
			if err != nil {
				t.Fatal(err)
			}
			if len(st.ContainerStatuses) == 0 || len(st.SandboxStatuses) == 0 {
				t.Fatalf("the completed pod, still desired, kept nothing: %s", st)
			}

			if err := ar.push(tc.deleted(pod)); err != nil {
				t.Fatal(err)
			}
			workers := ar.Workers()
			podworkertest.WaitFor(t, 10*time.Second, "the pod workers to take the pod for deleted", func() bool {
				return workers.ShouldPodContentBeRemoved(pod.UID)
			})
			releaseOnce.Do(func() { close(release) })

			// Its remains go, after its final status.
			expectRuntimeEmpty(t, checker)
			for _, p := range inv.problems() {
				t.Error(p)
			}
		})
	}
}
