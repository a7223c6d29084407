package cri_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podlife/podlife/runtime/cri"
	"github.com/podlife/podlife/runtime/fakecri"
)

// Runtime over a unix socket; here fakecri serves it, in production it is
// containerd's or CRI-O's socket.
func ExampleRuntime() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	srv := fakecri.New(fakecri.Options{})
	endpoint, err := srv.StartUnix(filepath.Join(dir, "cri.sock"))
	if err != nil {
		panic(err)
	}
	defer srv.Stop()

	rt, err := cri.New(cri.Options{Endpoint: endpoint, VolumeRoot: filepath.Join(dir, "volumes")})
	if err != nil {
		panic(err)
	}
	defer rt.Close()
	ctx := context.Background()

	v, _ := rt.Version(ctx)
	fmt.Println("runtime:", v.RuntimeName, "CRI", v.APIVersion)

	grace := int64(5)
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "job", Namespace: "default", UID: "uid-2"},
		Spec: v1.PodSpec{
			RestartPolicy:                 v1.RestartPolicyOnFailure,
			TerminationGracePeriodSeconds: &grace,
			Containers:                    []v1.Container{{Name: "work", Image: "busybox", Args: []string{"exit", "0"}}},
		},
	}
	if err := rt.SyncPod(ctx, pod, nil); err != nil {
		panic(err)
	}
	st, _ := rt.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	c := st.FindContainerStatusByName("work")
	fmt.Println("work:", c.State, "exit code", c.ExitCode)

	// OnFailure and exit 0: the next sync does not restart it.
	_ = rt.SyncPod(ctx, pod, st)
	st, _ = rt.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	fmt.Println("restarts:", st.FindContainerStatusByName("work").RestartCount)
	// Output:
	// runtime: fakecri CRI v1
	// work: exited exit code 0
	// restarts: 0
}
