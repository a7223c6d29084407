package podstatus

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/runtime"
)

// TestTerminalSeedRule: a pod terminated before its init containers all ran
// reports neither its regular containers nor its init containers that were
// never attempted as failed or ContainerStatusUnknown.
func TestTerminalSeedRule(t *testing.T) {
	pod := newPod([]string{"app", "log"}, withInit("i1", "i2", "i3"))
	for _, tc := range []struct {
		name string
		rt   *runtime.PodStatus
		prev func() *v1.PodStatus
		want map[string]string
	}{
		{"terminated before anything ran", nil, nil, map[string]string{
			"i1": "waiting:PodInitializing", "i2": "waiting:PodInitializing", "i3": "waiting:PodInitializing",
			"app": "waiting:PodInitializing", "log": "waiting:PodInitializing"}},
		{"terminated while the first init container ran", sandboxed(running("i1", 1)), nil, map[string]string{
			"i1": "terminated:ContainerStatusUnknown:137", "i2": "waiting:PodInitializing", "i3": "waiting:PodInitializing",
			"app": "waiting:PodInitializing", "log": "waiting:PodInitializing"}},
		{"terminated after the second failed", sandboxed(exited("i1", 0, 1), exited("i2", 1, 2)), nil, map[string]string{
			"i1": "terminated:Completed:0", "i2": "terminated:Error:1", "i3": "waiting:PodInitializing",
			"app": "waiting:PodInitializing", "log": "waiting:PodInitializing"}},
		{"terminated while the second was in back-off", sandboxed(exited("i1", 0, 1), exited("i2", 1, 2)), func() *v1.PodStatus {
			p := Generate(Input{Pod: pod, Runtime: sandboxed(exited("i1", 0, 1), exited("i2", 1, 2)), BackOff: map[string]string{"i2": "back-off"}, Now: sec(3)})
			return &p
		}, map[string]string{
			"i1": "terminated:Completed:0", "i2": "terminated:Error:1", "i3": "waiting:PodInitializing",
			"app": "waiting:PodInitializing", "log": "waiting:PodInitializing"}},
		{"terminated once initialized", sandboxed(exited("i1", 0, 1), exited("i2", 0, 2), exited("i3", 0, 3), running("app", 4)), nil, map[string]string{
			"i1": "terminated:Completed:0", "i2": "terminated:Completed:0", "i3": "terminated:Completed:0",
			"app": "terminated:ContainerStatusUnknown:137", "log": "terminated:ContainerStatusUnknown:137"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := Input{Pod: pod, Runtime: tc.rt, Terminal: true, Now: sec(10)}
			if tc.prev != nil {
				in.Previous = tc.prev()
			}
			got := Generate(in)
			if got.Phase != v1.PodFailed {
				t.Errorf("phase %s, want Failed", got.Phase)
			}
			all := append(append([]v1.ContainerStatus{}, got.InitContainerStatuses...), got.ContainerStatuses...)
			for name, want := range tc.want {
				if s := stateOf(status(all, name).State); s != want {
					t.Errorf("%s: %s, want %s", name, s, want)
				}
			}
			for _, cs := range got.ContainerStatuses {
				if cs.Ready {
					t.Errorf("%s ready in a terminated pod", cs.Name)
				}
			}
		})
	}
}

func TestTerminalNotRunningPod(t *testing.T) {
	// Not Terminal: the same statuses never become ContainerStatusUnknown.
	pod := newPod([]string{"app"}, withInit("i1"))
	got := Generate(Input{Pod: pod, Runtime: sandboxed(running("i1", 1)), Now: sec(5)})
	if s := stateOf(status(got.ContainerStatuses, "app").State); s != "waiting:PodInitializing" {
		t.Errorf("app: %s", s)
	}
	if got.Phase != v1.PodPending {
		t.Errorf("phase %s", got.Phase)
	}
}
