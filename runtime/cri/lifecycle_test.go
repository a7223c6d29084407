package cri_test

import (
	"errors"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/runtime"
	"github.com/podlife/podlife/runtime/fakecri"
)

func TestLifecycle(t *testing.T) {
	srv, ep := startFake(t, fakecri.Options{})
	rt := newRuntime(t, ep)
	ctx := ctxT(t)
	pod := testPod("web", v1.RestartPolicyAlways, v1.Container{Name: "a"}, v1.Container{Name: "b", Image: "example.com/b:1"})
	pod.Labels = map[string]string{"app": "web"}

	if err := rt.SyncPod(ctx, pod, nil); err != nil {
		t.Fatalf("SyncPod: %v", err)
	}
	st := podStatus(t, rt, pod)
	if len(st.SandboxStatuses) != 1 || !st.HasReadySandbox() || st.SandboxStatuses[0].Network != "node" {
		t.Fatalf("sandboxes: %+v", st.SandboxStatuses)
	}
	for _, name := range []string{"a", "b"} {
		c := st.FindContainerStatusByName(name)
		if c == nil || c.State != runtime.ContainerStateRunning || c.RestartCount != 0 || c.ID.Type != "fakecri" {
			t.Fatalf("container %s: %+v", name, c)
		}
	}
	// A second sync changes nothing.
	calls := srv.CallCount("CreateContainer")
	if err := rt.SyncPod(ctx, pod, st); err != nil || srv.CallCount("CreateContainer") != calls || srv.CallCount("RunPodSandbox") != 1 {
		t.Fatalf("idempotent SyncPod: err %v, CreateContainer %d→%d, RunPodSandbox %d", err, calls, srv.CallCount("CreateContainer"), srv.CallCount("RunPodSandbox"))
	}

	pods, err := rt.GetPods(ctx, false)
	if err != nil || len(pods) != 1 {
		t.Fatalf("GetPods: %v, %d pods", err, len(pods))
	}
	p := pods[0]
	if p.ID != pod.UID || p.Name != "web" || p.Namespace != "ns" || len(p.Containers) != 2 || len(p.Sandboxes) != 1 {
		t.Fatalf("GetPods: %+v", p)
	}

	if err := rt.RemovePod(ctx, p); !errors.Is(err, runtime.ErrFailedPrecondition) {
		t.Fatalf("RemovePod of a running pod: got %v, want ErrFailedPrecondition", err)
	}
	if err := rt.KillPod(ctx, pod, p, nil); err != nil {
		t.Fatalf("KillPod: %v", err)
	}
	st = podStatus(t, rt, pod)
	if !st.IsTerminal() || len(st.ContainerStatuses) != 2 {
		t.Fatalf("after KillPod: %v terminal=%v", st, st.IsTerminal())
	}
	if running, _ := rt.GetPods(ctx, false); len(running) != 0 {
		t.Fatalf("GetPods(all=false) after kill: %d pods", len(running))
	}
	all, _ := rt.GetPods(ctx, true)
	if len(all) != 1 || all[0].Containers[0].State != runtime.ContainerStateExited {
		t.Fatalf("GetPods(all=true) after kill: %+v", all)
	}
	if err := rt.RemovePod(ctx, all[0]); err != nil {
		t.Fatalf("RemovePod: %v", err)
	}
	if sb, c := srv.Counts(); sb != 0 || c != 0 {
		t.Fatalf("after RemovePod: %d sandboxes, %d containers", sb, c)
	}
	if st := podStatus(t, rt, pod); len(st.ContainerStatuses)+len(st.SandboxStatuses) != 0 || st.Name != "web" {
		t.Fatalf("status of a removed pod: %+v", st)
	}
}

