package cri_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podlife/podlife/runtime"
	"github.com/podlife/podlife/runtime/cri"
	"github.com/podlife/podlife/runtime/fakecri"
)

// failure returns the StartError SyncPod's err holds for container name,
// failing the test when there is none or its reason is not want.
func failure(t *testing.T, err error, name string, want error) *runtime.StartError {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("SyncPod: %v, want %v", err, want)
	}
	f := runtime.StartFailures(err)[name]
	if f == nil || f.Reason != want {
		t.Fatalf("StartFailures(%v)[%q] = %+v, want reason %v", err, name, f, want)
	}
	return f
}

// expectEvents checks that the events recorded since the last call are
// exactly want, in order.
func expectEvents(t *testing.T, rec *record.FakeRecorder, want ...string) {
	t.Helper()
	got := drain(rec)
	if got != strings.Join(want, "\n") {
		t.Fatalf("events:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
}

// A pull that fails gives ErrImagePull with the runtime's error; the next
// syncs within the back-off (10 s, then 20 s, on the injected clock) do
// not pull and give ImagePullBackOff with the kubelet's message; once the
// back-off expires the pull is tried again, and the pod starts when it
// succeeds. Events as the kubelet's.
func TestImagePullBackOff(t *testing.T) {
	srv, ep := startFake(t, fakecri.Options{})
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rt := newRuntime(t, ep, func(o *cri.Options) { o.Clock = clk })
	rec := record.NewFakeRecorder(100)
	rt.SetRecorder(rec)
	ctx := ctxT(t)
	removeFault := srv.Inject(fakecri.Fault{Method: "PullImage", Code: codes.NotFound, Message: "no such image"})
	pod := testPod("pull", v1.RestartPolicyAlways, v1.Container{Name: "c", Image: "missing:1"})
	const pullErr = "rpc error: code = NotFound desc = no such image"
	const backOffMsg = `Back-off pulling image "missing:1": ErrImagePull: ` + pullErr

	pulled := func(want int) {
		t.Helper()
		if n := srv.CallCount("PullImage"); n != want {
			t.Fatalf("PullImage called %d times, want %d", n, want)
		}
	}
	errImagePull := func() {
		t.Helper()
		err := rt.SyncPod(ctx, pod, nil)
		if f := failure(t, err, "c", runtime.ErrImagePull); f.Message != pullErr || !errors.Is(err, runtime.ErrNotFound) {
			t.Fatalf("ErrImagePull message %q (%v), want %q wrapping ErrNotFound", f.Message, err, pullErr)
		}
		expectEvents(t, rec, `Normal Pulling Pulling image "missing:1"`,
			`Warning Failed Failed to pull image "missing:1": `+pullErr,
			`Warning Failed Error: ErrImagePull`)
	}
	imagePullBackOff := func() {
		t.Helper()
		err := rt.SyncPod(ctx, pod, nil)
		if f := failure(t, err, "c", runtime.ErrImagePullBackOff); f.Message != backOffMsg {
			t.Fatalf("ImagePullBackOff message %q, want %q", f.Message, backOffMsg)
		}
		if !runtime.IsRetryable(err) {
			t.Errorf("ImagePullBackOff is not retryable: %v", err)
		}
		expectEvents(t, rec, `Normal BackOff Back-off pulling image "missing:1"`, `Warning Failed Error: ImagePullBackOff`)
	}

	errImagePull()
	pulled(1)
	imagePullBackOff()
	clk.Step(9 * time.Second)
	imagePullBackOff()
	pulled(1)
	clk.Step(time.Second) // 10 s: the back-off has expired
	errImagePull()
	pulled(2)
	clk.Step(19 * time.Second) // now 20 s
	imagePullBackOff()
	pulled(2)

	removeFault()
	clk.Step(time.Second)
	if err := rt.SyncPod(ctx, pod, nil); err != nil {
		t.Fatalf("SyncPod once the image can be pulled: %v", err)
	}
	pulled(3)
	if cs := podStatus(t, rt, pod).FindContainerStatusByName("c"); cs == nil || cs.State != runtime.ContainerStateRunning {
		t.Fatalf("container after a successful pull: %+v", cs)
	}
}

// The back-off is per pod and image: a second container of the pod with
// the same image waits at once; another pod pulls for itself.
func TestImagePullBackOffPerPodAndImage(t *testing.T) {
	srv, ep := startFake(t, fakecri.Options{})
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rt := newRuntime(t, ep, func(o *cri.Options) { o.Clock = clk })
	ctx := ctxT(t)
	srv.Inject(fakecri.Fault{Method: "PullImage", Code: codes.Unknown, Message: "refused"})
	a := testPod("a", v1.RestartPolicyAlways, v1.Container{Name: "one", Image: "x:1"}, v1.Container{Name: "two", Image: "x:1"}, v1.Container{Name: "three", Image: "y:1"})
	err := rt.SyncPod(ctx, a, nil)
	got := map[string]string{}
	for name, f := range runtime.StartFailures(err) {
		got[name] = f.ReasonText()
	}
	want := map[string]string{"one": "ErrImagePull", "two": "ImagePullBackOff", "three": "ErrImagePull"}
	if len(got) != len(want) || got["one"] != want["one"] || got["two"] != want["two"] || got["three"] != want["three"] {
		t.Fatalf("reasons %v, want %v", got, want)
	}
	if n := srv.CallCount("PullImage"); n != 2 {
		t.Fatalf("PullImage called %d times, want 2", n)
	}
	b := testPod("b", v1.RestartPolicyAlways, v1.Container{Name: "one", Image: "x:1"})
	failure(t, rt.SyncPod(ctx, b, nil), "one", runtime.ErrImagePull)
}

// The other reasons of the image step: a name that does not parse, an
// image whose status cannot be read, a missing image with policy Never.
func TestImageStartReasons(t *testing.T) {
	srv, ep := startFake(t, fakecri.Options{})
	rt := newRuntime(t, ep)
	rec := record.NewFakeRecorder(100)
	rt.SetRecorder(rec)
	ctx := ctxT(t)

	f := failure(t, rt.SyncPod(ctx, testPod("inv", v1.RestartPolicyAlways, v1.Container{Name: "c", Image: "Busybox:1"}), nil), "c", runtime.ErrInvalidImageName)
	const invalid = `Failed to apply default image tag "Busybox:1": couldn't parse image name "Busybox:1": invalid reference format: repository name (Busybox) must be lowercase`
	if f.Message != invalid {
		t.Errorf("InvalidImageName message %q, want %q", f.Message, invalid)
	}
	expectEvents(t, rec, "Warning InspectFailed "+invalid, "Warning Failed Error: InvalidImageName")

	srv.FailNext("ImageStatus", codes.Internal)
	f = failure(t, rt.SyncPod(ctx, testPod("insp", v1.RestartPolicyAlways, v1.Container{Name: "c", Image: "x:1"}), nil), "c", runtime.ErrImageInspect)
	const inspect = `Failed to inspect image "x:1": rpc error: code = Internal desc = fakecri: injected Internal`
	if f.Message != inspect {
		t.Errorf("ImageInspectError message %q, want %q", f.Message, inspect)
	}
	expectEvents(t, rec, "Warning InspectFailed "+inspect, "Warning Failed Error: ImageInspectError")

	f = failure(t, rt.SyncPod(ctx, testPod("never", v1.RestartPolicyAlways, v1.Container{Name: "c", Image: "absent:1", ImagePullPolicy: v1.PullNever}), nil), "c", runtime.ErrImageNeverPull)
	const never = `Container image "absent:1" is not present with pull policy of Never`
	if f.Message != never {
		t.Errorf("ErrImageNeverPull message %q, want %q", f.Message, never)
	}
	expectEvents(t, rec, "Warning ErrImageNeverPull "+never, "Warning Failed Error: ErrImageNeverPull")
}

// missingObject is what a provider gives for a ConfigMap that does not
// exist yet: the kubelet's message, classified ErrFailedPrecondition.
type missingObject struct{}

func (missingObject) Error() string { return `configmap "cm" not found` }
func (missingObject) Unwrap() error { return runtime.ErrFailedPrecondition }

// RetryAfter is a retry hint, as agent/volume's SetUpError gives.
func (missingObject) RetryAfter() time.Duration { return 1500 * time.Millisecond }

// gatedProvider fails RunContainerOptions with missingObject until opened.
type gatedProvider struct {
	mu   sync.Mutex
	open bool
}

func (p *gatedProvider) HandlesVolume(*v1.Volume) bool { return false }

func (p *gatedProvider) RunContainerOptions(context.Context, *v1.Pod, *v1.Container, []string) (*runtime.RunContainerOptions, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.open {
		return nil, missingObject{}
	}
	return &runtime.RunContainerOptions{Env: []runtime.EnvVar{{Name: "K", Value: "v"}}}, nil
}

func (p *gatedProvider) ImagePullCredentials(context.Context, *v1.Pod, string) ([]runtime.ImageAuth, error) {
	return nil, nil
}

// A provider's ErrFailedPrecondition is CreateContainerConfigError with
// the provider's message, and nothing is created; once the provider can
// answer, the next sync starts the container.
func TestCreateContainerConfigErrorFromProvider(t *testing.T) {
	srv, ep := startFake(t, fakecri.Options{})
	rt := newRuntime(t, ep)
	rec := record.NewFakeRecorder(100)
	rt.SetRecorder(rec)
	p := &gatedProvider{}
	rt.SetContainerOptionsProvider(p)
	ctx := ctxT(t)
	pod := testPod("cfg", v1.RestartPolicyAlways, v1.Container{Name: "c"})

	for range 2 {
		err := rt.SyncPod(ctx, pod, nil)
		f := failure(t, err, "c", runtime.ErrCreateContainerConfig)
		if f.Message != `configmap "cm" not found` || !errors.Is(err, runtime.ErrFailedPrecondition) {
			t.Fatalf("CreateContainerConfigError message %q (%v), want the provider's, wrapping ErrFailedPrecondition", f.Message, err)
		}
		// The provider's retry hint reaches the pod worker.
		var ra interface{ RetryAfter() time.Duration }
		if !errors.As(err, &ra) || ra.RetryAfter() != 1500*time.Millisecond {
			t.Fatalf("SyncPod's error %v does not carry the provider's retry hint", err)
		}
		if ev := drain(rec); !strings.HasSuffix(ev, `Warning Failed Error: configmap "cm" not found`) {
			t.Fatalf("events:\n%s\nwant a last Failed event with the message", ev)
		}
		if n := srv.CallCount("CreateContainer"); n != 0 {
			t.Fatalf("CreateContainer called %d times before the provider could answer", n)
		}
	}
	p.mu.Lock()
	p.open = true
	p.mu.Unlock()
	if err := rt.SyncPod(ctx, pod, nil); err != nil {
		t.Fatalf("SyncPod once the provider answers: %v", err)
	}
	if cs := podStatus(t, rt, pod).FindContainerStatusByName("c"); cs == nil || cs.State != runtime.ContainerStateRunning {
		t.Fatalf("container: %+v", cs)
	}
}

// runAsNonRoot refusals are CreateContainerConfigError too, with the
// kubelet's message naming the pod as NAME_NAMESPACE(UID).
func TestCreateContainerConfigErrorRunAsNonRoot(t *testing.T) {
	_, ep := startFake(t, fakecri.Options{Registry: []fakecri.RegistryImage{{Refs: []string{"root:1"}, User: "0"}}, Images: []string{"root:1"}})
	rt := newRuntime(t, ep)
	yes := true
	pod := testPod("nonroot", v1.RestartPolicyAlways, v1.Container{Name: "c", Image: "root:1", SecurityContext: &v1.SecurityContext{RunAsNonRoot: &yes}})
	f := failure(t, rt.SyncPod(ctxT(t), pod, nil), "c", runtime.ErrCreateContainerConfig)
	const want = `container has runAsNonRoot and image will run as root (pod: "nonroot_ns(uid-nonroot)", container: c)`
	if f.Message != want {
		t.Fatalf("message %q, want %q", f.Message, want)
	}
}

// The runtime refusing CreateContainer is CreateContainerError, refusing
// StartContainer RunContainerError, each with the runtime's message; the
// created instance is started at the next sync.
func TestCreateAndRunContainerErrors(t *testing.T) {
	srv, ep := startFake(t, fakecri.Options{})
	rt := newRuntime(t, ep)
	rec := record.NewFakeRecorder(100)
	rt.SetRecorder(rec)
	ctx := ctxT(t)
	pod := testPod("cr", v1.RestartPolicyAlways, v1.Container{Name: "c"})

	srv.Inject(fakecri.Fault{Method: "CreateContainer", Code: codes.Internal, Message: "no space left", Times: 1})
	if f := failure(t, rt.SyncPod(ctx, pod, nil), "c", runtime.ErrCreateContainer); f.Message != "no space left" {
		t.Fatalf("CreateContainerError message %q", f.Message)
	}
	if ev := drain(rec); !strings.HasSuffix(ev, "Warning Failed Error: no space left") {
		t.Fatalf("events:\n%s", ev)
	}

	srv.Inject(fakecri.Fault{Method: "StartContainer", Code: codes.Unknown, Message: "exec: not found", Times: 1})
	if f := failure(t, rt.SyncPod(ctx, pod, nil), "c", runtime.ErrRunContainer); f.Message != "exec: not found" {
		t.Fatalf("RunContainerError message %q", f.Message)
	}
	if ev := drain(rec); !strings.HasSuffix(ev, "Warning Failed Error: exec: not found") {
		t.Fatalf("events:\n%s", ev)
	}
	if err := rt.SyncPod(ctx, pod, nil); err != nil {
		t.Fatalf("SyncPod after the runtime recovered: %v", err)
	}
	if cs := podStatus(t, rt, pod).FindContainerStatusByName("c"); cs == nil || cs.State != runtime.ContainerStateRunning {
		t.Fatalf("container: %+v", cs)
	}
}

// A pull cut short because the sync's context ended starts no back-off:
// the next sync pulls again.
func TestCancelledPullStartsNoBackOff(t *testing.T) {
	srv, ep := startFake(t, fakecri.Options{})
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rt := newRuntime(t, ep, func(o *cri.Options) { o.Clock = clk })
	pod := testPod("cut", v1.RestartPolicyAlways, v1.Container{Name: "c", Image: "slow:1"})
	removeDelay := srv.Delay("PullImage", time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go func() { // cancel the sync once its pull has started
		for srv.CallCount("PullImage") == 0 && ctx.Err() == nil {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	failure(t, rt.SyncPod(ctx, pod, nil), "c", runtime.ErrImagePull)
	removeDelay()
	if err := rt.SyncPod(ctxT(t), pod, nil); err != nil {
		t.Fatalf("SyncPod after a cancelled pull: %v, want a new pull at once", err)
	}
	if n := srv.CallCount("PullImage"); n != 2 {
		t.Fatalf("PullImage called %d times, want 2", n)
	}
}
