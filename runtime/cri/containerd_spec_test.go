package cri_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podlife/podlife/runtime"
	"github.com/podlife/podlife/runtime/cri"
)

// realSetup skips without PODLIFE_CRI_ENDPOINT; otherwise it gives a
// Runtime on it, the image, and a pod (from realPod, with no containers)
// that is killed and removed at cleanup.
func realSetup(t *testing.T, mutate ...func(*cri.Options)) (*cri.Runtime, string, *v1.Pod, context.Context) {
	t.Helper()
	endpoint := os.Getenv(EndpointEnv)
	if endpoint == "" {
		t.Skip(EndpointEnv + " is not set: skipping an integration test against a real CRI runtime")
	}
	image := os.Getenv("PODLIFE_CRI_IMAGE")
	if image == "" {
		image = "localhost/podlife/pause:1.0"
	}
	o := cri.Options{Endpoint: endpoint, Timeout: 30 * time.Second, CgroupParent: "/podlife-test", Logger: testr.New(t)}
	for _, m := range mutate {
		m(&o)
	}
	rt, err := cri.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	pod := realPod(image)
	pod.Spec.Containers = nil
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		zero := int64(0)
		_ = rt.KillPod(cctx, pod, nil, &zero)
		_ = rt.RemovePod(cctx, &runtime.Pod{ID: pod.UID, Name: pod.Name, Namespace: pod.Namespace})
	})
	return rt, image, pod, ctx
}

