package cri_test

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/runtime"
	"github.com/podlife/podlife/runtime/cri"
	"github.com/podlife/podlife/runtime/fakecri"
)

var always = v1.ContainerRestartPolicyAlways

// syncUntil syncs the pod with a fresh status until cond holds on the
// status, and returns the last SyncPod error.
func syncUntil(t *testing.T, rt *cri.Runtime, pod *v1.Pod, what string, cond func(*runtime.PodStatus) bool) error {
	t.Helper()
	var err error
	deadline := time.Now().Add(10 * time.Second)
	for {
		st := podStatus(t, rt, pod)
		if cond(st) {
			return err
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached; last SyncPod error %v; status %+v", what, err, st.ContainerStatuses)
		}
		err = rt.SyncPod(ctxT(t), pod, st)
	}
}

func state(st *runtime.PodStatus, name string) runtime.ContainerState {
	if cs := st.FindContainerStatusByName(name); cs != nil {
		return cs.State
	}
	return ""
}

func exists(st *runtime.PodStatus, name string) bool {
	return st.FindContainerStatusByName(name) != nil
}

// Init containers run one at a time, in order, each to success, before any
// regular container.
func TestInitContainersRunInOrder(t *testing.T) {
	_, ep := startFake(t, fakecri.Options{})
	rt := newRuntime(t, ep)
	pod := testPod("init", v1.RestartPolicyAlways, v1.Container{Name: "app"})
	pod.Spec.InitContainers = []v1.Container{
		{Name: "first", Image: testImage, Args: []string{"exit", "0"}},
		{Name: "second", Image: testImage, Args: []string{"exit", "0"}},
	}
	if err := rt.SyncPod(ctxT(t), pod, nil); err != nil {
		t.Fatal(err)
	}
	st := podStatus(t, rt, pod)
	if !exists(st, "first") || exists(st, "second") || exists(st, "app") {
		t.Fatalf("after the first sync: %+v", st.ContainerStatuses)
	}
	syncUntil(t, rt, pod, "second created", func(st *runtime.PodStatus) bool { return exists(st, "second") })
	if st := podStatus(t, rt, pod); exists(st, "app") {
		t.Fatal("app created while the second init container ran")
	}
	syncUntil(t, rt, pod, "app running", func(st *runtime.PodStatus) bool { return state(st, "app") == runtime.ContainerStateRunning })
	// Done: syncing again runs no init container again.
	for range 3 {
		if err := rt.SyncPod(ctxT(t), pod, podStatus(t, rt, pod)); err != nil {
			t.Fatal(err)
		}
	}
	for _, cs := range podStatus(t, rt, pod).ContainerStatuses {
		if cs.Name != "app" && cs.RestartCount != 0 {
			t.Errorf("init container %s ran again (restart count %d)", cs.Name, cs.RestartCount)
		}
	}
}

// With restartPolicy Never, a failed init container fails the pod: no
// regular container is ever created. Otherwise it is restarted after its
// back-off.
func TestInitContainerFailure(t *testing.T) {
	_, ep := startFake(t, fakecri.Options{})
	rt := newRuntime(t, ep)
	never := testPod("never", v1.RestartPolicyNever, v1.Container{Name: "app"})
	never.Spec.InitContainers = []v1.Container{{Name: "setup", Image: testImage, Args: []string{"exit", "1"}}}
	syncUntil(t, rt, never, "setup failed", func(st *runtime.PodStatus) bool { return state(st, "setup") == runtime.ContainerStateExited })
	for range 3 {
		if err := rt.SyncPod(ctxT(t), never, podStatus(t, rt, never)); err != nil {
			t.Fatalf("SyncPod of a pod failed by its init container: %v", err)
		}
	}
	if st := podStatus(t, rt, never); exists(st, "app") || st.FindContainerStatusByName("setup").RestartCount != 0 {
		t.Fatalf("Never pod after its init container failed: %+v", st.ContainerStatuses)
	}

	again := testPod("again", v1.RestartPolicyAlways, v1.Container{Name: "app"})
	again.Spec.InitContainers = []v1.Container{{Name: "setup", Image: testImage, Args: []string{"exit", "1"}}}
	syncUntil(t, rt, again, "setup restarted", func(st *runtime.PodStatus) bool {
		cs := st.FindContainerStatusByName("setup")
		return cs != nil && cs.RestartCount >= 1 && cs.State == runtime.ContainerStateExited
	})
	// Failed again at once: the next restart waits for the back-off.
	if err := rt.SyncPod(ctxT(t), again, podStatus(t, rt, again)); !errors.Is(err, runtime.ErrBackOff) {
		t.Fatalf("a failing init container under Always: %v, want ErrBackOff", err)
	}
	if exists(podStatus(t, rt, again), "app") {
		t.Fatal("app created although its init container never succeeded")
	}
}

