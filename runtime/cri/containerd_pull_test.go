package cri_test

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podlife/podlife/runtime"
	"github.com/podlife/podlife/runtime/cri"
)

// unpullableImage names a registry on a loopback port nothing listens on:
// the pull is refused at once, with no outside traffic.
const unpullableImage = "127.0.0.1:1/nothing:1"

// On a real runtime, an image that cannot be pulled gives ErrImagePull
// with containerd's error, then ImagePullBackOff with the kubelet's
// message and no pull until the back-off expires, then a new pull.
func TestRealImagePullBackOff(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	rt := newRealRuntime(t, func(o *cri.Options) { o.Clock = clk })
	ctx := realContext(t, 2*time.Minute)
	pod := realPod(realImage())
	pod.Spec.Containers = []v1.Container{{Name: "main", Image: unpullableImage, ImagePullPolicy: v1.PullIfNotPresent}}
	cleanupPod(t, rt, pod)

	err := rt.SyncPod(ctx, pod, nil)
	pull := runtime.StartFailures(err)["main"]
	if pull == nil || pull.Reason != runtime.ErrImagePull || !strings.HasPrefix(pull.Message, "rpc error: code = ") ||
		!strings.Contains(pull.Message, unpullableImage) {
		t.Fatalf("first sync: %v, want ErrImagePull with containerd's error naming the image", err)
	}
	t.Logf("ErrImagePull: %s", pull.Message)

	err = rt.SyncPod(ctx, pod, nil)
	want := `Back-off pulling image "` + unpullableImage + `": ErrImagePull: ` + pull.Message
	if f := runtime.StartFailures(err)["main"]; f == nil || f.Reason != runtime.ErrImagePullBackOff || f.Message != want {
		t.Fatalf("second sync: %v, want ImagePullBackOff %q", err, want)
	}

	clk.Step(cri.DefaultImagePullBackOffInitial)
	err = rt.SyncPod(ctx, pod, nil)
	if f := runtime.StartFailures(err)["main"]; f == nil || f.Reason != runtime.ErrImagePull {
		t.Fatalf("sync after the back-off: %v, want a new pull and ErrImagePull", err)
	}
	if cs := podStatus(t, rt, pod).FindContainerStatusByName("main"); cs != nil {
		t.Fatalf("a container was created: %+v", cs)
	}
}
