package cri_test

import (
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/runtime"
	"github.com/podlife/podlife/runtime/cri"
	"github.com/podlife/podlife/runtime/fakecri"
)

// A Runtime whose calls go through a caller's connection (fakecri's
// direct one) runs a pod's whole life, classifies the runtime's errors,
// counts its calls in the operation metrics, applies its MaxMessageSize,
// and fails every call once closed.
func TestRuntimeThroughACallersConn(t *testing.T) {
	srv := fakecri.New(fakecri.Options{Images: []string{testImage}})
	if err := srv.StartInMemory(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	reg := prometheus.NewPedanticRegistry()
	rt, err := cri.New(cri.Options{Conn: srv.Conn(), Registerer: reg, VolumeRoot: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)

	pod := testPod("web", v1.RestartPolicyAlways, v1.Container{Name: "c", Image: testImage})
	srv.FailNext("RunPodSandbox", codes.Unavailable)
	if err := rt.SyncPod(ctx, pod, podStatus(t, rt, pod)); !errors.Is(err, runtime.ErrUnavailable) {
		t.Fatalf("SyncPod with RunPodSandbox failing Unavailable: %v, want runtime.ErrUnavailable", err)
	}
	if err := rt.SyncPod(ctx, pod, podStatus(t, rt, pod)); err != nil {
		t.Fatal(err)
	}
	if st := podStatus(t, rt, pod); !st.HasRunningContainers() || !st.HasReadySandbox() {
		t.Fatalf("status after SyncPod: %+v, want a running container in a ready sandbox", st)
	}
	// MaxMessageSize applies to the caller's connection too.
	// (The pod's listing is some hundreds of bytes; the request, a few.)
	small, err := cri.New(cri.Options{Conn: srv.Conn(), MaxMessageSize: 100, VolumeRoot: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := small.GetPods(ctx, true); !isResourceExhausted(err) {
		t.Errorf("GetPods with a 100-byte message limit: %v, want ResourceExhausted", err)
	}
	if err := small.Close(); err != nil {
		t.Fatal(err)
	}

	if err := rt.KillPod(ctx, pod, nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := rt.RemovePod(ctx, &runtime.Pod{ID: pod.UID, Name: pod.Name, Namespace: pod.Namespace}); err != nil {
		t.Fatal(err)
	}
	if sb, c := srv.Counts(); sb != 0 || c != 0 {
		t.Errorf("runtime holds %d sandboxes and %d containers after RemovePod, want none", sb, c)
	}
	for _, c := range []struct {
		name, op string
		want     int
	}{
		{"kubelet_runtime_operations_total", "run_podsandbox", 2},
		{"kubelet_runtime_operations_errors_total", "run_podsandbox", 1},
		{"kubelet_runtime_operations_total", "remove_container", 1},
	} {
		got := opCount(t, reg, c.name, c.op)
		if got != float64(c.want) {
			t.Errorf("%s{operation_type=%q} = %v, want %d", c.name, c.op, got, c.want)
		}
	}

	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.GetPods(ctx, true); err == nil {
		t.Error("GetPods after Close: no error")
	}
	if err := rt.Close(); err == nil {
		t.Error("a second Close: no error")
	}
}

// isResourceExhausted looks for a gRPC ResourceExhausted status anywhere
// in err's chain.
func isResourceExhausted(err error) bool {
	for ; err != nil; err = errors.Unwrap(err) {
		if st, ok := status.FromError(err); ok && st.Code() == codes.ResourceExhausted {
			return true
		}
	}
	return false
}