// A sidecar starts before the next init container and the regular ones,
// restarts when it exits even in a Never pod, does not hold the pod's
// completion, and is stopped after the regular containers at KillPod.
func TestSidecars(t *testing.T) {
	srv, ep := startFake(t, fakecri.Options{})
	rt := newRuntime(t, ep)
	pod := testPod("side", v1.RestartPolicyNever, v1.Container{Name: "app"})
	pod.Spec.InitContainers = []v1.Container{
		{Name: "proxy", Image: testImage, RestartPolicy: &always},
		{Name: "setup", Image: testImage, Args: []string{"exit", "0"}},
		{Name: "logger", Image: testImage, RestartPolicy: &always},
	}
	if err := rt.SyncPod(ctxT(t), pod, nil); err != nil {
		t.Fatal(err)
	}
	if st := podStatus(t, rt, pod); !exists(st, "proxy") || exists(st, "setup") {
		t.Fatalf("after the first sync: %+v", st.ContainerStatuses)
	}
	syncUntil(t, rt, pod, "app running", func(st *runtime.PodStatus) bool { return state(st, "app") == runtime.ContainerStateRunning })
	st := podStatus(t, rt, pod)
	if state(st, "proxy") != runtime.ContainerStateRunning || state(st, "logger") != runtime.ContainerStateRunning {
		t.Fatalf("sidecars not running: %+v", st.ContainerStatuses)
	}
	// A sidecar that exits is restarted, although the pod is Never.
	if err := srv.ExitContainer(st.FindContainerStatusByName("proxy").ID.ID, 2); err != nil {
		t.Fatal(err)
	}
	syncUntil(t, rt, pod, "proxy restarted", func(st *runtime.PodStatus) bool {
		cs := st.FindContainerStatusByName("proxy")
		return cs.RestartCount == 1 && cs.State == runtime.ContainerStateRunning
	})

	// KillPod: app first, then logger, then proxy (reverse order).
	if err := rt.KillPod(ctxT(t), pod, nil, nil); err != nil {
		t.Fatal(err)
	}
	st = podStatus(t, rt, pod)
	app, logger, proxy := st.FindContainerStatusByName("app"), st.FindContainerStatusByName("logger"), st.FindContainerStatusByName("proxy")
	if !app.FinishedAt.Before(logger.FinishedAt) || !logger.FinishedAt.Before(proxy.FinishedAt) {
		t.Errorf("stop order: app %v, logger %v, proxy %v; want app, then logger, then proxy",
			app.FinishedAt.Format(time.StampNano), logger.FinishedAt.Format(time.StampNano), proxy.FinishedAt.Format(time.StampNano))
	}
}

// A Never pod whose regular container completed is done although its
// sidecar runs: the sidecar is not restarted and the sandbox is stopped.
func TestSidecarDoesNotHoldCompletion(t *testing.T) {
	srv, ep := startFake(t, fakecri.Options{})
	rt := newRuntime(t, ep)
	pod := testPod("job", v1.RestartPolicyNever, v1.Container{Name: "work", Args: []string{"exit", "0"}})
	pod.Spec.InitContainers = []v1.Container{{Name: "proxy", Image: testImage, RestartPolicy: &always}}
	syncUntil(t, rt, pod, "work done", func(st *runtime.PodStatus) bool { return state(st, "work") == runtime.ContainerStateExited })
	syncUntil(t, rt, pod, "sandbox stopped", func(st *runtime.PodStatus) bool { return !st.HasReadySandbox() })
	if _, running := srv.RunningCounts(); running != 0 {
		t.Errorf("%d containers still run after the job completed", running)
	}
}

