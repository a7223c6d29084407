package cri_test

import (
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podlife/podlife/runtime"
	"github.com/podlife/podlife/runtime/cri"
	"github.com/podlife/podlife/runtime/fakecri"
)

func sidecar(name string, args ...string) v1.Container {
	always := v1.ContainerRestartPolicyAlways
	return v1.Container{Name: name, Image: testImage, RestartPolicy: &always, Args: args}
}

func initC(name string, args ...string) v1.Container {
	return v1.Container{Name: name, Image: testImage, Args: args}
}

// names of the containers of the pod in its newest ready sandbox (or
// newest sandbox), in creation order.
func createdNames(st *runtime.PodStatus) []string {
	var out []string
	for _, cs := range slices.Backward(st.ContainerStatuses) {
		if len(st.SandboxStatuses) > 0 && cs.SandboxID != st.SandboxStatuses[0].ID {
			continue
		}
		out = append(out, cs.Name)
	}
	return out
}

func TestInitContainersRunInOrder(t *testing.T) {
	_, ep := startFake(t, fakecri.Options{})
	rt := newRuntime(t, ep)
	ctx := ctxT(t)
	pod := testPod("init", v1.RestartPolicyAlways, v1.Container{Name: "app"})
	pod.Spec.InitContainers = []v1.Container{initC("i1", "exit", "0"), initC("i2", "exit", "0")}

	for i, want := range [][]string{{"i1"}, {"i1", "i2"}, {"i1", "i2", "app"}, {"i1", "i2", "app"}} {
		if err := rt.SyncPod(ctx, pod, nil); err != nil {
			t.Fatalf("sync %d: %v", i+1, err)
		}
		st := podStatus(t, rt, pod)
		if got := createdNames(st); !slices.Equal(got, want) {
			t.Fatalf("after sync %d: containers %v, want %v", i+1, got, want)
		}
	}
	st := podStatus(t, rt, pod)
	for name, want := range map[string]runtime.ContainerType{"i1": runtime.ContainerTypeInit, "i2": runtime.ContainerTypeInit, "app": runtime.ContainerTypeRegular} {
		if cs := st.FindContainerStatusByName(name); cs.Type != want || cs.SandboxID != st.SandboxStatuses[0].ID {
			t.Errorf("%s: type %q sandbox %q, want %q in %q", name, cs.Type, cs.SandboxID, want, st.SandboxStatuses[0].ID)
		}
	}
	if cs := st.FindContainerStatusByName("app"); cs.State != runtime.ContainerStateRunning {
		t.Fatalf("app: %+v", cs)
	}
}

func TestInitContainerFailure(t *testing.T) {
	t.Run("Never: the pod fails, no regular container starts", func(t *testing.T) {
		_, ep := startFake(t, fakecri.Options{})
		rt := newRuntime(t, ep)
		ctx := ctxT(t)
		pod := testPod("initfail", v1.RestartPolicyNever, v1.Container{Name: "app"})
		pod.Spec.InitContainers = []v1.Container{sidecar("s"), initC("i", "exit", "3")}
		for i := range 3 {
			if err := rt.SyncPod(ctx, pod, nil); err != nil {
				t.Fatalf("sync %d: %v", i+1, err)
			}
		}
		st := podStatus(t, rt, pod)
		if cs := st.FindContainerStatusByName("app"); cs != nil {
			t.Fatalf("regular container created: %+v", cs)
		}
		if cs := st.FindContainerStatusByName("i"); cs.State != runtime.ContainerStateExited || cs.ExitCode != 3 || cs.RestartCount != 0 || cs.Type != runtime.ContainerTypeInit {
			t.Fatalf("init container: %+v", cs)
		}
		if !st.IsTerminal() {
			t.Fatalf("pod not terminal after its init container failed under Never: %v", st)
		}
	})
	t.Run("Always: restart with back-off", func(t *testing.T) {
		clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		_, ep := startFake(t, fakecri.Options{Clock: clk})
		rt := newRuntime(t, ep, func(o *cri.Options) { o.Clock = clk })
		ctx := ctxT(t)
		pod := testPod("initcrash", v1.RestartPolicyAlways, v1.Container{Name: "app"})
		pod.Spec.InitContainers = []v1.Container{initC("i", "exit", "1")}
		if err := rt.SyncPod(ctx, pod, nil); err != nil {
			t.Fatal(err)
		}
		if err := rt.SyncPod(ctx, pod, nil); err != nil { // first restart at once
			t.Fatal(err)
		}
		if err := rt.SyncPod(ctx, pod, nil); !errors.Is(err, runtime.ErrBackOff) {
			t.Fatalf("third sync: %v, want ErrBackOff", err)
		}
		clk.Step(10 * time.Second)
		if err := rt.SyncPod(ctx, pod, nil); err != nil {
			t.Fatal(err)
		}
		st := podStatus(t, rt, pod)
		if cs := st.FindContainerStatusByName("i"); cs.RestartCount != 2 {
			t.Fatalf("init container: %+v, want 2 restarts", cs)
		}
		if cs := st.FindContainerStatusByName("app"); cs != nil {
			t.Fatalf("regular container created before init succeeded: %+v", cs)
		}
		if !st.HasReadySandbox() {
			t.Fatal("sandbox stopped")
		}
	})
}

