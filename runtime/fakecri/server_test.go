package fakecri_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podlife/podlife/runtime/fakecri"
)

type client struct {
	runtimeapi.RuntimeServiceClient
	runtimeapi.ImageServiceClient
}

func start(t *testing.T, opts fakecri.Options) (*fakecri.Server, client) {
	t.Helper()
	dir, err := os.MkdirTemp("", "fcri")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	s := fakecri.New(opts)
	ep, err := s.StartUnix(filepath.Join(dir, "s.sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	conn, err := grpc.NewClient(ep, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return s, client{runtimeapi.NewRuntimeServiceClient(conn), runtimeapi.NewImageServiceClient(conn)}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return c
}

func code(err error) codes.Code { return status.Code(err) }

func sandboxConfig(uid string) *runtimeapi.PodSandboxConfig {
	return &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: "p-" + uid, Namespace: "ns", Uid: uid},
		Labels:   map[string]string{"uid": uid},
		Linux: &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
			NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE}}},
	}
}

func containerConfig(name, image string, args ...string) *runtimeapi.ContainerConfig {
	return &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: name}, Image: &runtimeapi.ImageSpec{Image: image}, Args: args}
}

func TestSandboxAndContainerStateMachines(t *testing.T) {
	s, c := start(t, fakecri.Options{Images: []string{"img"}})
	ctx := ctx(t)

	_, err := c.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: &runtimeapi.PodSandboxConfig{}})
	if code(err) != codes.InvalidArgument {
		t.Fatalf("sandbox without metadata: %v", err)
	}
	sb, err := c.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: sandboxConfig("u1")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: sandboxConfig("u1")}); code(err) != codes.AlreadyExists {
		t.Fatalf("same sandbox name and attempt twice: %v", err)
	}
	sid := sb.GetPodSandboxId()
	st, err := c.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: sid})
	if err != nil || st.GetStatus().GetState() != runtimeapi.PodSandboxState_SANDBOX_READY || st.GetStatus().GetNetwork().GetIp() != "" {
		t.Fatalf("sandbox status: %v %v", st, err)
	}

	create := func(name, image string, args ...string) (string, error) {
		r, err := c.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sid, Config: containerConfig(name, image, args...)})
		return r.GetContainerId(), err
	}
	if _, err := create("x", ""); code(err) != codes.InvalidArgument {
		t.Fatalf("no image: %v", err)
	}
	if _, err := create("x", "absent"); code(err) != codes.NotFound {
		t.Fatalf("image not pulled: %v", err)
	}
	runID, err := create("run", "img")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := create("run", "img"); code(err) != codes.AlreadyExists {
		t.Fatalf("duplicate container name: %v", err)
	}
	exitID, _ := create("job", "img", "exit", "4")
	stateOf := func(id string) *runtimeapi.ContainerStatus {
		r, err := c.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
		if err != nil {
			t.Fatalf("ContainerStatus(%s): %v", id, err)
		}
		return r.GetStatus()
	}
	if stateOf(runID).GetState() != runtimeapi.ContainerState_CONTAINER_CREATED {
		t.Fatal("new container not CREATED")
	}
	for _, id := range []string{runID, exitID} {
		if _, err := c.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: id}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: runID}); code(err) != codes.FailedPrecondition {
		t.Fatalf("starting a running container: %v", err)
	}
	if st := stateOf(runID); st.GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING || st.GetStartedAt() == 0 {
		t.Fatalf("started container: %v", st)
	}
	if st := stateOf(exitID); st.GetState() != runtimeapi.ContainerState_CONTAINER_EXITED || st.GetExitCode() != 4 || st.GetReason() != "Error" {
		t.Fatalf("exit 4 container: %v", st)
	}

	// Removing a ready sandbox is refused; stopping it kills its containers.
	if _, err := c.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sid}); code(err) != codes.FailedPrecondition {
		t.Fatalf("removing a ready sandbox: %v", err)
	}
	if _, err := c.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sid}); err != nil {
		t.Fatal(err)
	}
	if st := stateOf(runID); st.GetState() != runtimeapi.ContainerState_CONTAINER_EXITED || st.GetExitCode() != 137 {
		t.Fatalf("container of a stopped sandbox: %v", st)
	}
	if _, err := create("late", "img"); code(err) != codes.FailedPrecondition {
		t.Fatalf("creating in a stopped sandbox: %v", err)
	}
	if _, err := c.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sid}); err != nil {
		t.Fatal(err)
	}
	if sbs, cs := s.Counts(); sbs != 0 || cs != 0 {
		t.Fatalf("after removing the sandbox: %d sandboxes, %d containers", sbs, cs)
	}
	// Idempotent removal and stop (as containerd v2), NotFound for the rest.
	if _, err := c.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sid}); err != nil {
		t.Fatalf("second removal: %v", err)
	}
	if _, err := c.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: runID}); err != nil {
		t.Fatalf("stop of a removed container: %v", err)
	}
	if _, err := c.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: sid}); code(err) != codes.NotFound {
		t.Fatalf("status of a removed sandbox: %v", err)
	}
}

