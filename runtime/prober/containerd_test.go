package prober_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/runtime/cri"
	"github.com/podlife/podlife/runtime/prober"
)

// TestExecProbesOnContainerd runs exec probes through runtime/cri in a
// container of a real containerd (scripts/containerd/start.sh; skipped
// without PODLIFE_CRI_ENDPOINT): a passing command, a failing one, and one
// that outlives its timeout (a failure, not an Unknown).
func TestExecProbesOnContainerd(t *testing.T) {
	endpoint := os.Getenv("PODLIFE_CRI_ENDPOINT")
	if endpoint == "" {
		t.Skip("PODLIFE_CRI_ENDPOINT is not set: start a containerd with `sock=$(bash scripts/containerd/start.sh)`")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rt, err := cri.New(cri.Options{Endpoint: endpoint, Timeout: 30 * time.Second, CgroupParent: "/podlife-test", Logger: testr.New(t), VolumeRoot: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() }) // after the pod's removal below
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	suffix := hex.EncodeToString(b)
	grace := int64(2)
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "probe-" + suffix[:8], Namespace: "podlife-test", UID: types.UID("probe-" + suffix)},
		Spec: v1.PodSpec{RestartPolicy: v1.RestartPolicyAlways, TerminationGracePeriodSeconds: &grace,
			Containers: []v1.Container{{Name: "c", Image: "localhost/podlife/pause:1.0", ImagePullPolicy: v1.PullIfNotPresent}}},
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := rt.KillPod(ctx, pod, nil, &grace); err != nil {
			t.Errorf("KillPod: %v", err)
		}
		if pods, err := rt.GetPods(ctx, true); err == nil {
			for _, p := range pods {
				if p.ID == pod.UID {
					_ = rt.RemovePod(ctx, p)
				}
			}
		}
	})
	if err := rt.SyncPod(ctx, pod, nil); err != nil {
		t.Fatalf("SyncPod: %v", err)
	}
	st, err := rt.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	cs := st.FindContainerStatusByName("c")
	if cs == nil {
		t.Fatal("no container c")
	}
	for _, tc := range []struct {
		name      string
		cmd       []string
		want      prober.Result
		outputHas string
	}{
		{"passes", []string{"/pause", "echo", "alive"}, prober.Success, "alive"},
		{"fails", []string{"/pause", "exit", "3"}, prober.Failure, "exited with 3"},
		{"times out", []string{"/pause", "exit", "0", "5"}, prober.Failure, "timed out"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := probeOnceIn(t, cs.ID.ID, v1.Container{}, v1.ProbeHandler{Exec: &v1.ExecAction{Command: tc.cmd}}, "",
				func(o *prober.Options) { o.Exec = rt })
			if u.Result != tc.want || !strings.Contains(u.Output, tc.outputHas) {
				t.Fatalf("result %v, output %q; want %v with %q", u.Result, u.Output, tc.want, tc.outputHas)
			}
		})
	}
}
