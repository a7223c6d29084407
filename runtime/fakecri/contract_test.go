package fakecri_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podlife/podlife/runtime/fakecri"
)

// The CRI contract as critest checks it and containerd v2 keeps it.

func TestStopOfUnknownIDsSucceeds(t *testing.T) {
	_, c := start(t, fakecri.Options{})
	ctx := ctx(t)
	if _, err := c.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: "nope"}); err != nil {
		t.Errorf("StopPodSandbox of an unknown ID: %v, want success", err)
	}
	if _, err := c.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: "nope"}); err != nil {
		t.Errorf("StopContainer of an unknown ID: %v, want success", err)
	}
	// Status calls still answer NotFound.
	if _, err := c.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: "nope"}); code(err) != codes.NotFound {
		t.Errorf("ContainerStatus of an unknown ID: %v, want NotFound", err)
	}
}

func pull(t *testing.T, c client, ref string) string {
	t.Helper()
	p, err := c.PullImage(ctx(t), &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
	if err != nil {
		t.Fatalf("pull %s: %v", ref, err)
	}
	return p.GetImageRef()
}

func imageStatus(t *testing.T, c client, ref string) *runtimeapi.Image {
	t.Helper()
	st, err := c.ImageStatus(ctx(t), &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
	if err != nil {
		t.Fatalf("status %s: %v", ref, err)
	}
	return st.GetImage()
}

func TestImageReferencesAreNormalized(t *testing.T) {
	for _, tc := range []struct{ pull, tag, digestRepo string }{
		{"busybox", "docker.io/library/busybox:latest", "docker.io/library/busybox"},
		{"library/busybox:1.36", "docker.io/library/busybox:1.36", "docker.io/library/busybox"},
		{"quay.io/a/b", "quay.io/a/b:latest", "quay.io/a/b"},
		{"localhost/podlife/pause:1.0", "localhost/podlife/pause:1.0", "localhost/podlife/pause"},
		{"localhost:5000/x:2", "localhost:5000/x:2", "localhost:5000/x"},
	} {
		t.Run(tc.pull, func(t *testing.T) {
			_, c := start(t, fakecri.Options{})
			id := pull(t, c, tc.pull)
			img := imageStatus(t, c, tc.pull)
			if img.GetId() != id || len(id) != len("sha256:")+64 || id[:7] != "sha256:" {
				t.Fatalf("ID %q, pull answered %q", img.GetId(), id)
			}
			if !slices.Equal(img.GetRepoTags(), []string{tc.tag}) {
				t.Errorf("repoTags %v, want [%s]", img.GetRepoTags(), tc.tag)
			}
			if len(img.GetRepoDigests()) != 1 || img.GetRepoDigests()[0][:len(tc.digestRepo)+1] != tc.digestRepo+"@" {
				t.Errorf("repoDigests %v, want one %s@sha256:…", img.GetRepoDigests(), tc.digestRepo)
			}
			for _, ref := range append([]string{tc.tag, id}, img.GetRepoDigests()...) {
				if got := imageStatus(t, c, ref); got.GetId() != id {
					t.Errorf("status by %q: %v", ref, got)
				}
			}
		})
	}
}

func TestPullByDigest(t *testing.T) {
	_, c := start(t, fakecri.Options{})
	ref := "gcr.io/x/y@sha256:9700f9a2f5bf2c45f2f605a0bd3bce7cf37420ec9d3ed50ac2758413308766bf"
	id := pull(t, c, ref)
	img := imageStatus(t, c, ref)
	if img.GetId() != id || len(img.GetRepoTags()) != 0 || !slices.Equal(img.GetRepoDigests(), []string{ref}) {
		t.Fatalf("pulled by digest: %v (pull answered %q)", img, id)
	}
}

func TestRegistryImages(t *testing.T) {
	s, c := start(t, fakecri.Options{Registry: []fakecri.RegistryImage{
		{Refs: []string{"registry.k8s.io/pause:3.9", "k8s.gcr.io/pause:3.9", "registry.k8s.io/pause:latest"}},
		{Refs: []string{"u/uid"}, User: "1002:1002"},
		{Refs: []string{"u/name"}, User: "www-data"},
	}})
	a := pull(t, c, "registry.k8s.io/pause:3.9")
	b := pull(t, c, "k8s.gcr.io/pause:3.9")
	cc := pull(t, c, "registry.k8s.io/pause")
	if a != b || a != cc {
		t.Fatalf("one image pulled by three references has IDs %q %q %q", a, b, cc)
	}
	img := imageStatus(t, c, a)
	if want := []string{"k8s.gcr.io/pause:3.9", "registry.k8s.io/pause:3.9", "registry.k8s.io/pause:latest"}; !slices.Equal(img.GetRepoTags(), want) {
		t.Errorf("repoTags %v, want %v", img.GetRepoTags(), want)
	}
	if len(img.GetRepoDigests()) != 2 {
		t.Errorf("repoDigests %v, want one per repository", img.GetRepoDigests())
	}
	l, _ := c.ListImages(ctx(t), &runtimeapi.ListImagesRequest{})
	if len(l.GetImages()) != 1 {
		t.Errorf("ListImages: %d images, want 1", len(l.GetImages()))
	}
	// Removing by one tag removes the image with all its tags.
	if _, err := c.RemoveImage(ctx(t), &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: "k8s.gcr.io/pause:3.9"}}); err != nil {
		t.Fatal(err)
	}
	if s.HasImage("registry.k8s.io/pause:3.9") || s.HasImage(a) {
		t.Error("an image removed by one tag is still there by another")
	}
	pull(t, c, "u/uid")
	pull(t, c, "u/name")
	if img := imageStatus(t, c, "u/uid"); img.GetUid().GetValue() != 1002 || img.GetUsername() != "" {
		t.Errorf("numeric user: uid %v username %q", img.GetUid(), img.GetUsername())
	}
	if img := imageStatus(t, c, "u/name"); img.GetUid() != nil || img.GetUsername() != "www-data" {
		t.Errorf("named user: uid %v username %q", img.GetUid(), img.GetUsername())
	}
}

