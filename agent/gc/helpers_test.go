package gc_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podlife/podlife/runtime/cri"
	"github.com/podlife/podlife/runtime/fakecri"
)

const testImage = "localhost/podlife/pause:1.0"

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// world is a fakecri server, the CRI adapter over it, a raw CRI client to
// make objects with, and fake pod workers.
type world struct {
	t      testing.TB
	clock  *clocktesting.FakeClock
	srv    *fakecri.Server
	rt     *cri.Runtime
	rs     runtimeapi.RuntimeServiceClient
	pods   *fakePods
	root   string // the runtime's VolumeRoot
	logs   *logLines
	ctx    context.Context
	nextAt int64
}

func newWorld(t testing.TB) *world {
	t.Helper()
	clk := clocktesting.NewFakeClock(epoch)
	dir, err := os.MkdirTemp("", "gcri")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	srv := fakecri.New(fakecri.Options{Clock: clk, Images: []string{testImage}})
	ep, err := srv.StartUnix(filepath.Join(dir, "cri.sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	root := t.TempDir()
	rt, err := cri.New(cri.Options{Endpoint: ep, Timeout: 30 * time.Second, VolumeRoot: root, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	conn, err := grpc.NewClient(ep, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	return &world{t: t, clock: clk, srv: srv, rt: rt, rs: runtimeapi.NewRuntimeServiceClient(conn),
		pods: newFakePods(), root: root, logs: &logLines{}, ctx: ctx}
}

// sandbox makes a ready sandbox of pod uid with the given attempt.
func (w *world) sandbox(uid string, attempt uint32) string {
	w.t.Helper()
	resp, err := w.rs.RunPodSandbox(w.ctx, &runtimeapi.RunPodSandboxRequest{Config: &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: "p-" + uid, Namespace: "ns", Uid: uid, Attempt: attempt},
		Labels:   map[string]string{cri.LabelPodUID: uid, cri.LabelPodName: "p-" + uid, cri.LabelPodNamespace: "ns"},
	}})
	if err != nil {
		w.t.Fatal(err)
	}
	w.clock.Step(time.Second)
	return resp.GetPodSandboxId()
}

// stop stops a sandbox.
func (w *world) stop(id string) {
	w.t.Helper()
	if _, err := w.rs.StopPodSandbox(w.ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: id}); err != nil {
		w.t.Fatal(err)
	}
}

// container makes a container named name in sandbox sb of pod uid, with
// the given attempt: running, or exited at once.
func (w *world) container(sb, uid, name string, attempt uint32, running bool) string {
	w.t.Helper()
	args := []string{"sleep"}
	if !running {
		args = []string{"exit", "1"}
	}
	resp, err := w.rs.CreateContainer(w.ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb,
		Config: &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: name, Attempt: attempt},
			Image:    &runtimeapi.ImageSpec{Image: testImage},
			Args:     args,
			Labels:   map[string]string{cri.LabelPodUID: uid, cri.LabelPodName: "p-" + uid, cri.LabelPodNamespace: "ns", cri.LabelContainerName: name},
		},
		SandboxConfig: &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "p-" + uid, Namespace: "ns", Uid: uid}},
	})
	if err != nil {
		w.t.Fatal(err)
	}
	id := resp.GetContainerId()
	if _, err := w.rs.StartContainer(w.ctx, &runtimeapi.StartContainerRequest{ContainerId: id}); err != nil {
		w.t.Fatal(err)
	}
	w.clock.Step(time.Second)
	return id
}

// ids returns the IDs of every container and sandbox in the runtime.
func (w *world) ids() map[string]bool {
	w.t.Helper()
	out := map[string]bool{}
	cs, err := w.rs.ListContainers(w.ctx, &runtimeapi.ListContainersRequest{})
	if err != nil {
		w.t.Fatal(err)
	}
	for _, c := range cs.GetContainers() {
		out[c.GetId()] = true
	}
	sbs, err := w.rs.ListPodSandbox(w.ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		w.t.Fatal(err)
	}
	for _, s := range sbs.GetItems() {
		out[s.GetId()] = true
	}
	return out
}

// fakePods answers as podworker.Workers would for the pods it was told.
type fakePods struct {
	mu     sync.Mutex
	synced bool
	pods   map[types.UID]podState
}

type podState int

const (
	running podState = iota
	terminating
	terminated        // terminated, not deleted (a Job's finished pod)
	deletedTerminated // deleted and terminated: its content may go
)

func newFakePods() *fakePods { return &fakePods{synced: true, pods: map[types.UID]podState{}} }

func (f *fakePods) set(uid string, s podState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pods[types.UID(uid)] = s
}

func (f *fakePods) get(uid types.UID) (podState, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.pods[uid]
	return s, ok
}

func (f *fakePods) answer(uid types.UID, known func(podState) bool, unknownBefore, unknownAfter bool) bool {
	if s, ok := f.get(uid); ok {
		return known(s)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.synced {
		return unknownAfter
	}
	return unknownBefore
}

func (f *fakePods) ShouldPodContentBeRemoved(uid types.UID) bool {
	return f.answer(uid, func(s podState) bool { return s == deletedTerminated }, false, true)
}

func (f *fakePods) ShouldPodRuntimeBeRemoved(uid types.UID) bool {
	return f.answer(uid, func(s podState) bool { return s >= terminated }, false, true)
}

func (f *fakePods) ShouldPodContainersBeTerminating(uid types.UID) bool {
	return f.answer(uid, func(s podState) bool { return s >= terminating }, false, true)
}

func (f *fakePods) IsPodKnownTerminated(uid types.UID) bool {
	return f.answer(uid, func(s podState) bool { return s >= terminated }, false, false)
}

func (f *fakePods) CouldHaveRunningContainers(uid types.UID) bool {
	return f.answer(uid, func(s podState) bool { return s < terminated }, true, false)
}

// logLines records log lines: errors and infos with their verbosity.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.lines = append(l.lines, prefix+" "+args)
	}, funcr.Options{Verbosity: 4})
}

func (l *logLines) count(sub string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, s := range l.lines {
		if strings.Contains(s, sub) {
			n++
		}
	}
	return n
}

func mustf(t testing.TB, ok bool, format string, args ...any) {
	t.Helper()
	if !ok {
		t.Fatalf(format, args...)
	}
}