func TestListFilters(t *testing.T) {
	_, c := start(t, fakecri.Options{Images: []string{"img"}})
	ctx := ctx(t)
	var ids []string
	for _, uid := range []string{"a", "b"} {
		sb, err := c.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: sandboxConfig(uid)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, sb.GetPodSandboxId())
		cfg := containerConfig("c", "img")
		cfg.Labels = map[string]string{"uid": uid}
		if _, err := c.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb.GetPodSandboxId(), Config: cfg}); err != nil {
			t.Fatal(err)
		}
	}
	_, _ = c.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: ids[1]})
	ready, _ := c.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{State: &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY}}})
	if len(ready.GetItems()) != 1 || ready.GetItems()[0].GetId() != ids[0] {
		t.Fatalf("ready sandboxes: %v", ready.GetItems())
	}
	byLabel, _ := c.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{LabelSelector: map[string]string{"uid": "b"}}})
	if len(byLabel.GetContainers()) != 1 || byLabel.GetContainers()[0].GetPodSandboxId() != ids[1] {
		t.Fatalf("containers by label: %v", byLabel.GetContainers())
	}
	all, _ := c.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	if len(all.GetContainers()) != 2 {
		t.Fatalf("all containers: %d", len(all.GetContainers()))
	}
}

func TestImages(t *testing.T) {
	s, c := start(t, fakecri.Options{})
	ctx := ctx(t)
	st, err := c.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: "any/name:tag"}})
	if err != nil || st.GetImage() != nil {
		t.Fatalf("status of a missing image: %v %v", st, err)
	}
	p, err := c.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: "any/name:tag"}})
	if err != nil || p.GetImageRef() == "" {
		t.Fatalf("pull: %v %v", p, err)
	}
	st, _ = c.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: p.GetImageRef()}})
	if st.GetImage().GetRepoTags()[0] != "docker.io/any/name:tag" {
		t.Fatalf("status by ID: %v", st)
	}
	l, _ := c.ListImages(ctx, &runtimeapi.ListImagesRequest{})
	if len(l.GetImages()) != 1 || !s.HasImage("any/name:tag") {
		t.Fatalf("list: %v", l)
	}
	_, _ = c.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: "any/name:tag"}})
	if s.HasImage("any/name:tag") {
		t.Fatal("image still there after RemoveImage")
	}
}

func TestFaults(t *testing.T) {
	s, c := start(t, fakecri.Options{})
	ctx := ctx(t)
	version := func() error {
		_, err := c.Version(ctx, &runtimeapi.VersionRequest{})
		return err
	}

	s.FailNext("Version", codes.Unavailable)
	if code(version()) != codes.Unavailable || version() != nil {
		t.Fatal("FailNext: want exactly one failure")
	}

	s.FailTimes("Version", 3, codes.Internal)
	n := 0
	for range 5 {
		if code(version()) == codes.Internal {
			n++
		}
	}
	if n != 3 {
		t.Fatalf("FailTimes 3: %d failures", n)
	}

	remove := s.Inject(fakecri.Fault{Method: fakecri.AnyMethod, Code: codes.NotFound, Message: "gone"})
	if err := version(); code(err) != codes.NotFound || status.Convert(err).Message() != "gone" {
		t.Fatalf("AnyMethod fault: %v", err)
	}
	if _, err := c.ListImages(ctx, &runtimeapi.ListImagesRequest{}); code(err) != codes.NotFound {
		t.Fatalf("AnyMethod fault on the image service: %v", err)
	}
	remove()
	if err := version(); err != nil {
		t.Fatalf("after remove: %v", err)
	}
	if got := s.CallCount("Version"); got != 9 {
		t.Fatalf("CallCount(Version) = %d, want 9", got)
	}
}