func TestListImagesFilter(t *testing.T) {
	_, c := start(t, fakecri.Options{Images: []string{"a:1", "b:1"}})
	for _, ref := range []string{"a:1", "docker.io/library/a:1"} {
		l, err := c.ListImages(ctx(t), &runtimeapi.ListImagesRequest{Filter: &runtimeapi.ImageFilter{Image: &runtimeapi.ImageSpec{Image: ref}}})
		if err != nil || len(l.GetImages()) != 1 || l.GetImages()[0].GetRepoTags()[0] != "docker.io/library/a:1" {
			t.Errorf("filter %q: %v %v", ref, l, err)
		}
	}
}

func TestPullLatencyAndDeadline(t *testing.T) {
	_, c := start(t, fakecri.Options{PullLatency: time.Hour})
	cctx, cancel := context.WithTimeout(ctx(t), 50*time.Millisecond)
	defer cancel()
	_, err := c.PullImage(cctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: "x"}})
	if code(err) != codes.DeadlineExceeded {
		t.Fatalf("pull cut short by its deadline: %v, want DeadlineExceeded", err)
	}
}

// runContainer creates a sandbox and a container and returns their IDs.
func runContainer(t *testing.T, c client, uid string, labels map[string]string) (sandboxID, containerID string) {
	t.Helper()
	sb, err := c.RunPodSandbox(ctx(t), &runtimeapi.RunPodSandboxRequest{Config: sandboxConfig(uid)})
	if err != nil {
		t.Fatal(err)
	}
	cfg := containerConfig("c", "img")
	cfg.Labels = labels
	cfg.Linux = &runtimeapi.LinuxContainerConfig{Resources: &runtimeapi.LinuxContainerResources{CpuShares: 512}}
	cr, err := c.CreateContainer(ctx(t), &runtimeapi.CreateContainerRequest{PodSandboxId: sb.GetPodSandboxId(), Config: cfg, SandboxConfig: sandboxConfig(uid)})
	if err != nil {
		t.Fatal(err)
	}
	return sb.GetPodSandboxId(), cr.GetContainerId()
}

