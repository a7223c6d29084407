package agent_test

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc/codes"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/podmanager/source"
	"github.com/podlife/podlife/podworker"
	"github.com/podlife/podlife/podworker/podworkertest"
	"github.com/podlife/podlife/runtime/fakecri"
)

// env is the runtime an end-to-end flow runs against.
type env struct {
	endpoint string
	// failStops makes the next n stops of containers and sandboxes fail.
	failStops func(ra *runningAgent, n int)
}

// TestEndToEnd runs the agent in-process on fakecri over a unix socket and
// a temporary manifest folder, through the whole lifecycle of static pods.
func TestEndToEnd(t *testing.T) {
	srv, endpoint := startFakeCRI(t, fakecri.Options{Images: []string{testImage}})
	runEndToEnd(t, env{
		endpoint: endpoint,
		failStops: func(_ *runningAgent, n int) {
			srv.FailTimes("StopContainer", n, codes.Unavailable)
			srv.FailTimes("StopPodSandbox", n, codes.Unavailable)
		},
	})
}

// runEndToEnd is the end-to-end flow, shared by fakecri and containerd.
func runEndToEnd(t *testing.T, e env) {
	dir := t.TempDir()
	writeManifest(t, dir, "web.yaml", manifest("web", 1))
	writeManifest(t, dir, "keep.yaml", manifest("keep", 1))
	// Pods already running in the runtime (left by an earlier run) are
	// orphans to the agent.
	preexisting := float64(len(runtimePods(t, newRuntime(t, e.endpoint), false)))
	ra := startAgent(t, e.endpoint, dir)

	// Add: the pods run in the runtime.
	web, keep := ra.podUID(t, "web"), ra.podUID(t, "keep")
	waitRunning(t, ra, web)
	waitRunning(t, ra, keep)
	keepIDs := runningContainerIDs(runtimePods(t, ra.rt, false)[keep])

	// Edit: the old pod is terminated and removed, the new one runs.
	writeManifest(t, dir, "web.yaml", manifest("web", 1, "serve", "v2"))
	var web2 types.UID
	podworkertest.WaitFor(t, waitTimeout, "edited web pod", func() bool {
		v, ok := ra.pod("web")
		web2 = v.UID
		return ok && v.Desired && v.UID != web
	})
	waitRunning(t, ra, web2)
	waitGone(t, ra, web)
	if st, ok := ra.StatusReporter().Status(web); ok && st.Phase != "Succeeded" && st.Phase != "Failed" {
		t.Errorf("old web pod's last status: %s, want a terminal phase", st.Phase)
	}
	web2IDs := runningContainerIDs(runtimePods(t, ra.rt, false)[web2])

	// Invalid manifests: errors reported, the other pods untouched.
	writeManifest(t, dir, "bad.yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: bad\nspec:\n  containers: []\n")
	writeManifest(t, dir, "garbage.yaml", "{{{ not a manifest")
	podworkertest.WaitFor(t, waitTimeout, "invalid manifests reported", func() bool {
		return ra.errs.matching(source.ErrInvalidPod) > 0 && ra.errs.matching(source.ErrDecode) > 0
	})
	ra.waitHousekeepings(t, 2)
	if _, ok := ra.pod("bad"); ok {
		t.Error("the invalid pod reached the agent")
	}
	pods := runtimePods(t, ra.rt, false)
	if got := runningContainerIDs(pods[keep]); !slices.Equal(got, keepIDs) {
		t.Errorf("keep's containers changed after invalid manifests: %v, want %v", got, keepIDs)
	}
	if got := runningContainerIDs(pods[web2]); !slices.Equal(got, web2IDs) {
		t.Errorf("web's containers changed after invalid manifests: %v, want %v", got, web2IDs)
	}

	// Delete: the sandbox is gone and the worker forgotten.
	removeManifest(t, dir, "web.yaml")
	waitGone(t, ra, web2)

	// Force delete while the runtime fails its stops: the pod still
	// finishes, because the pod workers retry by themselves.
	writeManifest(t, dir, "hang.yaml", manifest("hang", 1, "hang"))
	hang := ra.podUID(t, "hang")
	waitRunning(t, ra, hang)
	e.failStops(ra, 2)
	removeManifest(t, dir, "hang.yaml")
	podworkertest.WaitFor(t, waitTimeout, "a failed kill", func() bool {
		info, ok := ra.Workers().PodInfo(hang)
		return !ok || info.Failures > 0
	})
	waitGone(t, ra, hang)

	// Recreated with the same UID while it terminates: it runs again once
	// the old incarnation finished, counted as a restart.
	again := manifest("again", 2, "hang")
	writeManifest(t, dir, "again.yaml", again)
	againUID := ra.podUID(t, "again")
	waitRunning(t, ra, againUID)
	oldIDs := runningContainerIDs(runtimePods(t, ra.rt, false)[againUID])
	removeManifest(t, dir, "again.yaml")
	podworkertest.WaitFor(t, waitTimeout, "again terminating", func() bool {
		info, ok := ra.Workers().PodInfo(againUID)
		return ok && info.Lifecycle == podworker.LifecycleTerminating
	})
	writeManifest(t, dir, "again.yaml", again)
	podworkertest.WaitFor(t, waitTimeout, "again restarted", func() bool {
		return series(t, ra.reg)[`kubelet_restarted_pods_total{static="true"}`] == 1
	})
	waitRunning(t, ra, againUID)
	againIDs := runningContainerIDs(runtimePods(t, ra.rt, false)[againUID])
	if slices.Equal(againIDs, oldIDs) {
		t.Errorf("again's containers %v were not recreated", againIDs)
	}

	ra.waitHousekeepings(t, 2)
	want := expectedSeries(map[string]float64{
		`kubelet_desired_pods{static="true"}`:                                   2,
		`kubelet_active_pods{static="true"}`:                                    2,
		`kubelet_working_pods{config="desired",lifecycle="sync",static="true"}`: 2,
		`kubelet_restarted_pods_total{static="true"}`:                           1,
		`kubelet_orphaned_runtime_pods_total{}`:                                 preexisting,
	})
	if diff := cmp.Diff(want, scrape(t, ra.reg)); diff != "" {
		t.Errorf("scraped metrics before the agent restart (-want +got):\n%s", diff)
	}

	// Agent restart: a pod removed while the agent was down is an orphan
	// in the runtime; it is terminated and counted. The others are adopted
	// without a restart.
	ra.stop(t)
	removeManifest(t, dir, "keep.yaml")
	// keep, and whatever else runs that is not again.
	orphans := float64(len(runtimePods(t, ra.rt, false)) - 1)
	if orphans < 1 {
		t.Fatalf("%v orphans in the runtime, want keep at least", orphans)
	}
	ra2 := startAgent(t, e.endpoint, dir)
	podworkertest.WaitFor(t, waitTimeout, "orphans counted", func() bool {
		return series(t, ra2.reg)[`kubelet_orphaned_runtime_pods_total{}`] == orphans
	})
	waitGone(t, ra2, keep)
	waitRunning(t, ra2, againUID)
	ra2.waitHousekeepings(t, 2)
	if got := runningContainerIDs(runtimePods(t, ra2.rt, false)[againUID]); !slices.Equal(got, againIDs) {
		t.Errorf("again's containers changed across the agent restart: %v, want %v", got, againIDs)
	}
	want = expectedSeries(map[string]float64{
		`kubelet_desired_pods{static="true"}`:                                   1,
		`kubelet_active_pods{static="true"}`:                                    1,
		`kubelet_working_pods{config="desired",lifecycle="sync",static="true"}`: 1,
		`kubelet_orphaned_runtime_pods_total{}`:                                 orphans,
	})
	if diff := cmp.Diff(want, scrape(t, ra2.reg)); diff != "" {
		t.Errorf("scraped metrics after the agent restart (-want +got):\n%s", diff)
	}
	if n, err := testutil.GatherAndCount(ra2.reg, podCountMetrics...); err != nil || n != 23 {
		t.Errorf("%d pod-count series (%v), want 23", n, err)
	}

	// Leave the runtime as it was found.
	removeManifest(t, dir, "again.yaml")
	waitGone(t, ra2, againUID)
	left := runtimePods(t, ra2.rt, true)
	for _, uid := range []types.UID{web, web2, keep, hang, againUID} {
		if _, ok := left[uid]; ok {
			t.Errorf("pod %s left in the runtime", uid)
		}
	}
}
