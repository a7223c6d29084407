package agent_test

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podlife/podlife/podworker/podworkertest"
	"github.com/podlife/podlife/runtime/fakecri"
)

// What is left, dead, of pods no worker knows is removed: a pod whose
// sandbox died while no agent ran and whose manifest went meanwhile, and a
// pod an earlier agent killed but did not remove. Desired pods are left
// alone.
func TestDeadRemainsRemoved(t *testing.T) {
	srv, endpoint := startFakeCRI(t, fakecri.Options{Images: []string{testImage}})
	dir := t.TempDir()
	writeManifest(t, dir, "gone.yaml", manifest("gone", 1))
	writeManifest(t, dir, "stay.yaml", manifest("stay", 1))
	ra := startAgent(t, endpoint, dir)
	gone, stay := ra.podUID(t, "gone"), ra.podUID(t, "stay")
	waitRunning(t, ra, gone)
	waitRunning(t, ra, stay)
	ra.stop(t)

	// While no agent runs: gone's sandbox dies and its manifest goes; a
	// pod is killed behind everyone's back and left unremoved.
	rt := newRuntime(t, endpoint)
	sb := runtimePods(t, rt, false)[gone].Sandboxes[0].ID.ID
	if err := srv.StopSandbox(sb); err != nil {
		t.Fatal(err)
	}
	removeManifest(t, dir, "gone.yaml")
	ctx := context.Background()
	killed := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "killed", Namespace: "default", UID: "killed-uid"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "main", Image: testImage}}}}
	if err := rt.SyncPod(ctx, killed, nil); err != nil {
		t.Fatal(err)
	}
	one := int64(1)
	if err := rt.KillPod(ctx, killed, nil, &one); err != nil {
		t.Fatal(err)
	}

	ra2 := startAgent(t, endpoint, dir)
	podworkertest.WaitFor(t, waitTimeout, "dead remains removed", func() bool {
		all := runtimePods(t, rt, true)
		_, g := all[gone]
		_, k := all[killed.UID]
		return all != nil && !g && !k
	})
	waitRunning(t, ra2, stay)
	if hk, _ := ra2.LastHousekeeping(); hk.OrphanedRuntimePods != 0 {
		t.Errorf("dead pods counted as orphaned runtime pods: %+v", hk)
	}
	if got := series(t, ra2.reg)[`kubelet_orphaned_runtime_pods_total{}`]; got != 0 {
		t.Errorf("kubelet_orphaned_runtime_pods_total %v, want 0: nothing ran", got)
	}
}
