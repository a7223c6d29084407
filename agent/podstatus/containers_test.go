package podstatus

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/runtime"
)

func TestContainerStatusFields(t *testing.T) {
	pod := newPod([]string{"b", "a"})
	a := running("a", 3)
	got := Generate(Input{Pod: pod, Runtime: sandboxed(a), Now: sec(10)})
	if len(got.ContainerStatuses) != 2 || got.ContainerStatuses[0].Name != "a" || got.ContainerStatuses[1].Name != "b" {
		t.Fatalf("statuses not sorted by name: %+v", got.ContainerStatuses)
	}
	cs := got.ContainerStatuses[0]
	if cs.ContainerID != "fakecri://a-0" || cs.ImageID != "sha256:a" || cs.Image != "img-a" {
		t.Errorf("ids: %q %q %q", cs.ContainerID, cs.ImageID, cs.Image)
	}
	if cs.State.Running == nil || !cs.State.Running.StartedAt.Time.Equal(sec(3)) {
		t.Errorf("state %+v", cs.State)
	}
	if cs.Started == nil || !*cs.Started || !cs.Ready {
		t.Errorf("running container without probes: started %v ready %v", cs.Started, cs.Ready)
	}
	if b := got.ContainerStatuses[1]; stateOf(b.State) != "waiting:ContainerCreating" || b.Ready || b.Image != "img-b" {
		t.Errorf("b: %s ready=%v image=%q", stateOf(b.State), b.Ready, b.Image)
	}
}

func TestTerminatedReasons(t *testing.T) {
	for _, tc := range []struct {
		name   string
		code   int
		reason string
		want   string
	}{
		{"success", 0, "", "terminated:Completed:0"},
		{"failure", 1, "", "terminated:Error:1"},
		{"oom", 137, "OOMKilled", "terminated:OOMKilled:137"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := exited("a", tc.code, 1)
			c.Reason, c.Message = tc.reason, "last words"
			got := Generate(Input{Pod: newPod([]string{"a"}, withPolicy(v1.RestartPolicyNever)), Runtime: sandboxed(c), Now: sec(5)})
			cs := got.ContainerStatuses[0]
			if stateOf(cs.State) != tc.want {
				t.Fatalf("state %s, want %s", stateOf(cs.State), tc.want)
			}
			term := cs.State.Terminated
			if term.Message != "last words" || term.ContainerID != "fakecri://a-0" ||
				!term.StartedAt.Time.Equal(sec(1)) || !term.FinishedAt.Time.Equal(sec(2)) {
				t.Errorf("terminated %+v", term)
			}
		})
	}
}

func TestTerminationMessageBounded(t *testing.T) {
	c := exited("a", 1, 1)
	c.Message = strings.Repeat("x", 20000)
	got := Generate(Input{Pod: newPod([]string{"a", "b"}), Runtime: sandboxed(c), Now: sec(5)})
	if n := len(status(got.ContainerStatuses, "a").State.Terminated.Message); n != 6*1024 {
		t.Errorf("message of %d bytes, want 6 KiB (12 KiB shared by 2 containers)", n)
	}
}

func TestLastStateAndRestartCount(t *testing.T) {
	pod := newPod([]string{"a"})
	oldest := exited("a", 2, 1)
	previous := restarted(exited("a", 1, 5), 1)
	newest := restarted(running("a", 9), 2)
	// Listed in no particular order: Generate sorts by creation.
	got := Generate(Input{Pod: pod, Runtime: sandboxed(previous, newest, oldest), Now: sec(10)})
	cs := got.ContainerStatuses[0]
	if cs.RestartCount != 2 || cs.ContainerID != "fakecri://a-2" || cs.State.Running == nil {
		t.Fatalf("newest instance not the state: restarts %d id %s state %s", cs.RestartCount, cs.ContainerID, stateOf(cs.State))
	}
	last := cs.LastTerminationState.Terminated
	if last == nil || last.ExitCode != 1 || last.ContainerID != "fakecri://a-1" {
		t.Fatalf("lastState %+v, want the second newest instance (exit 1)", cs.LastTerminationState)
	}
}

