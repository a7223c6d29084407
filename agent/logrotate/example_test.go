package logrotate_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podlife/podlife/agent/logrotate"
	"github.com/podlife/podlife/runtime/cri"
	"github.com/podlife/podlife/runtime/fakecri"
)

// A chatty container on a CRI runtime (here the in-process fakecri): its
// log is rotated at each pass once it has reached 1 KiB, and at most 3
// files are kept, the older rotated ones compressed.
func Example() {
	dir, err := os.MkdirTemp("", "logrotate")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	srv := fakecri.New(fakecri.Options{})
	endpoint, err := srv.StartUnix(filepath.Join(dir, "cri.sock"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Stop()
	rt, err := cri.New(cri.Options{Endpoint: endpoint, VolumeRoot: filepath.Join(dir, "pods")})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()
	ctx := context.Background()
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "chatty", Namespace: "default", UID: "uid-1"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "main", Image: "localhost/podlife/pause:1.0"}}}}
	if err := rt.SyncPod(ctx, pod, nil); err != nil {
		fmt.Println(err)
		return
	}
	st, err := rt.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		fmt.Println(err)
		return
	}
	id := st.FindContainerStatusByName("main").ID.ID

	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	m, err := logrotate.New(logrotate.Options{Runtime: rt, MaxSize: 1 << 10, MaxFiles: 3, Clock: clk})
	if err != nil {
		fmt.Println(err)
		return
	}
	for range 4 {
		// 2 KiB of output between two passes.
		if err := srv.WriteLog(id, "stdout", strings.Repeat(strings.Repeat("x", 63)+"\n", 20)); err != nil {
			fmt.Println(err)
			return
		}
		clk.Step(logrotate.DefaultInterval)
		res, err := m.Rotate(ctx)
		fmt.Printf("%+v %v\n", res, err)
	}
	path, _ := rt.ContainerLogPath(ctx, id)
	entries, _ := os.ReadDir(filepath.Dir(path))
	for _, e := range entries {
		fmt.Println(e.Name())
	}
	// Output:
	// {Containers:1 Rotated:1 Failed:0} <nil>
	// {Containers:1 Rotated:1 Failed:0} <nil>
	// {Containers:1 Rotated:1 Failed:0} <nil>
	// {Containers:1 Rotated:1 Failed:0} <nil>
	// 0.log
	// 0.log.20260102-030435.gz
	// 0.log.20260102-030445
}
