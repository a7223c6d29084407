package cri_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/runtime"
	"github.com/podlife/podlife/runtime/cri"
)

// EndpointEnv names the CRI endpoint of the integration test.
const EndpointEnv = "PODLIFE_CRI_ENDPOINT"

// TestRealRuntime drives a real CRI runtime (containerd, as started by
// scripts/containerd/start.sh) through the whole life of a pod: create, run,
// crash-loop back-off, "agent restart" finding the pod by its labels, kill
// with a grace period, remove.
func TestRealRuntime(t *testing.T) {
	root := t.TempDir() // one for both runtimes: the second finds the first's pod
	newRuntime := func() *cri.Runtime { return newRealRuntime(t, func(o *cri.Options) { o.VolumeRoot = root }) }
	rt := newRuntime()
	image := realImage()
	ctx := realContext(t, 3*time.Minute)

	v, err := rt.Version(ctx)
	if err != nil {
		t.Fatalf("Version: %v", err)
	}
	t.Logf("runtime %s %s, CRI %s", v.RuntimeName, v.RuntimeVersion, v.APIVersion)
	st, err := rt.Status(ctx)
	if err != nil || !st.RuntimeReady() {
		t.Fatalf("Status: %+v, %v", st, err)
	}

	pod := realPod(image)
	t.Cleanup(func() { // best effort, whatever failed above
		cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		zero := int64(0)
		_ = rt.KillPod(cctx, pod, nil, &zero)
		_ = rt.RemovePod(cctx, &runtime.Pod{ID: pod.UID, Name: pod.Name, Namespace: pod.Namespace})
	})

	start := time.Now()
	if err := rt.SyncPod(ctx, pod, nil); err != nil {
		t.Fatalf("SyncPod: %v", err)
	}
	status := waitStatus(ctx, t, rt, pod, "main running and crash exited", func(s *runtime.PodStatus) bool {
		m, c := s.FindContainerStatusByName("main"), s.FindContainerStatusByName("crash")
		return m != nil && m.State == runtime.ContainerStateRunning && c != nil && c.State == runtime.ContainerStateExited
	})
	t.Logf("pod running after %s", time.Since(start).Round(time.Millisecond))
	if !status.HasReadySandbox() || status.SandboxStatuses[0].Network != "node" {
		t.Errorf("sandbox: %+v, want ready, node network", status.SandboxStatuses[0])
	}
	if c := status.FindContainerStatusByName("crash"); c.ExitCode != 3 || c.RestartCount != 0 {
		t.Errorf("crash container: exit %d restarts %d, want 3 and 0", c.ExitCode, c.RestartCount)
	}
	if m := status.FindContainerStatusByName("main"); m.Hash != runtime.HashContainer(&pod.Spec.Containers[0]) {
		t.Errorf("main container hash %x, want the spec's %x", m.Hash, runtime.HashContainer(&pod.Spec.Containers[0]))
	}

	// The relister sees the pod and fills the cache.
	cache := runtime.NewCache()
	rel, err := runtime.NewRelister(runtime.RelisterOptions{Runtime: rt, Cache: cache})
	if err != nil {
		t.Fatal(err)
	}
	if err := rel.ForceRefresh(ctx); err != nil {
		t.Fatalf("relist: %v", err)
	}
	if cached, err := cache.Get(pod.UID); err != nil || len(cached.ContainerStatuses) != 3 || !cached.HasReadySandbox() {
		t.Fatalf("cache after relist: %v, %v", cached, err)
	}

	// First restart of the crashed container is immediate, the second one
	// waits for the back-off.
	if err := rt.SyncPod(ctx, pod, status); err != nil {
		t.Fatalf("SyncPod (restart): %v", err)
	}
	status = waitStatus(ctx, t, rt, pod, "crash restarted once and exited", func(s *runtime.PodStatus) bool {
		c := s.FindContainerStatusByName("crash")
		return c.RestartCount == 1 && c.State == runtime.ContainerStateExited
	})
	if err := rt.SyncPod(ctx, pod, status); !errors.Is(err, runtime.ErrBackOff) {
		t.Fatalf("SyncPod in back-off: got %v, want ErrBackOff", err)
	}

	// A restarted agent (a new client) finds the pod by its labels.
	rt2 := newRuntime()
	pods, err := rt2.GetPods(ctx, false)
	if err != nil {
		t.Fatalf("GetPods: %v", err)
	}
	var found *runtime.Pod
	for _, p := range pods {
		if p.ID == pod.UID {
			found = p
		}
	}
	if found == nil {
		t.Fatalf("GetPods after agent restart: pod %s not found among %d pods", pod.UID, len(pods))
	}
	if found.Name != pod.Name || found.Namespace != pod.Namespace || len(found.Sandboxes) != 1 || found.FindContainerByName("main") == nil {
		t.Errorf("found pod %+v: want name %s/%s, 1 sandbox, container main", found, pod.Namespace, pod.Name)
	}

	// Kill as a runtime-only pod (no spec): the "hang" container ignores
	// SIGTERM, so the kill lasts the grace period.
	grace := int64(2)
	start = time.Now()
	if err := rt2.KillPod(ctx, nil, found, &grace); err != nil {
		t.Fatalf("KillPod: %v", err)
	}
	took := time.Since(start)
	t.Logf("KillPod with a 2s grace period took %s", took.Round(time.Millisecond))
	if took < 2*time.Second {
		t.Errorf("KillPod took %s; the hang container should have held it for its 2s grace period", took)
	}
	status, err = rt2.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		t.Fatalf("GetPodStatus: %v", err)
	}
	if !status.IsTerminal() {
		t.Fatalf("after KillPod: %v is not terminal: %+v", status, status.ContainerStatuses)
	}
	if h := status.FindContainerStatusByName("hang"); h == nil || h.ExitCode != 137 {
		t.Errorf("hang container after kill: %+v, want exit code 137", h)
	}

	start = time.Now()
	if err := rt2.RemovePod(ctx, found); err != nil {
		t.Fatalf("RemovePod: %v", err)
	}
	t.Logf("RemovePod took %s", time.Since(start).Round(time.Millisecond))
	all, err := rt2.GetPods(ctx, true)
	if err != nil {
		t.Fatalf("GetPods: %v", err)
	}
	for _, p := range all {
		if p.ID == pod.UID {
			t.Fatalf("pod still listed after RemovePod: %+v", p)
		}
	}
}