func TestCrashLoopBackOff(t *testing.T) {
	pod := newPod([]string{"a"})
	dead := restarted(exited("a", 1, 5), 3)
	msg := "back-off 40s restarting failed container=a pod=web_default(uid-1)"
	got := Generate(Input{Pod: pod, Runtime: sandboxed(dead), BackOff: map[string]string{"a": msg}, Now: sec(10)})
	cs := got.ContainerStatuses[0]
	if cs.State.Waiting == nil || cs.State.Waiting.Reason != ReasonCrashLoopBackOff || cs.State.Waiting.Message != msg {
		t.Fatalf("state %+v, want Waiting CrashLoopBackOff with the message", cs.State)
	}
	if l := cs.LastTerminationState.Terminated; l == nil || l.ExitCode != 1 || l.ContainerID != "fakecri://a-3" {
		t.Errorf("lastState %+v, want the crashed instance", cs.LastTerminationState)
	}
	if cs.RestartCount != 3 {
		t.Errorf("restartCount %d, want 3", cs.RestartCount)
	}
	if got.Phase != v1.PodRunning {
		t.Errorf("phase %s, want Running (restarting)", got.Phase)
	}

	// A container that will not restart (Never) shows its end, not a back-off.
	never := newPod([]string{"a"}, withPolicy(v1.RestartPolicyNever))
	got = Generate(Input{Pod: never, Runtime: sandboxed(dead), BackOff: map[string]string{"a": msg}, Now: sec(10)})
	if s := stateOf(got.ContainerStatuses[0].State); s != "terminated:Error:1" {
		t.Errorf("never: state %s", s)
	}
	// Nor does a running one, nor one of a pod being deleted.
	got = Generate(Input{Pod: pod, Runtime: sandboxed(running("a", 1)), BackOff: map[string]string{"a": msg}, Now: sec(10)})
	if s := stateOf(got.ContainerStatuses[0].State); s != "running" {
		t.Errorf("running: state %s", s)
	}
	deleting := pod.DeepCopy()
	deleting.DeletionTimestamp = &metav1.Time{Time: sec(8)}
	got = Generate(Input{Pod: deleting, Runtime: sandboxed(dead), BackOff: map[string]string{"a": msg}, Now: sec(10)})
	if s := stateOf(got.ContainerStatuses[0].State); s != "terminated:Error:1" {
		t.Errorf("deleting: state %s", s)
	}
	// Another start failure shows its own reason.
	got = Generate(Input{Pod: pod, Runtime: sandboxed(), Now: sec(10),
		StartFailures: map[string]v1.ContainerStateWaiting{"a": {Reason: "ErrImagePull", Message: "no such image"}}})
	if w := got.ContainerStatuses[0].State.Waiting; w == nil || w.Reason != "ErrImagePull" || w.Message != "no such image" {
		t.Errorf("start failure: %+v", got.ContainerStatuses[0].State)
	}
}

func TestPreviousStatusCarriedOver(t *testing.T) {
	pod := newPod([]string{"a"})
	// a ran (previous status) and the runtime lost it: it stopped, it did
	// not "never run".
	prev := Generate(Input{Pod: pod, Runtime: sandboxed(restarted(running("a", 1), 2)), Now: sec(2)})
	got := Generate(Input{Pod: pod, Runtime: sandboxed(), Previous: &prev, Now: sec(5)})
	cs := got.ContainerStatuses[0]
	if l := cs.LastTerminationState.Terminated; l == nil || l.Reason != ReasonStatusUnknown || l.ExitCode != ExitCodeUnknown {
		t.Fatalf("lastState %+v, want ContainerStatusUnknown 137", cs.LastTerminationState)
	}
	if cs.RestartCount != 3 {
		t.Errorf("restartCount %d, want 3 (one more than before)", cs.RestartCount)
	}
	if got.Phase != v1.PodRunning {
		t.Errorf("phase %s, want Running (not back to Pending)", got.Phase)
	}

	// Unknown state after running: terminated, unknown.
	u := instance("a", runtime.ContainerStateUnknown, 1, 2)
	got = Generate(Input{Pod: pod, Runtime: sandboxed(u), Previous: &prev, Now: sec(5)})
	if s := stateOf(got.ContainerStatuses[0].State); s != "terminated:ContainerStatusUnknown:137" {
		t.Errorf("unknown after running: %s", s)
	}

	// A terminated container gone from the runtime keeps its last status.
	done := Generate(Input{Pod: newPod([]string{"a"}, withPolicy(v1.RestartPolicyNever)), Runtime: sandboxed(exited("a", 0, 1)), Now: sec(3)})
	got = Generate(Input{Pod: newPod([]string{"a"}, withPolicy(v1.RestartPolicyNever)), Runtime: sandboxed(), Previous: &done, Now: sec(5)})
	if s := stateOf(got.ContainerStatuses[0].State); s != "terminated:Completed:0" {
		t.Errorf("terminated then removed: %s", s)
	}
}