// Init containers run again in a new sandbox.
func TestInitContainersRunAgainInNewSandbox(t *testing.T) {
	srv, ep := startFake(t, fakecri.Options{})
	rt := newRuntime(t, ep)
	pod := testPod("resandbox", v1.RestartPolicyAlways, v1.Container{Name: "app"})
	pod.Spec.InitContainers = []v1.Container{{Name: "setup", Image: testImage, Args: []string{"exit", "0"}}}
	syncUntil(t, rt, pod, "app running", func(st *runtime.PodStatus) bool { return state(st, "app") == runtime.ContainerStateRunning })
	st := podStatus(t, rt, pod)
	if err := srv.StopSandbox(st.SandboxStatuses[0].ID); err != nil {
		t.Fatal(err)
	}
	syncUntil(t, rt, pod, "setup ran again", func(st *runtime.PodStatus) bool {
		cs := st.FindContainerStatusByName("setup")
		return cs != nil && cs.RestartCount >= 1
	})
	syncUntil(t, rt, pod, "app running again", func(st *runtime.PodStatus) bool {
		cs := st.FindContainerStatusByName("app")
		return cs.State == runtime.ContainerStateRunning && cs.RestartCount >= 1
	})
}

func TestValidateInitContainers(t *testing.T) {
	_, ep := startFake(t, fakecri.Options{})
	rt := newRuntime(t, ep)
	onFailure := v1.ContainerRestartPolicy("OnFailure")
	for name, edit := range map[string]func(*v1.Pod){
		"ephemeral without name": func(p *v1.Pod) { p.Spec.EphemeralContainers = []v1.EphemeralContainer{{}} },
		"init restart": func(p *v1.Pod) {
			p.Spec.InitContainers = []v1.Container{{Name: "i", Image: testImage, RestartPolicy: &onFailure}}
		},
		"duplicate name":   func(p *v1.Pod) { p.Spec.InitContainers = []v1.Container{{Name: "app", Image: testImage}} },
		"init without img": func(p *v1.Pod) { p.Spec.InitContainers = []v1.Container{{Name: "i"}} },
	} {
		pod := testPod("v", v1.RestartPolicyAlways, v1.Container{Name: "app"})
		edit(pod)
		if err := rt.SyncPod(ctxT(t), pod, nil); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// A sidecar with a startup probe holds the next init container until the
// gate (the prober) says it started.
func TestSidecarStartupGate(t *testing.T) {
	_, ep := startFake(t, fakecri.Options{})
	rt := newRuntime(t, ep)
	var started atomic.Bool
	rt.SetStarted(func(_ types.UID, name string) bool { return name == "proxy" && started.Load() })
	pod := testPod("gate", v1.RestartPolicyAlways, v1.Container{Name: "app"})
	pod.Spec.InitContainers = []v1.Container{
		{Name: "proxy", Image: testImage, RestartPolicy: &always, StartupProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}}},
		{Name: "setup", Image: testImage, Args: []string{"exit", "0"}},
	}
	syncUntil(t, rt, pod, "proxy running", func(st *runtime.PodStatus) bool { return state(st, "proxy") == runtime.ContainerStateRunning })
	for range 3 {
		if err := rt.SyncPod(ctxT(t), pod, podStatus(t, rt, pod)); err != nil {
			t.Fatal(err)
		}
	}
	if exists(podStatus(t, rt, pod), "setup") {
		t.Fatal("setup started before the sidecar's startup probe passed")
	}
	started.Store(true)
	syncUntil(t, rt, pod, "app running", func(st *runtime.PodStatus) bool { return state(st, "app") == runtime.ContainerStateRunning })
}

// Once the pod is initialized, restarting a vanished sidecar does not
// hold the regular containers: one sync brings back both.
func TestInitializedPodSidecarDoesNotHoldRegularContainers(t *testing.T) {
	srv, ep := startFake(t, fakecri.Options{})
	rt := newRuntime(t, ep)
	pod := testPod("held", v1.RestartPolicyAlways, v1.Container{Name: "app"})
	pod.Spec.InitContainers = []v1.Container{{Name: "proxy", Image: testImage, RestartPolicy: &always}}
	syncUntil(t, rt, pod, "app running", func(st *runtime.PodStatus) bool { return state(st, "app") == runtime.ContainerStateRunning })
	st := podStatus(t, rt, pod)
	if err := srv.Forget(st.FindContainerStatusByName("proxy").ID.ID); err != nil {
		t.Fatal(err)
	}
	if err := srv.ExitContainer(st.FindContainerStatusByName("app").ID.ID, 1); err != nil {
		t.Fatal(err)
	}
	if err := rt.SyncPod(ctxT(t), pod, podStatus(t, rt, pod)); err != nil {
		t.Fatal(err)
	}
	st = podStatus(t, rt, pod)
	if state(st, "proxy") != runtime.ContainerStateRunning || state(st, "app") != runtime.ContainerStateRunning {
		t.Fatalf("after one sync: proxy %s, app %s; want both running", state(st, "proxy"), state(st, "app"))
	}
}
