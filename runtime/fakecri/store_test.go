package fakecri_test

import (
	"testing"

	"google.golang.org/grpc/codes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podlife/podlife/runtime/fakecri"
)

// TestPodUIDIndex: lookups by the kubelet's pod UID label, by sandbox and
// by ID answer exactly what a full scan would, through creation, removal,
// Forget and a sandbox name reused after removal.
func TestPodUIDIndex(t *testing.T) {
	s, c := start(t, fakecri.Options{Images: []string{"img"}})
	ctx := ctx(t)
	const uidLabel = "io.kubernetes.pod.uid"
	run := func(uid string, attempt uint32) (sandboxID string, containerIDs []string) {
		t.Helper()
		cfg := sandboxConfig(uid)
		cfg.Metadata.Attempt = attempt
		cfg.Labels[uidLabel] = uid
		sb, err := c.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg})
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"a", "b"} {
			cc := containerConfig(name, "img")
			cc.Labels = map[string]string{uidLabel: uid}
			ct, err := c.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb.PodSandboxId, Config: cc, SandboxConfig: cfg})
			if err != nil {
				t.Fatal(err)
			}
			containerIDs = append(containerIDs, ct.ContainerId)
		}
		return sb.PodSandboxId, containerIDs
	}
	count := func(uid string) (sandboxes, containers int) {
		t.Helper()
		sel := map[string]string{uidLabel: uid}
		sbs, err := c.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{LabelSelector: sel}})
		if err != nil {
			t.Fatal(err)
		}
		cs, err := c.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{LabelSelector: sel}})
		if err != nil {
			t.Fatal(err)
		}
		for _, sb := range sbs.Items {
			if sb.Labels[uidLabel] != uid {
				t.Errorf("sandbox %s of pod %s listed for pod %s", sb.Id, sb.Labels[uidLabel], uid)
			}
		}
		for _, ct := range cs.Containers {
			if ct.Labels[uidLabel] != uid {
				t.Errorf("container %s of pod %s listed for pod %s", ct.Id, ct.Labels[uidLabel], uid)
			}
		}
		return len(sbs.Items), len(cs.Containers)
	}

	sb1, cs1 := run("u1", 0)
	sb2, _ := run("u2", 0)
	if sb, n := count("u1"); sb != 1 || n != 2 {
		t.Fatalf("u1: %d sandboxes, %d containers; want 1, 2", sb, n)
	}
	// The label selector still applies in full: another label narrows it.
	sel := map[string]string{uidLabel: "u1", "uid": "u2"}
	if l, err := c.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{LabelSelector: sel}}); err != nil || len(l.Items) != 0 {
		t.Fatalf("mismatching selector: %v, %v", l, err)
	}
	// By sandbox ID.
	if l, err := c.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{PodSandboxId: sb2}}); err != nil || len(l.Containers) != 2 {
		t.Fatalf("containers of sandbox %s: %v, %v", sb2, l, err)
	}
	// A container removed is gone from every index.
	if _, err := c.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: cs1[0]}); err != nil {
		t.Fatal(err)
	}
	if _, n := count("u1"); n != 1 {
		t.Fatalf("u1 after RemoveContainer: %d containers, want 1", n)
	}
	if l, err := c.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{PodSandboxId: sb1}}); err != nil || len(l.Containers) != 1 {
		t.Fatalf("containers of sandbox %s: %v, %v", sb1, l, err)
	}
	// The sandbox name stays reserved until the sandbox is removed.
	if _, err := c.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb1}); err != nil {
		t.Fatal(err)
	}
	if st, err := c.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: cs1[1]}); err != nil || st.Status.State != runtimeapi.ContainerState_CONTAINER_EXITED {
		t.Fatalf("container of a stopped sandbox: %v, %v", st, err)
	}
	cfg := sandboxConfig("u1")
	cfg.Labels[uidLabel] = "u1"
	if _, err := c.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg}); code(err) != codes.AlreadyExists {
		t.Fatalf("same sandbox name again: %v", err)
	}
	if _, err := c.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb1}); err != nil {
		t.Fatal(err)
	}
	if sb, n := count("u1"); sb != 0 || n != 0 {
		t.Fatalf("u1 after RemovePodSandbox: %d sandboxes, %d containers", sb, n)
	}
	if _, n := s.Counts(); n != 2 {
		t.Fatalf("%d containers left, want u2's 2", n)
	}
	run("u1", 0) // the name is free again
	// Forget drops a sandbox and its containers from every index.
	if err := s.Forget(sb2); err != nil {
		t.Fatal(err)
	}
	if sb, n := count("u2"); sb != 0 || n != 0 {
		t.Fatalf("u2 after Forget: %d sandboxes, %d containers", sb, n)
	}
	if sb, n := count("u1"); sb != 1 || n != 2 {
		t.Fatalf("u1 again: %d sandboxes, %d containers; want 1, 2", sb, n)
	}
	if got := s.CallCount("RunPodSandbox"); got != 4 {
		t.Errorf("CallCount(RunPodSandbox) = %d, want 4", got)
	}
	if calls := s.Calls(); len(calls) == 0 || calls[0] != "RunPodSandbox" {
		t.Errorf("Calls() starts with %v", calls[:min(1, len(calls))])
	}
}