func TestInitContainerStatuses(t *testing.T) {
	pod := newPod([]string{"app"}, withInit("i1", "i2"), withSidecar("side"))
	for _, tc := range []struct {
		name string
		rt   *runtime.PodStatus
		want map[string]string // container -> stateOf
		init bool              // Initialized condition
	}{
		{"nothing yet", nil,
			map[string]string{"i1": "waiting:PodInitializing", "i2": "waiting:PodInitializing", "side": "waiting:PodInitializing", "app": "waiting:PodInitializing"}, false},
		{"first init running", sandboxed(running("i1", 1)),
			map[string]string{"i1": "running", "i2": "waiting:PodInitializing", "side": "waiting:PodInitializing", "app": "waiting:PodInitializing"}, false},
		{"first init failed, restarting", sandboxed(exited("i1", 1, 1)),
			map[string]string{"i1": "terminated:Error:1", "i2": "waiting:PodInitializing", "side": "waiting:PodInitializing", "app": "waiting:PodInitializing"}, false},
		{"inits done, sidecar running", sandboxed(exited("i1", 0, 1), exited("i2", 0, 2), running("side", 3)),
			map[string]string{"i1": "terminated:Completed:0", "i2": "terminated:Completed:0", "side": "running", "app": "waiting:PodInitializing"}, true},
		{"all running", sandboxed(exited("i1", 0, 1), exited("i2", 0, 2), running("side", 3), running("app", 4)),
			map[string]string{"i1": "terminated:Completed:0", "i2": "terminated:Completed:0", "side": "running", "app": "running"}, true},
		{"init instances removed after the app started", sandboxed(running("side", 3), running("app", 4)),
			map[string]string{"i1": "terminated:Completed:0", "i2": "terminated:Completed:0", "side": "running", "app": "running"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Generate(Input{Pod: pod, Runtime: tc.rt, Now: sec(10)})
			if len(got.InitContainerStatuses) != 3 || got.InitContainerStatuses[0].Name != "i1" ||
				got.InitContainerStatuses[1].Name != "i2" || got.InitContainerStatuses[2].Name != "side" {
				t.Fatalf("init statuses not in spec order: %+v", got.InitContainerStatuses)
			}
			all := append(append([]v1.ContainerStatus{}, got.InitContainerStatuses...), got.ContainerStatuses...)
			for name, want := range tc.want {
				if s := stateOf(status(all, name).State); s != want {
					t.Errorf("%s: %s, want %s", name, s, want)
				}
			}
			if c := condition(got, v1.PodInitialized); (c.Status == v1.ConditionTrue) != tc.init {
				t.Errorf("Initialized %s (%s), want %v", c.Status, c.Message, tc.init)
			}
			if got.Phase != v1.PodPending && !tc.init {
				t.Errorf("phase %s while initializing", got.Phase)
			}
		})
	}
}

func TestInitContainerReadyAndStarted(t *testing.T) {
	pod := newPod([]string{"app"}, withInit("i1"), withSidecar("side"))
	got := Generate(Input{Pod: pod, Runtime: sandboxed(exited("i1", 0, 1), running("side", 2)), Now: sec(5)})
	i1, side := status(got.InitContainerStatuses, "i1"), status(got.InitContainerStatuses, "side")
	if !i1.Ready || i1.Started == nil || *i1.Started {
		t.Errorf("succeeded init container: ready %v started %v, want ready and not started", i1.Ready, i1.Started)
	}
	if !side.Ready || side.Started == nil || !*side.Started {
		t.Errorf("running sidecar without probes: ready %v started %v", side.Ready, side.Started)
	}
}

// probes is a ProbeResultFunc over a fixed table keyed by container ID and
// probe.
type probes map[string]bool

func (p probes) result(_ types.UID, _, id string, pt ProbeType) (bool, bool) {
	ok, known := p[id+"/"+string(pt)]
	return ok, known
}

