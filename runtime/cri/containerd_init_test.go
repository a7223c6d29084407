package cri_test

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/runtime"
)

// TestRealRuntimeInitAndSidecar runs, on a real CRI runtime, a pod with two
// init containers (exit 0), a sidecar and a regular container: they start
// in order, and KillPod stops the regular container before the sidecar.
func TestRealRuntimeInitAndSidecar(t *testing.T) {
	rt := newRealRuntime(t, nil)
	image := realImage()
	ctx := realContext(t, 2*time.Minute)

	pod := realPod(image)
	always := v1.ContainerRestartPolicyAlways
	pull := v1.PullIfNotPresent
	pod.Spec.InitContainers = []v1.Container{
		{Name: "init1", Image: image, Args: []string{"exit", "0"}, ImagePullPolicy: pull},
		{Name: "side", Image: image, RestartPolicy: &always, ImagePullPolicy: pull},
		{Name: "init2", Image: image, Args: []string{"exit", "0"}, ImagePullPolicy: pull},
	}
	pod.Spec.Containers = pod.Spec.Containers[:1] // "main", runs
	cleanupPod(t, rt, pod)

	// Sync as the pod worker would, until main runs.
	var (
		st  *runtime.PodStatus
		err error
	)
	for {
		if err := rt.SyncPod(ctx, pod, nil); err != nil {
			t.Fatalf("SyncPod: %v", err)
		}
		st, err = rt.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
		if err != nil {
			t.Fatal(err)
		}
		if m := st.FindContainerStatusByName("main"); m != nil && m.State == runtime.ContainerStateRunning {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("main never ran; last status %+v", st)
		case <-time.After(100 * time.Millisecond):
		}
	}
	get := func(n string) *runtime.ContainerStatus {
		cs := st.FindContainerStatusByName(n)
		if cs == nil {
			t.Fatalf("%s: no status", n)
		}
		return cs
	}
	i1, side, i2, main := get("init1"), get("side"), get("init2"), get("main")
	if i1.ExitCode != 0 || i1.State != runtime.ContainerStateExited || i2.ExitCode != 0 || i2.State != runtime.ContainerStateExited || side.State != runtime.ContainerStateRunning {
		t.Fatalf("init1 %+v, init2 %+v, side %+v", i1, i2, side)
	}
	if i1.FinishedAt.After(side.StartedAt) || side.StartedAt.After(i2.StartedAt) || i2.FinishedAt.After(main.StartedAt) {
		t.Fatalf("order: init1 finished %v, side started %v, init2 started %v finished %v, main started %v",
			i1.FinishedAt, side.StartedAt, i2.StartedAt, i2.FinishedAt, main.StartedAt)
	}

	grace := int64(2)
	if err := rt.KillPod(ctx, pod, nil, &grace); err != nil {
		t.Fatalf("KillPod: %v", err)
	}
	st, err = rt.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	main, side = get("main"), get("side")
	if main.State != runtime.ContainerStateExited || side.State != runtime.ContainerStateExited || st.HasReadySandbox() {
		t.Fatalf("after KillPod: main %+v, side %+v, ready sandbox %v", main, side, st.HasReadySandbox())
	}
	if side.FinishedAt.Before(main.FinishedAt) {
		t.Fatalf("sidecar finished at %v, before main at %v", side.FinishedAt, main.FinishedAt)
	}
}