// syncUntil calls SyncPod (errors such as a back-off are expected) until
// cond holds on a fresh status.
func syncUntil(ctx context.Context, t *testing.T, rt *cri.Runtime, pod *v1.Pod, what string, cond func(*runtime.PodStatus) bool) *runtime.PodStatus {
	t.Helper()
	var lastErr error
	for {
		if err := rt.SyncPod(ctx, pod, nil); err != nil {
			lastErr = err
		}
		if st, err := rt.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace); err == nil && cond(st) {
			return st
		}
		select {
		case <-ctx.Done():
			if st, err := rt.GetPodStatus(context.Background(), pod.UID, pod.Name, pod.Namespace); err == nil {
				for _, c := range st.ContainerStatuses {
					t.Logf("  %s %s exit %d reason %q", c.Name, c.State, c.ExitCode, c.Reason)
				}
			}
			t.Fatalf("waiting for %s: %v (last SyncPod error: %v)", what, ctx.Err(), lastErr)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func TestRealInitContainersAndSidecar(t *testing.T) {
	rt, image, pod, ctx := realSetup(t)
	always := v1.ContainerRestartPolicyAlways
	pod.Spec.InitContainers = []v1.Container{
		{Name: "init1", Image: image, Args: []string{"exit", "0"}},
		{Name: "sidecar", Image: image, RestartPolicy: &always},
		{Name: "init2", Image: image, Args: []string{"exit", "0"}},
	}
	pod.Spec.Containers = []v1.Container{{Name: "main", Image: image}}
	st := syncUntil(ctx, t, rt, pod, "main running", func(s *runtime.PodStatus) bool {
		c := s.FindContainerStatusByName("main")
		return c != nil && c.State == runtime.ContainerStateRunning
	})
	i1, sc, i2, m := st.FindContainerStatusByName("init1"), st.FindContainerStatusByName("sidecar"), st.FindContainerStatusByName("init2"), st.FindContainerStatusByName("main")
	if i1.State != runtime.ContainerStateExited || i1.ExitCode != 0 || i2.State != runtime.ContainerStateExited || i2.ExitCode != 0 || sc.State != runtime.ContainerStateRunning {
		t.Fatalf("init1 %+v\nsidecar %+v\ninit2 %+v", i1, sc, i2)
	}
	if !i1.FinishedAt.Before(sc.StartedAt) || !sc.StartedAt.Before(i2.StartedAt) || i2.FinishedAt.After(m.StartedAt) {
		t.Fatalf("order: init1 %v-%v, sidecar %v, init2 %v-%v, main %v", i1.StartedAt, i1.FinishedAt, sc.StartedAt, i2.StartedAt, i2.FinishedAt, m.StartedAt)
	}
	if sc.Type != runtime.ContainerTypeSidecar || i1.Type != runtime.ContainerTypeInit || m.Type != runtime.ContainerTypeRegular {
		t.Fatalf("types: %s %s %s", i1.Type, sc.Type, m.Type)
	}
	if err := rt.KillPod(ctx, pod, nil, nil); err != nil {
		t.Fatal(err)
	}
	st, err := rt.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	if m, sc := st.FindContainerStatusByName("main"), st.FindContainerStatusByName("sidecar"); m.FinishedAt.After(sc.FinishedAt) {
		t.Fatalf("the sidecar stopped (%v) before the main container (%v)", sc.FinishedAt, m.FinishedAt)
	}
}

func TestRealPreStopHookWithinGracePeriod(t *testing.T) {
	rec := &fakeRecorder{}
	rt, image, pod, ctx := realSetup(t, func(o *cri.Options) { o.Recorder = rec })
	grace := int64(5)
	pod.Spec.TerminationGracePeriodSeconds = &grace
	pod.Spec.Containers = []v1.Container{
		{Name: "quick", Image: image, Lifecycle: &v1.Lifecycle{PreStop: execHandler("/pause", "echo", "draining")}},
		{Name: "failing", Image: image, Lifecycle: &v1.Lifecycle{PreStop: execHandler("/pause", "exit", "1")}},
		{Name: "slow", Image: image, Lifecycle: &v1.Lifecycle{PreStop: execHandler("/pause", "exit", "0", "3")}},
	}
	syncUntil(ctx, t, rt, pod, "all running", func(s *runtime.PodStatus) bool {
		for _, n := range []string{"quick", "failing", "slow"} {
			if c := s.FindContainerStatusByName(n); c == nil || c.State != runtime.ContainerStateRunning {
				return false
			}
		}
		return true
	})
	rec.take()
	begin := time.Now()
	if err := rt.KillPod(ctx, pod, nil, nil); err != nil {
		t.Fatal(err)
	}
	took := time.Since(begin)
	t.Logf("KillPod took %s", took.Round(time.Millisecond))
	// The 3 s exec hook ran before its container's stop, inside the 5 s grace
	// period; the stop got what was left (2 s, the pause process stops on
	// SIGTERM at once).
	if took < 3*time.Second || took > time.Duration(grace+2)*time.Second {
		t.Fatalf("KillPod took %s, want the 3 s hook and no more than the %d s grace period (+2 s slack)", took, grace)
	}
	events := rec.take()
	joined := strings.Join(events, "\n")
	if strings.Count(joined, "FailedPreStopHook") != 1 || !strings.Contains(joined, `PreStopHook failed: command ["/pause" "exit" "1"] exited with 1`) || strings.Count(joined, "Killing") != 3 {
		t.Fatalf("events:\n%s\nwant one FailedPreStopHook (the failing exec hook) and three Killing", joined)
	}
	st, err := rt.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	if err != nil || !st.IsTerminal() {
		t.Fatalf("after KillPod: %v, %v", st, err)
	}
}

func TestRealMemoryLimit(t *testing.T) {
	rt, image, pod, ctx := realSetup(t)
	pod.Spec.Containers = []v1.Container{{Name: "limited", Image: image, Resources: v1.ResourceRequirements{
		Limits: v1.ResourceList{v1.ResourceMemory: resource.MustParse("64Mi"), v1.ResourceCPU: resource.MustParse("250m")},
	}}}
	st := syncUntil(ctx, t, rt, pod, "running", func(s *runtime.PodStatus) bool {
		c := s.FindContainerStatusByName("limited")
		return c != nil && c.State == runtime.ContainerStateRunning
	})
	conn, err := grpc.NewClient(os.Getenv(EndpointEnv), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	resp, err := runtimeapi.NewRuntimeServiceClient(conn).ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{
		ContainerId: st.FindContainerStatusByName("limited").ID.ID, Verbose: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	lin := resp.GetStatus().GetResources().GetLinux()
	t.Logf("CRI resources: %v", lin)
	info := resp.GetInfo()["info"]
	// The OCI spec the runtime ran the container with carries the limit.
	if !strings.Contains(info, `"limit":67108864`) {
		t.Fatalf("OCI spec has no 64Mi memory limit: %.2000s", info)
	}
	if lin != nil && (lin.GetMemoryLimitInBytes() != 64<<20 || lin.GetCpuQuota() != 25000 || lin.GetCpuPeriod() != 100000) {
		t.Fatalf("CRI ContainerStatus.resources: %v", lin)
	}
}

func TestRealTerminationMessage(t *testing.T) {
	rt, image, pod, ctx := realSetup(t, func(o *cri.Options) { o.VolumeRoot = t.TempDir() })
	pod.Spec.RestartPolicy = v1.RestartPolicyNever
	pod.Spec.Containers = []v1.Container{{
		Name: "fails", Image: image, Args: []string{"exit", "1"},
		TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: v1.TerminationMessageFallbackToLogsOnError,
	}}
	st := syncUntil(ctx, t, rt, pod, "exited", func(s *runtime.PodStatus) bool {
		c := s.FindContainerStatusByName("fails")
		return c != nil && c.State == runtime.ContainerStateExited
	})
	c := st.FindContainerStatusByName("fails")
	// The pause binary prints "pause: exiting with 1" before it exits; it
	// writes no termination-log file, so FallbackToLogsOnError takes the log.
	if c.ExitCode != 1 || c.Reason != "Error" || c.Message != "pause: exiting with 1\n" {
		t.Fatalf("status %+v, want exit code 1, reason Error, the log's last line as message", c)
	}
}
