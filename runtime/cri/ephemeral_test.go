package cri_test

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podlife/podlife/runtime"
	"github.com/podlife/podlife/runtime/fakecri"
)

// debugContainer is an ephemeral container as kubectl debug adds it.
func debugContainer(name, target string, args ...string) v1.EphemeralContainer {
	return v1.EphemeralContainer{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: name, Image: testImage, Args: args,
		Stdin: true, TTY: true}, TargetContainerName: target}
}

// instances returns the runtime's instances of the named container.
func instances(st *runtime.PodStatus, name string) []*runtime.ContainerStatus {
	var out []*runtime.ContainerStatus
	for _, cs := range st.ContainerStatuses {
		if cs.Name == name {
			out = append(out, cs)
		}
	}
	return out
}

// An ephemeral container added to a running pod is started in the next
// sync, in its target's PID namespace, with what a regular container gets;
// once it exited it is never started again, under RestartPolicy Always, and
// no back-off is reported for it; KillPod stops it with the pod.
func TestEphemeralContainer(t *testing.T) {
	srv, ep := startFake(t, fakecri.Options{})
	rt := newRuntime(t, ep)
	ctx := ctxT(t)
	pod := testPod("dbg", v1.RestartPolicyAlways, v1.Container{Name: "main"})
	if err := rt.SyncPod(ctx, pod, nil); err != nil {
		t.Fatal(err)
	}
	main := podStatus(t, rt, pod).FindContainerStatusByName("main")
	if main == nil || main.State != runtime.ContainerStateRunning {
		t.Fatalf("main: %+v", main)
	}

	pod.Spec.EphemeralContainers = []v1.EphemeralContainer{debugContainer("debug", "main")}
	pod.Spec.EphemeralContainers[0].Env = []v1.EnvVar{{Name: "WHO", Value: "debugger"}}
	if err := rt.SyncPod(ctx, pod, podStatus(t, rt, pod)); err != nil {
		t.Fatalf("SyncPod with an ephemeral container: %v", err)
	}
	st := podStatus(t, rt, pod)
	debug := st.FindContainerStatusByName("debug")
	if debug == nil || debug.State != runtime.ContainerStateRunning || debug.RestartCount != 0 {
		t.Fatalf("debug after the sync: %+v", debug)
	}
	if m := st.FindContainerStatusByName("main"); m.ID != main.ID {
		t.Fatalf("main was replaced: %s, then %s", main.ID, m.ID)
	}
	cfg, err := srv.ContainerConfig(debug.ID.ID)
	if err != nil {
		t.Fatal(err)
	}
	ns := cfg.GetLinux().GetSecurityContext().GetNamespaceOptions()
	if ns.GetPid() != runtimeapi.NamespaceMode_TARGET || ns.GetTargetId() != main.ID.ID {
		t.Errorf("debug's PID namespace: %v target %q, want TARGET %q", ns.GetPid(), ns.GetTargetId(), main.ID.ID)
	}
	if !cfg.GetStdin() || !cfg.GetTty() || cfg.GetMetadata().GetAttempt() != 0 {
		t.Errorf("debug's config: stdin %v tty %v attempt %d", cfg.GetStdin(), cfg.GetTty(), cfg.GetMetadata().GetAttempt())
	}
	if envs := cfg.GetEnvs(); len(envs) != 1 || envs[0].GetKey() != "WHO" || string(envs[0].GetValue()) != "debugger" {
		t.Errorf("debug's environment: %v", envs)
	}

	if err := srv.ExitContainer(debug.ID.ID, 3); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := rt.SyncPod(ctx, pod, podStatus(t, rt, pod)); err != nil {
			t.Fatalf("SyncPod after debug exited: %v", err)
		}
	}
	st = podStatus(t, rt, pod)
	if got := instances(st, "debug"); len(got) != 1 || got[0].State != runtime.ContainerStateExited || got[0].ExitCode != 3 || got[0].RestartCount != 0 {
		t.Fatalf("debug after it exited and three syncs: %d instances, %+v; want the one, exited 3", len(got), got[0])
	}

	// A second one, without a target: its own PID namespace.
	pod.Spec.EphemeralContainers = append(pod.Spec.EphemeralContainers, debugContainer("debug2", ""))
	if err := rt.SyncPod(ctx, pod, podStatus(t, rt, pod)); err != nil {
		t.Fatal(err)
	}
	st = podStatus(t, rt, pod)
	debug2 := st.FindContainerStatusByName("debug2")
	if debug2 == nil || debug2.State != runtime.ContainerStateRunning {
		t.Fatalf("debug2: %+v", debug2)
	}
	if cfg, _ := srv.ContainerConfig(debug2.ID.ID); cfg.GetLinux().GetSecurityContext().GetNamespaceOptions().GetPid() != runtimeapi.NamespaceMode_CONTAINER {
		t.Errorf("debug2's PID namespace: %v, want CONTAINER", cfg.GetLinux().GetSecurityContext().GetNamespaceOptions())
	}
	if n := len(instances(st, "debug")); n != 1 {
		t.Errorf("debug has %d instances, want 1", n)
	}

	if err := rt.KillPod(ctx, pod, nil, nil); err != nil {
		t.Fatal(err)
	}
	if cs := podStatus(t, rt, pod).FindContainerStatusByName("debug2"); cs.State != runtime.ContainerStateExited {
		t.Errorf("debug2 after KillPod: %s", cs.State)
	}
}

