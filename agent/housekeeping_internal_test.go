package agent

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/podlife/podlife/runtime"
)

// TestRunning: the running view housekeeping derives from a full listing is
// what GetPods(ctx, false) lists.
func TestRunning(t *testing.T) {
	c := func(id string, s runtime.ContainerState) *runtime.Container {
		return &runtime.Container{ID: runtime.ContainerID{Type: "t", ID: id}, State: s}
	}
	const (
		run  = runtime.ContainerStateRunning
		exit = runtime.ContainerStateExited
		made = runtime.ContainerStateCreated
	)
	allRunning := &runtime.Pod{ID: "a", Sandboxes: []*runtime.Container{c("a-sb", run)}, Containers: []*runtime.Container{c("a-1", run)}}
	mixed := &runtime.Pod{ID: "b", Sandboxes: []*runtime.Container{c("b-sb0", exit), c("b-sb1", run)},
		Containers: []*runtime.Container{c("b-1", exit), c("b-2", run), c("b-3", made)}}
	dead := &runtime.Pod{ID: "c", Sandboxes: []*runtime.Container{c("c-sb", exit)}, Containers: []*runtime.Container{c("c-1", exit)}}
	onlyContainer := &runtime.Pod{ID: "d", Sandboxes: []*runtime.Container{c("d-sb", exit)}, Containers: []*runtime.Container{c("d-1", run)}}
	empty := &runtime.Pod{ID: "e"}

	got := running([]*runtime.Pod{allRunning, mixed, dead, onlyContainer, empty})
	want := []*runtime.Pod{
		allRunning,
		{ID: "b", Sandboxes: []*runtime.Container{c("b-sb1", run)}, Containers: []*runtime.Container{c("b-2", run)}},
		{ID: "d", Sandboxes: []*runtime.Container{}, Containers: []*runtime.Container{c("d-1", run)}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("running (-want +got):\n%s", diff)
	}
	if got[0] != allRunning {
		t.Error("a pod that runs entirely was copied")
	}
	if len(mixed.Containers) != 3 || len(mixed.Sandboxes) != 2 {
		t.Error("the listing was modified")
	}
}