func TestProbabilisticFaultsAreReproducible(t *testing.T) {
	failures := func() []bool {
		s, c := start(t, fakecri.Options{Rand: rand.New(rand.NewPCG(7, 7))})
		s.Inject(fakecri.Fault{Method: "Status", Code: codes.Unavailable, Probability: 0.3})
		var out []bool
		for range 100 {
			_, err := c.Status(ctx(t), &runtimeapi.StatusRequest{})
			out = append(out, err != nil)
		}
		return out
	}
	a, b := failures(), failures()
	n := 0
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("call %d differs between two runs with the same seed", i)
		}
		if a[i] {
			n++
		}
	}
	if n < 15 || n > 45 {
		t.Fatalf("%d failures out of 100 at probability 0.3", n)
	}
}

func TestLatencyOnTheServersClock(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	s, c := start(t, fakecri.Options{Clock: clk})
	s.Delay("Version", 5*time.Second)
	done := make(chan error, 1)
	go func() {
		_, err := c.Version(context.Background(), &runtimeapi.VersionRequest{})
		done <- err
	}()
	deadline := time.Now().Add(10 * time.Second)
	for !clk.HasWaiters() {
		if time.Now().After(deadline) {
			t.Fatal("the delayed call never waited")
		}
		<-time.After(time.Millisecond)
	}
	clk.Step(5 * time.Second)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// The client's deadline ends an injected delay.
	dctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := c.Version(dctx, &runtimeapi.VersionRequest{}); code(err) != codes.DeadlineExceeded {
		t.Fatalf("delayed call past its deadline: %v", err)
	}
}

func TestDownAndUpKeepState(t *testing.T) {
	s, c := start(t, fakecri.Options{Images: []string{"img"}})
	if _, err := c.RunPodSandbox(ctx(t), &runtimeapi.RunPodSandboxRequest{Config: sandboxConfig("a")}); err != nil {
		t.Fatal(err)
	}
	s.Down()
	if s.IsUp() {
		t.Fatal("IsUp after Down")
	}
	short, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := c.Version(short, &runtimeapi.VersionRequest{}); code(err) != codes.Unavailable {
		t.Fatalf("call while down: %v", err)
	}
	if err := s.Up(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		l, err := c.ListPodSandbox(ctx(t), &runtimeapi.ListPodSandboxRequest{})
		if err == nil {
			if len(l.GetItems()) != 1 {
				t.Fatalf("state after Up: %v", l.GetItems())
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no answer after Up: %v", err)
		}
		<-time.After(10 * time.Millisecond)
	}
}

func TestHelpers(t *testing.T) {
	s, c := start(t, fakecri.Options{Images: []string{"img"}})
	ctx := ctx(t)
	sb, _ := c.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: sandboxConfig("a")})
	cr, _ := c.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb.GetPodSandboxId(), Config: containerConfig("c", "img")})
	if err := s.ExitContainer(cr.GetContainerId(), 1); err == nil {
		t.Fatal("ExitContainer of a created container")
	}
	_, _ = c.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: cr.GetContainerId()})
	if err := s.ExitContainer(cr.GetContainerId(), 2); err != nil {
		t.Fatal(err)
	}
	st, _ := c.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: cr.GetContainerId()})
	if st.GetStatus().GetExitCode() != 2 {
		t.Fatalf("after ExitContainer: %v", st)
	}
	if err := s.Forget(sb.GetPodSandboxId()); err != nil {
		t.Fatal(err)
	}
	if sbs, cs := s.Counts(); sbs != 0 || cs != 0 {
		t.Fatalf("Forget of a sandbox: %d, %d left", sbs, cs)
	}
	if err := s.Forget("nope"); err == nil {
		t.Fatal("Forget of an unknown ID")
	}
}