// A pod whose regular containers have all finished (RestartPolicy Never)
// is done even while an ephemeral container runs: the sandbox is stopped,
// which ends it, and nothing starts again.
func TestEphemeralContainerFinishedPod(t *testing.T) {
	srv, ep := startFake(t, fakecri.Options{})
	rt := newRuntime(t, ep)
	ctx := ctxT(t)
	pod := testPod("job", v1.RestartPolicyNever, v1.Container{Name: "main"})
	pod.Spec.EphemeralContainers = []v1.EphemeralContainer{debugContainer("debug", "main")}
	if err := rt.SyncPod(ctx, pod, nil); err != nil {
		t.Fatal(err)
	}
	// The sync that created the sandbox started main only.
	st := podStatus(t, rt, pod)
	if cs := st.FindContainerStatusByName("debug"); cs != nil {
		t.Fatalf("debug started with the sandbox: %+v", cs)
	}
	if err := rt.SyncPod(ctx, pod, st); err != nil {
		t.Fatal(err)
	}
	st = podStatus(t, rt, pod)
	if cs := st.FindContainerStatusByName("debug"); cs == nil || cs.State != runtime.ContainerStateRunning {
		t.Fatalf("debug: %+v", cs)
	}
	if err := srv.ExitContainer(st.FindContainerStatusByName("main").ID.ID, 0); err != nil {
		t.Fatal(err)
	}
	if err := rt.SyncPod(ctx, pod, podStatus(t, rt, pod)); err != nil {
		t.Fatal(err)
	}
	st = podStatus(t, rt, pod)
	if !st.IsTerminal() || st.HasReadySandbox() {
		t.Fatalf("pod not terminal with main done and debug running: %+v", st.SandboxStatuses)
	}
	if cs := st.FindContainerStatusByName("debug"); cs.State != runtime.ContainerStateExited {
		t.Fatalf("debug after the pod finished: %s", cs.State)
	}
	for range 2 {
		if err := rt.SyncPod(ctx, pod, nil); err != nil {
			t.Fatal(err)
		}
	}
	if n := srv.CallCount("RunPodSandbox"); n != 1 {
		t.Errorf("RunPodSandbox called %d times, want 1", n)
	}
	if n := len(instances(podStatus(t, rt, pod), "debug")); n != 1 {
		t.Errorf("debug has %d instances, want 1", n)
	}
}

