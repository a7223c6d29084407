package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podlife/podlife/runtime"
	"github.com/podlife/podlife/runtime/cri"
	"github.com/podlife/podlife/runtime/fakecri"
)

// A Relister keeps a Cache filled from a Runtime and reports what changed.
func ExampleRelister() {
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

	cache := runtime.NewCache()
	rel, err := runtime.NewRelister(runtime.RelisterOptions{
		Runtime: rt,
		Cache:   cache,
		OnEvent: func(e runtime.PodEvent) {
			if e.ContainerID != "" {
				e.ContainerID = "…" // runtime IDs are random
			}
			fmt.Printf("event: %s %s\n", e.ID, e.Type)
		},
	})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1"},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: "app:1"}}},
	}
	before := time.Now()
	if err := rt.SyncPod(ctx, pod, nil); err != nil {
		panic(err)
	}
	if err := rel.ForceRefresh(ctx); err != nil { // Run(ctx) does this a second after each relist
		panic(err)
	}
	st, err := cache.GetNewerThan(ctx, pod.UID, before)
	if err != nil {
		panic(err)
	}
	fmt.Println("cached:", st.FindContainerStatusByName("app").State)
	// Output:
	// event: uid-1 ContainerStarted
	// event: uid-1 ContainerStarted
	// cached: running
}

// StartFailures finds, in the joined error of a sync, why each container
// could not start, with the reason and message its status shows; errors.Is
// classifies them.
func ExampleStartFailures() {
	err := errors.Join(
		fmt.Errorf("container %q: %w", "web", &runtime.StartError{Container: "web", Reason: runtime.ErrImagePullBackOff,
			Message: `Back-off pulling image "web:1": ErrImagePull: not found`}),
		fmt.Errorf("container %q: %w", "app", &runtime.StartError{Container: "app", Reason: runtime.ErrCreateContainerConfig,
			Message: `configmap "settings" not found`, Err: runtime.ErrFailedPrecondition}),
	)
	failures := runtime.StartFailures(err)
	for _, name := range []string{"app", "web"} {
		fmt.Printf("%s: %s: %s\n", name, failures[name].ReasonText(), failures[name].Message)
	}
	fmt.Println(errors.Is(err, runtime.ErrImagePullBackOff), runtime.IsRetryable(err), errors.Is(err, runtime.ErrFailedPrecondition))
	// Output:
	// app: CreateContainerConfigError: configmap "settings" not found
	// web: ImagePullBackOff: Back-off pulling image "web:1": ErrImagePull: not found
	// true true true
}