// A container that joins another's PID namespace (NamespaceMode_TARGET,
// an ephemeral container's) needs a running container of its sandbox as
// the target, as containerd checks.
func TestCreateContainerTargetNamespace(t *testing.T) {
	_, c := start(t, fakecri.Options{Images: []string{"img"}})
	ctx := ctx(t)
	sandbox := func(uid string) string {
		sb, err := c.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: sandboxConfig(uid)})
		if err != nil {
			t.Fatal(err)
		}
		return sb.GetPodSandboxId()
	}
	sid, other := sandbox("u1"), sandbox("u2")
	create := func(sandboxID, name, target string) (string, error) {
		cfg := containerConfig(name, "img")
		if target != "-" {
			cfg.Linux = &runtimeapi.LinuxContainerConfig{SecurityContext: &runtimeapi.LinuxContainerSecurityContext{
				NamespaceOptions: &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_TARGET, TargetId: target}}}
		}
		r, err := c.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sandboxID, Config: cfg})
		return r.GetContainerId(), err
	}
	mainID, err := create(sid, "main", "-")
	if err != nil {
		t.Fatal(err)
	}
	otherID, err := create(other, "main", "-")
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{mainID, otherID} {
		if _, err := c.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: id}); err != nil {
			t.Fatal(err)
		}
	}
	createdID, err := create(sid, "created", "-")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, target string }{{"no target", ""}, {"unknown", "nope"}, {"other sandbox", otherID}, {"not running", createdID}} {
		if _, err := create(sid, "debug-"+strings.ReplaceAll(tc.name, " ", "-"), tc.target); code(err) != codes.Unknown {
			t.Errorf("%s: %v, want Unknown", tc.name, err)
		}
	}
	id, err := create(sid, "debug", mainID)
	if err != nil {
		t.Fatalf("target running in the sandbox: %v", err)
	}
	if _, err := c.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: id}); err != nil {
		t.Fatal(err)
	}
}

// TestListPodSandboxStatsGroupsRunningContainers: each ready sandbox's stats
// hold its own running containers only, and the pod's working set is their
// sum; the Id filter narrows to one sandbox.
func TestListPodSandboxStatsGroupsRunningContainers(t *testing.T) {
	_, c := start(t, fakecri.Options{Images: []string{"img"}})
	ctx := ctx(t)
	running := map[string]int{"a": 2, "b": 1, "c": 0} // running containers per pod
	ids := map[string]string{}
	for uid, n := range running {
		sb, err := c.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: sandboxConfig(uid)})
		if err != nil {
			t.Fatal(err)
		}
		ids[uid] = sb.GetPodSandboxId()
		for i := range n + 1 { // one more, left created (not running)
			r, err := c.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb.GetPodSandboxId(),
				Config: containerConfig(fmt.Sprintf("c%d", i), "img")})
			if err != nil {
				t.Fatal(err)
			}
			if i < n {
				if _, err := c.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: r.GetContainerId()}); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	all, err := c.ListPodSandboxStats(ctx, &runtimeapi.ListPodSandboxStatsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all.GetStats()) != len(running) {
		t.Fatalf("%d sandbox stats, want %d", len(all.GetStats()), len(running))
	}
	for _, st := range all.GetStats() {
		uid := st.GetAttributes().GetMetadata().GetUid()
		cs := st.GetLinux().GetContainers()
		if len(cs) != running[uid] {
			t.Errorf("pod %s: %d container stats, want its %d running containers", uid, len(cs), running[uid])
		}
		var ws uint64
		for _, s := range cs {
			if s.GetAttributes().GetMetadata().GetName() == fmt.Sprintf("c%d", running[uid]) {
				t.Errorf("pod %s: stats of its created, not running, container", uid)
			}
			ws += s.GetMemory().GetWorkingSetBytes().GetValue()
		}
		if got := st.GetLinux().GetMemory().GetWorkingSetBytes().GetValue(); got != ws || (running[uid] > 0) != (ws > 0) {
			t.Errorf("pod %s: working set %d, its containers' sum %d", uid, got, ws)
		}
	}
	one, err := c.ListPodSandboxStats(ctx, &runtimeapi.ListPodSandboxStatsRequest{Filter: &runtimeapi.PodSandboxStatsFilter{Id: ids["a"]}})
	if err != nil || len(one.GetStats()) != 1 || len(one.GetStats()[0].GetLinux().GetContainers()) != 2 {
		t.Fatalf("stats of sandbox a alone: %v %v", one.GetStats(), err)
	}
}
