package agent_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/agent"
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
// longer count as active. OnFailure restarts a failed container and
// completes once it exits 0. Removing the manifests then forgets them.
func TestRunToCompletion(t *testing.T) {
	srv := fakecri.New(fakecri.Options{Images: []string{testImage}})
	endpoint, err := srv.StartUnix(filepath.Join(t.TempDir(), "cri.sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
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