func TestProbes(t *testing.T) {
	withProbes := func(startup, readiness bool) func(*v1.Pod) {
		return func(p *v1.Pod) {
			if startup {
				p.Spec.Containers[0].StartupProbe = &v1.Probe{}
			}
			if readiness {
				p.Spec.Containers[0].ReadinessProbe = &v1.Probe{}
			}
		}
	}
	for _, tc := range []struct {
		name             string
		startup, readies bool
		results          probes
		wantStarted      bool
		wantReady        bool
	}{
		{"no probes", false, false, nil, true, true},
		{"readiness, no result yet", false, true, nil, true, false},
		{"readiness passed", false, true, probes{"fakecri://a-0/readiness": true}, true, true},
		{"readiness failed", false, true, probes{"fakecri://a-0/readiness": false}, true, false},
		{"readiness passed for an older instance", false, true, probes{"fakecri://a-9/readiness": true}, true, false},
		{"startup, no result yet", true, false, nil, false, false},
		{"startup passed", true, false, probes{"fakecri://a-0/startup": true}, true, true},
		{"startup passed, readiness pending", true, true, probes{"fakecri://a-0/startup": true}, true, false},
		{"readiness passed, startup pending", true, true, probes{"fakecri://a-0/readiness": true}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := newPod([]string{"a"}, withProbes(tc.startup, tc.readies))
			results := tc.results
			if results == nil {
				results = probes{}
			}
			got := Generate(Input{Pod: pod, Runtime: sandboxed(running("a", 1)), ProbeResult: results.result, Now: sec(5)})
			cs := got.ContainerStatuses[0]
			if cs.Started == nil || *cs.Started != tc.wantStarted || cs.Ready != tc.wantReady {
				t.Errorf("started %v ready %v, want %v %v", cs.Started, cs.Ready, tc.wantStarted, tc.wantReady)
			}
			if c := condition(got, v1.PodReady); (c.Status == v1.ConditionTrue) != tc.wantReady {
				t.Errorf("Ready condition %s, want %v", c.Status, tc.wantReady)
			}
		})
	}

	// Started stays once seen for the same instance (the startup probe stops
	// reporting after success), not for its successor.
	pod := newPod([]string{"a"}, withProbes(true, false))
	prev := Generate(Input{Pod: pod, Runtime: sandboxed(running("a", 1)), ProbeResult: probes{"fakecri://a-0/startup": true}.result, Now: sec(5)})
	got := Generate(Input{Pod: pod, Runtime: sandboxed(running("a", 1)), Previous: &prev, ProbeResult: probes{}.result, Now: sec(6)})
	if s := got.ContainerStatuses[0].Started; s == nil || !*s {
		t.Errorf("same instance lost its started flag")
	}
	got = Generate(Input{Pod: pod, Runtime: sandboxed(restarted(running("a", 7), 1)), Previous: &prev, ProbeResult: probes{}.result, Now: sec(8)})
	if s := got.ContainerStatuses[0].Started; s == nil || *s {
		t.Errorf("a new instance inherited started")
	}

	// No prober (nil ProbeResult): probes gate nothing.
	pod = newPod([]string{"a"}, withProbes(true, true))
	got = Generate(Input{Pod: pod, Runtime: sandboxed(running("a", 1)), Now: sec(5)})
	if cs := got.ContainerStatuses[0]; cs.Started == nil || !*cs.Started || !cs.Ready {
		t.Errorf("without a prober: started %v ready %v, want both", cs.Started, cs.Ready)
	}
}

// withEphemeral adds ephemeral containers (kubectl debug's).
func withEphemeral(names ...string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		for _, n := range names {
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, v1.EphemeralContainer{
				EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: n, Image: "img-" + n}, TargetContainerName: "a"})
		}
	}
}