// An ephemeral container that cannot start fails alone, with the kubelet's
// reason, and the next sync tries again: a volume the adapter cannot
// mount, a target with no instance (CreateContainerConfigError), a
// runtime that refuses to create it (CreateContainerError). The pod's
// other containers are synced as usual.
func TestEphemeralContainerStartFailures(t *testing.T) {
	srv, ep := startFake(t, fakecri.Options{})
	rt := newRuntime(t, ep)
	ctx := ctxT(t)
	pod := testPod("fail", v1.RestartPolicyAlways, v1.Container{Name: "main"}, v1.Container{Name: "side"})
	pod.Spec.Volumes = []v1.Volume{{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{}}}}
	if err := rt.SyncPod(ctx, pod, nil); err != nil {
		t.Fatal(err)
	}
	st := podStatus(t, rt, pod)
	sideID := st.FindContainerStatusByName("side").ID.ID

	check := func(what string, err error, reason error, text string) {
		t.Helper()
		f := runtime.StartFailures(err)["debug"]
		if f == nil || !errors.Is(f.Reason, reason) || !strings.Contains(f.Message, text) {
			t.Fatalf("%s: %v; want a %v for debug saying %q", what, err, reason, text)
		}
		if cs := podStatus(t, rt, pod).FindContainerStatusByName("debug"); cs != nil {
			t.Fatalf("%s: debug has an instance: %+v", what, cs)
		}
	}

	ec := debugContainer("debug", "")
	ec.VolumeMounts = []v1.VolumeMount{{Name: "cfg", MountPath: "/cfg"}}
	pod.Spec.EphemeralContainers = []v1.EphemeralContainer{ec}
	err := rt.SyncPod(ctx, pod, podStatus(t, rt, pod))
	check("configMap volume", err, runtime.ErrCreateContainerConfig, "spec.ephemeralContainers[0] mounts it")
	if !errors.Is(err, runtime.ErrFailedPrecondition) {
		t.Errorf("configMap volume: %v does not wrap ErrFailedPrecondition", err)
	}

	// The other containers are still synced: side, exited, restarts.
	if err := srv.ExitContainer(sideID, 1); err != nil {
		t.Fatal(err)
	}
	pod.Spec.EphemeralContainers = []v1.EphemeralContainer{debugContainer("debug", "ghost")}
	err = rt.SyncPod(ctx, pod, podStatus(t, rt, pod))
	check("target not in the pod", err, runtime.ErrCreateContainerConfig, `no container "ghost" in the pod`)
	if cs := podStatus(t, rt, pod).FindContainerStatusByName("side"); cs.RestartCount != 1 || cs.State != runtime.ContainerStateRunning {
		t.Errorf("side after an ephemeral container failed in the same sync: %+v", cs)
	}

	// A target of the spec with no instance.
	pod.Spec.EphemeralContainers = []v1.EphemeralContainer{debugContainer("debug", "main")}
	noMain := podStatus(t, rt, pod)
	for i, cs := range noMain.ContainerStatuses {
		if cs.Name == "main" {
			noMain.ContainerStatuses = append(noMain.ContainerStatuses[:i], noMain.ContainerStatuses[i+1:]...)
			break
		}
	}
	// (main has no instance in the status given; the plan starts it too,
	// and the runtime refuses a second one of the same attempt.)
	err = rt.SyncPod(ctx, pod, noMain)
	check("target without an instance", err, runtime.ErrCreateContainerConfig, "unable to find target container main")

	srv.FailNext("CreateContainer", codes.Internal)
	err = rt.SyncPod(ctx, pod, podStatus(t, rt, pod))
	check("CreateContainer refused", err, runtime.ErrCreateContainer, "")

	if err := rt.SyncPod(ctx, pod, podStatus(t, rt, pod)); err != nil {
		t.Fatalf("SyncPod once the runtime accepts: %v", err)
	}
	if cs := podStatus(t, rt, pod).FindContainerStatusByName("debug"); cs == nil || cs.State != runtime.ContainerStateRunning {
		t.Fatalf("debug: %+v", cs)
	}
}
