package fakecri_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	"google.golang.org/grpc/codes"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podlife/podlife/runtime"
	"github.com/podlife/podlife/runtime/cri"
	"github.com/podlife/podlife/runtime/fakecri"
)

// A fake CRI runtime in memory, driven through the real CRI adapter, with a
// fault injected along the way.
func Example() {
	srv := fakecri.New(fakecri.Options{})
	if err := srv.StartInMemory(); err != nil {
		panic(err)
	}
	defer srv.Stop()

	volumes, _ := os.MkdirTemp("", "volumes") // the pods' termination-message files and logs
	defer os.RemoveAll(volumes)
	rt, err := cri.New(cri.Options{Dialer: srv.DialContext, VolumeRoot: volumes})
	if err != nil {
		panic(err)
	}
	defer rt.Close()
	ctx := context.Background()

	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1"},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "nginx", Image: "nginx:1.27"}}},
	}

	srv.FailNext("RunPodSandbox", codes.Unavailable)
	err = rt.SyncPod(ctx, pod, nil)
	fmt.Println("first sync unavailable:", errors.Is(err, runtime.ErrUnavailable))

	if err := rt.SyncPod(ctx, pod, nil); err != nil {
		panic(err)
	}
	pods, _ := rt.GetPods(ctx, false)
	for _, p := range pods {
		fmt.Printf("running: %s, %d container(s), image pulled: %v\n", p.FullName(), len(p.Containers), srv.HasImage("nginx:1.27"))
	}

	if err := rt.KillPod(ctx, pod, nil, nil); err != nil {
		panic(err)
	}
	st, _ := rt.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	fmt.Println("terminal after kill:", st.IsTerminal())

	if err := rt.RemovePod(ctx, &runtime.Pod{ID: pod.UID}); err != nil {
		panic(err)
	}
	sandboxes, containers := srv.Counts()
	fmt.Println("left:", sandboxes, "sandboxes,", containers, "containers")
	// Output:
	// first sync unavailable: true
	// running: web_default, 1 container(s), image pulled: true
	// terminal after kill: true
	// left: 0 sandboxes, 0 containers
}