func TestInitContainersRunAgainInNewSandbox(t *testing.T) {
	srv, ep := startFake(t, fakecri.Options{})
	rt := newRuntime(t, ep)
	ctx := ctxT(t)
	pod := testPod("reinit", v1.RestartPolicyAlways, v1.Container{Name: "app"})
	pod.Spec.InitContainers = []v1.Container{initC("i1", "exit", "0"), initC("i2", "exit", "0")}
	for range 3 {
		if err := rt.SyncPod(ctx, pod, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := srv.StopSandbox(podStatus(t, rt, pod).SandboxStatuses[0].ID); err != nil {
		t.Fatal(err)
	}
	for i, want := range [][]string{{"i1"}, {"i1", "i2"}, {"i1", "i2", "app"}} {
		if err := rt.SyncPod(ctx, pod, nil); err != nil {
			t.Fatalf("sync %d: %v", i+1, err)
		}
		st := podStatus(t, rt, pod)
		if st.SandboxStatuses[0].Attempt != 1 {
			t.Fatalf("sandbox %+v, want attempt 1", st.SandboxStatuses[0])
		}
		if got := createdNames(st); !slices.Equal(got, want) {
			t.Fatalf("new sandbox, after sync %d: containers %v, want %v", i+1, got, want)
		}
	}
}

func TestSidecarsStartInOrder(t *testing.T) {
	_, ep := startFake(t, fakecri.Options{})
	var gate atomic.Bool
	rt := newRuntime(t, ep, func(o *cri.Options) {
		o.Started = func(_ types.UID, name string) bool { return name != "s1" || gate.Load() }
	})
	ctx := ctxT(t)
	pod := testPod("side", v1.RestartPolicyAlways, v1.Container{Name: "app"})
	pod.Spec.InitContainers = []v1.Container{sidecar("s1"), initC("i", "exit", "0"), sidecar("s2")}

	sync := func(want ...string) {
		t.Helper()
		if err := rt.SyncPod(ctx, pod, nil); err != nil {
			t.Fatal(err)
		}
		if got := createdNames(podStatus(t, rt, pod)); !slices.Equal(got, want) {
			t.Fatalf("containers %v, want %v", got, want)
		}
	}
	sync("s1")
	sync("s1") // s1's startup probe has not passed: nothing else starts
	gate.Store(true)
	sync("s1", "i")
	sync("s1", "i", "s2", "app")
	st := podStatus(t, rt, pod)
	for _, n := range []string{"s1", "s2", "app"} {
		if cs := st.FindContainerStatusByName(n); cs.State != runtime.ContainerStateRunning {
			t.Fatalf("%s: %+v", n, cs)
		}
	}
	if cs := st.FindContainerStatusByName("s2"); cs.Type != runtime.ContainerTypeSidecar {
		t.Fatalf("s2 type %q", cs.Type)
	}
}

func TestSidecarRestartsAndDoesNotHoldCompletion(t *testing.T) {
	for _, policy := range []v1.RestartPolicy{v1.RestartPolicyNever, v1.RestartPolicyOnFailure} {
		t.Run(string(policy), func(t *testing.T) {
			srv, ep := startFake(t, fakecri.Options{})
			rt := newRuntime(t, ep)
			ctx := ctxT(t)
			pod := testPod("job", policy, v1.Container{Name: "app"})
			pod.Spec.InitContainers = []v1.Container{sidecar("s")}
			for range 2 {
				if err := rt.SyncPod(ctx, pod, nil); err != nil {
					t.Fatal(err)
				}
			}
			st := podStatus(t, rt, pod)
			// The sidecar crashes: it restarts although the pod's policy says Never/OnFailure.
			if err := srv.ExitContainer(st.FindContainerStatusByName("s").ID.ID, 0); err != nil {
				t.Fatal(err)
			}
			if err := rt.SyncPod(ctx, pod, nil); err != nil {
				t.Fatal(err)
			}
			st = podStatus(t, rt, pod)
			if cs := st.FindContainerStatusByName("s"); cs.State != runtime.ContainerStateRunning || cs.RestartCount != 1 {
				t.Fatalf("sidecar after its exit: %+v", cs)
			}
			// The regular container completes: the sidecar is stopped and the pod is done.
			if err := srv.ExitContainer(st.FindContainerStatusByName("app").ID.ID, 0); err != nil {
				t.Fatal(err)
			}
			if err := rt.SyncPod(ctx, pod, nil); err != nil {
				t.Fatal(err)
			}
			st = podStatus(t, rt, pod)
			if !st.IsTerminal() {
				t.Fatalf("pod still runs after its regular container completed: %+v", st.FindContainerStatusByName("s"))
			}
			if cs := st.FindContainerStatusByName("app"); cs.ExitCode != 0 || cs.RestartCount != 0 {
				t.Fatalf("app: %+v", cs)
			}
			if err := rt.SyncPod(ctx, pod, nil); err != nil {
				t.Fatal(err)
			}
			if st := podStatus(t, rt, pod); len(st.SandboxStatuses) != 1 || !st.IsTerminal() {
				t.Fatalf("a completed pod was started again: %v", st)
			}
		})
	}
}

func TestKillPodStopsSidecarsLastInReverseOrder(t *testing.T) {
	srv, ep := startFake(t, fakecri.Options{})
	rt := newRuntime(t, ep)
	ctx := ctxT(t)
	pod := testPod("order", v1.RestartPolicyAlways, v1.Container{Name: "a"}, v1.Container{Name: "b"})
	pod.Spec.InitContainers = []v1.Container{sidecar("s1"), sidecar("s2"), sidecar("s3")}
	grace := int64(20)
	pod.Spec.TerminationGracePeriodSeconds = &grace
	for range 2 {
		if err := rt.SyncPod(ctx, pod, nil); err != nil {
			t.Fatal(err)
		}
	}
	pods, err := rt.GetPods(ctx, false)
	if err != nil || len(pods) != 1 || len(pods[0].Containers) != 5 {
		t.Fatalf("GetPods: %v %+v", err, pods)
	}
	if err := rt.KillPod(ctx, nil, pods[0], nil); err != nil { // without the spec: labels say
		t.Fatal(err)
	}
	st := podStatus(t, rt, pod)
	fin := func(n string) time.Time { return st.FindContainerStatusByName(n).FinishedAt }
	for _, pair := range [][2]string{{"a", "s3"}, {"b", "s3"}, {"s3", "s2"}, {"s2", "s1"}} {
		if !fin(pair[0]).Before(fin(pair[1])) {
			t.Errorf("%s stopped at %v, not before %s at %v", pair[0], fin(pair[0]), pair[1], fin(pair[1]))
		}
	}
	for _, n := range []string{"a", "s1"} {
		if to, ok := srv.StopTimeout(st.FindContainerStatusByName(n).ID.ID); !ok || to > grace || to < cri.MinimumGracePeriod {
			t.Errorf("%s stop timeout %d (%v), want within [2, %d]", n, to, ok, grace)
		}
	}
}