func TestAgentRestartFindsPods(t *testing.T) {
	srv, ep := startFake(t, fakecri.Options{})
	ctx := ctxT(t)
	first := newRuntime(t, ep)
	pod := testPod("p", v1.RestartPolicyAlways, v1.Container{Name: "c"})
	grace := int64(7)
	pod.Spec.TerminationGracePeriodSeconds = &grace
	if err := first.SyncPod(ctx, pod, nil); err != nil {
		t.Fatal(err)
	}
	_ = first.Close()

	// The runtime restarts too, keeping its state.
	srv.Down()
	if err := srv.Up(); err != nil {
		t.Fatal(err)
	}
	second := newRuntime(t, ep)
	pods, err := second.GetPods(ctx, false)
	if err != nil || len(pods) != 1 || pods[0].ID != pod.UID || pods[0].FullName() != "p_ns" {
		t.Fatalf("GetPods from a new agent: %v %+v", err, pods)
	}
	// Killed without its spec: the grace period comes from the container's
	// annotations.
	if err := second.KillPod(ctx, nil, pods[0], nil); err != nil {
		t.Fatal(err)
	}
	if gp, ok := srv.StopTimeout(pods[0].Containers[0].ID.ID); !ok || gp != 7 {
		t.Fatalf("stop timeout of a runtime-only pod's container: %d, %v; want 7 from its annotation", gp, ok)
	}
}

func TestImages(t *testing.T) {
	srv, ep := startFake(t, fakecri.Options{Images: []string{"present:1"}})
	rt := newRuntime(t, ep)
	ctx := ctxT(t)
	pod := testPod("i", v1.RestartPolicyAlways, v1.Container{Name: "a", Image: "present:1"}, v1.Container{Name: "b", Image: "missing:1"})
	if err := rt.SyncPod(ctx, pod, nil); err != nil {
		t.Fatal(err)
	}
	if n := srv.CallCount("ImageStatus"); n != 2 {
		t.Errorf("ImageStatus called %d times, want 2", n)
	}
	if n := srv.CallCount("PullImage"); n != 1 || !srv.HasImage("missing:1") {
		t.Errorf("PullImage called %d times, want 1 (only the missing image)", n)
	}

	never := testPod("n", v1.RestartPolicyAlways, v1.Container{Name: "a", Image: "absent:1", ImagePullPolicy: v1.PullNever})
	err := rt.SyncPod(ctx, never, nil)
	if !errors.Is(err, runtime.ErrNotFound) || !errors.Is(err, runtime.ErrImageNeverPull) || !strings.Contains(err.Error(), `container "a"`) {
		t.Fatalf("pull policy Never and a missing image: got %v, want ErrNotFound naming the container", err)
	}

	srv.FailNext("PullImage", 13) // codes.Internal
	err = rt.SyncPod(ctx, testPod("f", v1.RestartPolicyAlways, v1.Container{Name: "a", Image: "other:1"}), nil)
	if !errors.Is(err, runtime.ErrUnknown) || !errors.Is(err, runtime.ErrImagePull) || !strings.Contains(err.Error(), `container "a"`) {
		t.Fatalf("failed pull: %v", err)
	}
}

func TestInvalidPods(t *testing.T) {
	_, ep := startFake(t, fakecri.Options{})
	rt := newRuntime(t, ep)
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		want string
	}{
		{"nil pod", nil, "no pod"},
		{"no containers", testPod("x", v1.RestartPolicyAlways), "no containers"},
		{"missing image", func() *v1.Pod {
			p := testPod("x", v1.RestartPolicyAlways, v1.Container{Name: "c"})
			p.Spec.Containers[0].Image = ""
			return p
		}(), `container "c": no image`},
		{"duplicate names", testPod("x", v1.RestartPolicyAlways, v1.Container{Name: "c"}, v1.Container{Name: "c"}), `container "c": duplicate name`},
		{"no name", testPod("x", v1.RestartPolicyAlways, v1.Container{}), "container #0 has no name"},
		{"ephemeral container named as another", func() *v1.Pod {
			p := testPod("x", v1.RestartPolicyAlways, v1.Container{Name: "c"})
			p.Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "c", Image: testImage}}}
			return p
		}(), `spec.ephemeralContainers[0].name: "c" is empty or not unique`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := rt.SyncPod(ctxT(t), tc.pod, nil)
			if !errors.Is(err, runtime.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want ErrInvalidArgument containing %q", err, tc.want)
			}
			if tc.pod != nil && !strings.Contains(err.Error(), "ns/x") {
				t.Fatalf("error %q does not name the pod", err)
			}
		})
	}
}