func TestContainerImageIDsAgree(t *testing.T) {
	_, c := start(t, fakecri.Options{Images: []string{"img"}})
	_, id := runContainer(t, c, "u1", nil)
	want := imageStatus(t, c, "img").GetId()
	st, _ := c.ContainerStatus(ctx(t), &runtimeapi.ContainerStatusRequest{ContainerId: id})
	l, _ := c.ListContainers(ctx(t), &runtimeapi.ListContainersRequest{})
	if len(l.GetContainers()) != 1 || st.GetStatus().GetImageId() != want || l.GetContainers()[0].GetImageId() != want {
		t.Fatalf("image IDs: status %q, list %v, want %q", st.GetStatus().GetImageId(), l.GetContainers(), want)
	}
}

func TestUpdateContainerResources(t *testing.T) {
	_, c := start(t, fakecri.Options{Images: []string{"img"}})
	_, id := runContainer(t, c, "u1", nil)
	shares := func() int64 {
		st, err := c.ContainerStatus(ctx(t), &runtimeapi.ContainerStatusRequest{ContainerId: id})
		if err != nil {
			t.Fatal(err)
		}
		return st.GetStatus().GetResources().GetLinux().GetCpuShares()
	}
	if got := shares(); got != 512 {
		t.Fatalf("resources from the config: cpu shares %d, want 512", got)
	}
	if _, err := c.UpdateContainerResources(ctx(t), &runtimeapi.UpdateContainerResourcesRequest{ContainerId: id, Linux: &runtimeapi.LinuxContainerResources{CpuShares: 1024, MemoryLimitInBytes: 1 << 30}}); err != nil {
		t.Fatal(err)
	}
	if got := shares(); got != 1024 {
		t.Fatalf("after update: cpu shares %d, want 1024", got)
	}
	if _, err := c.UpdateContainerResources(ctx(t), &runtimeapi.UpdateContainerResourcesRequest{ContainerId: "nope"}); code(err) != codes.NotFound {
		t.Errorf("update of an unknown container: %v, want NotFound", err)
	}
	if _, err := c.StopContainer(ctx(t), &runtimeapi.StopContainerRequest{ContainerId: id}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.UpdateContainerResources(ctx(t), &runtimeapi.UpdateContainerResourcesRequest{ContainerId: id}); code(err) != codes.FailedPrecondition {
		t.Errorf("update of an exited container: %v, want FailedPrecondition", err)
	}
}

func TestListFiltersByIDPrefix(t *testing.T) {
	_, c := start(t, fakecri.Options{Images: []string{"img"}})
	sb1, c1 := runContainer(t, c, "u1", map[string]string{"k": "1"})
	runContainer(t, c, "u2", map[string]string{"k": "2"})
	for _, n := range []int{len(c1), 12} {
		l, err := c.ListContainers(ctx(t), &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{Id: c1[:n]}})
		if err != nil || len(l.GetContainers()) != 1 || l.GetContainers()[0].GetId() != c1 {
			t.Errorf("containers by ID prefix of %d: %v %v", n, l.GetContainers(), err)
		}
		ls, err := c.ListPodSandbox(ctx(t), &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{Id: sb1[:n]}})
		if err != nil || len(ls.GetItems()) != 1 || ls.GetItems()[0].GetId() != sb1 {
			t.Errorf("sandboxes by ID prefix of %d: %v %v", n, ls.GetItems(), err)
		}
	}
	// Combined filters: state and labels.
	running := &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}
	if l, _ := c.ListContainers(ctx(t), &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{State: running}}); len(l.GetContainers()) != 0 {
		t.Errorf("running containers before any start: %v", l.GetContainers())
	}
	created := &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_CREATED}
	l, _ := c.ListContainers(ctx(t), &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{State: created, LabelSelector: map[string]string{"k": "2"}}})
	if len(l.GetContainers()) != 1 || l.GetContainers()[0].GetLabels()["k"] != "2" {
		t.Errorf("created containers labelled k=2: %v", l.GetContainers())
	}
}

func TestExecEchoN(t *testing.T) {
	_, c := start(t, fakecri.Options{Images: []string{"img"}})
	_, id := runContainer(t, c, "u1", nil)
	if _, err := c.StartContainer(ctx(t), &runtimeapi.StartContainerRequest{ContainerId: id}); err != nil {
		t.Fatal(err)
	}
	r, err := c.ExecSync(ctx(t), &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: []string{"echo", "-n", "hello"}})
	if err != nil || string(r.GetStdout()) != "hello" {
		t.Fatalf("echo -n hello: %q %v", r.GetStdout(), err)
	}
}