// Ephemeral containers get statuses as the kubelet writes them: sorted by
// name, Waiting ContainerCreating before their start (or the start's
// failure), Running, Terminated with the exit code and reason, image,
// imageID and containerID; never started nor ready, and no restart count.
func TestEphemeralContainerStatuses(t *testing.T) {
	pod := newPod([]string{"a"}, withEphemeral("zz", "debug", "gone", "failing"))
	done := exited("gone", 2, 4)
	got := Generate(Input{Pod: pod, Runtime: sandboxed(running("a", 1), running("debug", 3), done), Now: sec(10),
		StartFailures: map[string]v1.ContainerStateWaiting{
			"failing": {Reason: "ErrImagePull", Message: "no such image"},
			"gone":    {Reason: "RunContainerError", Message: "an old failure"}}})
	var names []string
	for _, cs := range got.EphemeralContainerStatuses {
		names = append(names, cs.Name)
		if cs.Started != nil || cs.Ready || cs.RestartCount != 0 {
			t.Errorf("%s: started %v ready %v restarts %d", cs.Name, cs.Started, cs.Ready, cs.RestartCount)
		}
	}
	if strings.Join(names, ",") != "debug,failing,gone,zz" {
		t.Fatalf("ephemeral statuses %v, want sorted by name", names)
	}
	debug := status(got.EphemeralContainerStatuses, "debug")
	if stateOf(debug.State) != "running" || debug.ContainerID != "fakecri://debug-0" || debug.ImageID != "sha256:debug" || debug.Image != "img-debug" {
		t.Errorf("debug: %s %q %q %q", stateOf(debug.State), debug.ContainerID, debug.ImageID, debug.Image)
	}
	if gone := status(got.EphemeralContainerStatuses, "gone"); stateOf(gone.State) != "terminated:Error:2" || gone.State.Terminated.ContainerID != "fakecri://gone-0" {
		t.Errorf("gone: %s, %+v (an exited one is never to start again: no old start failure over it)", stateOf(gone.State), gone.State.Terminated)
	}
	if f := status(got.EphemeralContainerStatuses, "failing"); stateOf(f.State) != "waiting:ErrImagePull" || f.State.Waiting.Message != "no such image" || f.Image != "img-failing" {
		t.Errorf("failing: %s %+v", stateOf(f.State), f.State.Waiting)
	}
	if zz := status(got.EphemeralContainerStatuses, "zz"); stateOf(zz.State) != "waiting:ContainerCreating" {
		t.Errorf("zz: %s", stateOf(zz.State))
	}
	// They count for neither the phase nor readiness.
	if got.Phase != v1.PodRunning || condition(got, v1.PodReady).Status != v1.ConditionTrue || condition(got, v1.ContainersReady).Status != v1.ConditionTrue {
		t.Errorf("phase %s, Ready %s, ContainersReady %s; want Running, True, True", got.Phase, condition(got, v1.PodReady).Status, condition(got, v1.ContainersReady).Status)
	}
}

// A pod whose regular containers are done is Succeeded or Failed even while
// an ephemeral container runs (RestartPolicy Never); with Terminal the
// ephemeral statuses are left as the runtime shows them.
func TestEphemeralContainerDoesNotHoldCompletion(t *testing.T) {
	pod := newPod([]string{"a"}, withPolicy(v1.RestartPolicyNever), withEphemeral("debug"))
	rt := sandboxed(exited("a", 0, 1), running("debug", 3))
	got := Generate(Input{Pod: pod, Runtime: rt, Now: sec(10)})
	if got.Phase != v1.PodSucceeded {
		t.Errorf("phase %s with a running debugger, want Succeeded", got.Phase)
	}
	if d := status(got.EphemeralContainerStatuses, "debug"); stateOf(d.State) != "running" {
		t.Errorf("debug: %s", stateOf(d.State))
	}
	killed := exited("debug", 137, 3)
	got = Generate(Input{Pod: pod, Runtime: sandboxed(exited("a", 0, 1), killed), Previous: &got, Terminal: true, Now: sec(20)})
	if d := status(got.EphemeralContainerStatuses, "debug"); got.Phase != v1.PodSucceeded || stateOf(d.State) != "terminated:Error:137" {
		t.Errorf("terminal: phase %s, debug %s", got.Phase, stateOf(d.State))
	}
}

// An ephemeral container that ran and that the runtime lost is not
// counted as restarted (it never is); the termination message budget is
// shared with ephemeral containers too, as the kubelet shares it.
func TestEphemeralContainerLostAndMessages(t *testing.T) {
	pod := newPod([]string{"a"}, withEphemeral("debug"))
	prev := Generate(Input{Pod: pod, Runtime: sandboxed(running("a", 1), running("debug", 3)), Now: sec(5)})
	lost := instance("debug", runtime.ContainerStateUnknown, 3, 0)
	for _, rt := range []*runtime.PodStatus{sandboxed(running("a", 1)), sandboxed(running("a", 1), lost)} {
		got := Generate(Input{Pod: pod, Runtime: rt, Previous: &prev, Now: sec(10)})
		if d := status(got.EphemeralContainerStatuses, "debug"); d.RestartCount != 0 {
			t.Errorf("lost debugger (%d instances): restart count %d", len(rt.ContainerStatuses), d.RestartCount)
		}
	}
	c := exited("a", 1, 1)
	c.Message = strings.Repeat("x", 20000)
	got := Generate(Input{Pod: pod, Runtime: sandboxed(c), Now: sec(5)})
	if n := len(status(got.ContainerStatuses, "a").State.Terminated.Message); n != 6*1024 {
		t.Errorf("message of %d bytes, want 6 KiB (12 KiB shared by a container and an ephemeral one)", n)
	}
}