// TestRealRuntimeFinishedPod runs a pod whose only container completes under
// RestartPolicy Never: once it has exited, SyncPod stops the sandbox and the
// pod is terminal; it is then removed.
func TestRealRuntimeFinishedPod(t *testing.T) {
	rt := newRealRuntime(t, nil)
	ctx := realContext(t, 2*time.Minute)
	pod := realPod(realImage())
	pod.Spec.RestartPolicy = v1.RestartPolicyNever
	pod.Spec.Containers = []v1.Container{{Name: "job", Image: pod.Spec.Containers[0].Image, Args: []string{"exit", "0"}}}
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = rt.KillPod(cctx, pod, nil, nil)
		_ = rt.RemovePod(cctx, &runtime.Pod{ID: pod.UID})
	})
	if err := rt.SyncPod(ctx, pod, nil); err != nil {
		t.Fatalf("SyncPod: %v", err)
	}
	st := waitStatus(ctx, t, rt, pod, "job exited", func(s *runtime.PodStatus) bool {
		c := s.FindContainerStatusByName("job")
		return c != nil && c.State == runtime.ContainerStateExited
	})
	if c := st.FindContainerStatusByName("job"); c.ExitCode != 0 || c.Reason != "Completed" {
		t.Errorf("job: exit %d, reason %q; want 0, Completed", c.ExitCode, c.Reason)
	}
	if err := rt.SyncPod(ctx, pod, st); err != nil {
		t.Fatalf("SyncPod of a finished pod: %v", err)
	}
	if st := waitStatus(ctx, t, rt, pod, "terminal", (*runtime.PodStatus).IsTerminal); len(st.SandboxStatuses) != 1 {
		t.Errorf("sandboxes of a finished pod: %+v", st.SandboxStatuses)
	}
	if err := rt.RemovePod(ctx, &runtime.Pod{ID: pod.UID}); err != nil {
		t.Fatalf("RemovePod: %v", err)
	}
}

func realPod(image string) *v1.Pod {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	suffix := hex.EncodeToString(b)
	grace := int64(10)
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "it-" + suffix[:8], Namespace: "podlife-test", UID: types.UID("it-" + suffix), Labels: map[string]string{"app": "podlife-it"}},
		Spec: v1.PodSpec{
			RestartPolicy:                 v1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: &grace,
			Containers: []v1.Container{
				{Name: "main", Image: image, ImagePullPolicy: v1.PullIfNotPresent},
				{Name: "hang", Image: image, Args: []string{"hang"}, ImagePullPolicy: v1.PullIfNotPresent},
				{Name: "crash", Image: image, Args: []string{"exit", "3"}, ImagePullPolicy: v1.PullIfNotPresent},
			},
		},
	}
}

// waitStatus polls GetPodStatus until cond holds or ctx ends.
func waitStatus(ctx context.Context, t *testing.T, rt runtime.Runtime, pod *v1.Pod, what string, cond func(*runtime.PodStatus) bool) *runtime.PodStatus {
	t.Helper()
	var last *runtime.PodStatus
	for {
		s, err := rt.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
		if err == nil {
			last = s
			if cond(s) {
				return s
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v; last status %v, err %v", what, ctx.Err(), last, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
