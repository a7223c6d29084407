package agent_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/agent"
	"github.com/podlife/podlife/podmanager/source"
	"github.com/podlife/podlife/podworker"
	"github.com/podlife/podlife/podworker/podworkertest"
	"github.com/podlife/podlife/runtime/cri"
	"github.com/podlife/podlife/runtime/fakecri"
)

// jobManifest is a static pod of one container with the restart policy.
func jobManifest(name string, policy v1.RestartPolicy) string {
	return fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\nspec:\n  restartPolicy: %s\n  terminationGracePeriodSeconds: 1\n  containers:\n  - name: main\n    image: %s\n",
		name, policy, testImage)
}

// Pods that run to completion (RestartPolicy Never and OnFailure) go
// through termination while they are still desired: a terminal phase is
// published, nothing of them runs any more, their workers finish and stay
// known (they are desired) without ever starting them again, and they no
// longer count as active; their dead containers are kept. OnFailure
// restarts a failed container and completes once it exits 0. Removing the
// manifests then forgets them and removes what is left.
func TestRunToCompletion(t *testing.T) {
	srv, endpoint := startFakeCRI(t, fakecri.Options{Images: []string{testImage}})
	dir := t.TempDir()
	writeManifest(t, dir, "ok.yaml", jobManifest("ok", v1.RestartPolicyNever))
	writeManifest(t, dir, "bad.yaml", jobManifest("bad", v1.RestartPolicyNever))
	writeManifest(t, dir, "retry.yaml", jobManifest("retry", v1.RestartPolicyOnFailure))
	fast := newRuntimeWith(t, endpoint, func(o *cri.Options) { o.BackOffInitial = 100 * time.Millisecond })
	ra := startAgentWith(t, endpoint, dir, func(o *agent.Options) { o.Runtime = fast })
	ok, bad, retry := ra.podUID(t, "ok"), ra.podUID(t, "bad"), ra.podUID(t, "retry")
	for _, uid := range []types.UID{ok, bad, retry} {
		waitRunning(t, ra, uid)
	}

	exit := func(uid types.UID, code int32) string {
		t.Helper()
		ids := runningContainerIDs(runtimePods(t, ra.rt, false)[uid])
		if len(ids) != 1 {
			t.Fatalf("pod %s runs containers %v, want one", uid, ids)
		}
		if err := srv.ExitContainer(ids[0], code); err != nil {
			t.Fatal(err)
		}
		return ids[0]
	}
	exit(ok, 0)
	exit(bad, 1)
	first := exit(retry, 1)

	done := func(uid types.UID, phase v1.PodPhase) {
		t.Helper()
		podworkertest.WaitFor(t, waitTimeout, fmt.Sprintf("pod %s %s and finished", uid, phase), func() bool {
			st, known := ra.StatusReporter().Status(uid)
			info, working := ra.Workers().PodInfo(uid)
			_, runs := runtimePods(t, ra.rt, false)[uid]
			return known && st.Phase == phase && working && info.Lifecycle == podworker.LifecycleFinished && !runs
		})
	}
	done(ok, v1.PodSucceeded)
	done(bad, v1.PodFailed)

	// OnFailure: the failed container is started again, then completes.
	podworkertest.WaitFor(t, waitTimeout, "retry restarted", func() bool {
		ids := runningContainerIDs(runtimePods(t, ra.rt, false)[retry])
		return len(ids) == 1 && ids[0] != first
	})
	exit(retry, 0)
	done(retry, v1.PodSucceeded)

	// Still desired, never started again, not active.
	ra.waitHousekeepings(t, 2)
	for _, uid := range []types.UID{ok, bad, retry} {
		if info, _ := ra.Workers().PodInfo(uid); info.Lifecycle != podworker.LifecycleFinished {
			t.Errorf("pod %s is %s after housekeeping, want finished", uid, info.Lifecycle)
		}
	}
	if _, runs := runtimePods(t, ra.rt, false)[ok]; runs {
		t.Errorf("a completed pod was started again")
	}
	// Their dead containers stay while they are desired, as on a kubelet:
	// their logs and exit codes can still be read (kubectl logs of a
	// completed pod).
	all := runtimePods(t, ra.rt, true)
	for _, uid := range []types.UID{ok, bad, retry} {
		if rp := all[uid]; rp == nil || len(rp.Containers) == 0 {
			t.Errorf("completed pod %s: its dead containers were removed while it is still desired", uid)
		}
	}
	got := series(t, ra.reg)
	if got[`kubelet_desired_pods{static="true"}`] != 3 || got[`kubelet_active_pods{static="true"}`] != 0 {
		t.Errorf("desired %v, active %v static pods; want 3 and 0", got[`kubelet_desired_pods{static="true"}`], got[`kubelet_active_pods{static="true"}`])
	}

	// Their manifests go: they are forgotten and nothing is left.
	for _, name := range []string{"ok.yaml", "bad.yaml", "retry.yaml"} {
		removeManifest(t, dir, name)
	}
	for _, uid := range []types.UID{ok, bad, retry} {
		waitGone(t, ra, uid)
	}
}

