package gc_test

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/agent/gc"
	"github.com/podlife/podlife/runtime"
)

// memRuntime is a runtime of an agent without CRI: its objects in memory.
type memRuntime struct{ pods []*runtime.Pod }

func (r *memRuntime) GetPods(context.Context, bool) ([]*runtime.Pod, error) { return r.pods, nil }

func (r *memRuntime) RemoveContainer(_ context.Context, id string) error {
	fmt.Println("remove container", id)
	return nil
}

func (r *memRuntime) RemoveSandbox(_ context.Context, id string) error {
	fmt.Println("remove sandbox", id)
	return nil
}

func (r *memRuntime) KillContainer(context.Context, runtime.ContainerID, int64) error { return nil }

// livePods: every pod runs (as pod workers would answer for pods they
// sync).
type livePods struct{}

func (livePods) ShouldPodContentBeRemoved(types.UID) bool        { return false }
func (livePods) ShouldPodRuntimeBeRemoved(types.UID) bool        { return false }
func (livePods) ShouldPodContainersBeTerminating(types.UID) bool { return false }
func (livePods) IsPodKnownTerminated(types.UID) bool             { return false }
func (livePods) CouldHaveRunningContainers(types.UID) bool       { return true }

// A pod whose container crashed three times: the kubelet's policy keeps
// its newest dead instance (for kubectl logs --previous) and its newest
// sandbox; the older ones go.
func Example() {
	t := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := func(id string, attempt uint32, state runtime.ContainerState) *runtime.Container {
		return &runtime.Container{ID: runtime.ContainerID{Type: "mem", ID: id}, Name: "app", State: state,
			Attempt: attempt, CreatedAt: t.Add(time.Duration(attempt) * time.Minute), SandboxID: "sb1"}
	}
	rt := &memRuntime{pods: []*runtime.Pod{{ID: "uid-1", Name: "web", Namespace: "default",
		Sandboxes: []*runtime.Container{
			{ID: runtime.ContainerID{ID: "sb0"}, State: runtime.ContainerStateExited, CreatedAt: t},
			{ID: runtime.ContainerID{ID: "sb1"}, State: runtime.ContainerStateRunning, CreatedAt: t, Attempt: 1},
		},
		Containers: []*runtime.Container{
			c("app-0", 0, runtime.ContainerStateExited),
			c("app-1", 1, runtime.ContainerStateExited),
			c("app-2", 2, runtime.ContainerStateExited),
			c("app-3", 3, runtime.ContainerStateRunning),
		},
	}}}
	m, err := gc.New(gc.Options{Runtime: rt, Pods: livePods{}})
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := m.GarbageCollect(context.Background())
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("removed %d containers, %d sandboxes\n", res.Containers, res.Sandboxes)
	// Output:
	// remove container app-1
	// remove container app-0
	// remove sandbox sb0
	// removed 2 containers, 1 sandboxes
}