// A pod that ran to completion and finished is deleted in the API only
// later: its final status must be published again with the deletion, so
// that an API-backed reporter deletes the object (the kubelet's status
// manager does so once the pod is finished and being deleted). Otherwise
// the object stays Terminating for ever.
func TestCompletedPodDeletedLaterFinishesAgain(t *testing.T) {
	srv, endpoint := startFakeCRI(t, fakecri.Options{Images: []string{testImage}})
	var channel *source.Channel
	var mu sync.Mutex
	var finished []*v1.Pod
	ra := startAgentWith(t, endpoint, t.TempDir(), func(o *agent.Options) {
		apiChannel(o, &channel)
		o.StatusReporter = func(agent.PodStateProvider) (agent.StatusReporter, error) {
			return agent.StatusReporterFuncs{PodFinishedFunc: func(_ context.Context, pod, _ *v1.Pod, st v1.PodStatus) error {
				mu.Lock()
				defer mu.Unlock()
				if st.Phase != v1.PodSucceeded {
					t.Errorf("final status %s, want Succeeded", st.Phase)
				}
				finished = append(finished, pod)
				return nil
			}}, nil
		}
	})
	finishedPods := func() []*v1.Pod {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(finished)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "job", Namespace: "default", UID: "job-uid"},
		Spec: v1.PodSpec{RestartPolicy: v1.RestartPolicyNever, Containers: []v1.Container{{Name: "main", Image: testImage}}}}
	if err := channel.Push(ctx, []*v1.Pod{pod}); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, ra, pod.UID)
	ids := runningContainerIDs(runtimePods(t, ra.rt, false)[pod.UID])
	if len(ids) != 1 {
		t.Fatalf("running containers %v, want one", ids)
	}
	if err := srv.ExitContainer(ids[0], 0); err != nil {
		t.Fatal(err)
	}
	podworkertest.WaitFor(t, waitTimeout, "job finished", func() bool { return len(finishedPods()) == 1 })

	// The API server records the final phase; later the pod is deleted.
	done := pod.DeepCopy()
	done.Status.Phase = v1.PodSucceeded
	if err := channel.Push(ctx, []*v1.Pod{done}); err != nil {
		t.Fatal(err)
	}
	ra.waitHousekeepings(t, 2)
	if n := len(finishedPods()); n != 1 {
		t.Fatalf("PodFinished called %d times before the deletion, want 1", n)
	}
	deleting := done.DeepCopy()
	now := metav1.Now()
	deleting.DeletionTimestamp = &now
	if err := channel.Push(ctx, []*v1.Pod{deleting}); err != nil {
		t.Fatal(err)
	}
	podworkertest.WaitFor(t, waitTimeout, "final status published again with the deletion", func() bool {
		f := finishedPods()
		return len(f) >= 2 && f[len(f)-1].DeletionTimestamp != nil
	})
	ra.waitHousekeepings(t, 3)
	if n := len(finishedPods()); n != 2 {
		t.Errorf("PodFinished called %d times, want 2: once when finished, once with the deletion", n)
	}
}
