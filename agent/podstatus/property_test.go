package podstatus

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/runtime"
)

// bits draws choices from fuzz input (zeros once it runs out).
type bits struct {
	data []byte
	rnd  *rand.Rand
}

func (b *bits) n(max int) int {
	if b.rnd != nil {
		return b.rnd.IntN(max)
	}
	if len(b.data) == 0 {
		return 0
	}
	v := int(b.data[0])
	b.data = b.data[1:]
	return v % max
}

func (b *bits) yes() bool { return b.n(2) == 1 }

// scenario is one random pod, runtime view and set of inputs.
type scenario struct {
	pod      *v1.Pod
	rt       *runtime.PodStatus
	terminal bool
	backOff  map[string]string
	probes   map[string]bool
	noProber bool
}

func randomScenario(b *bits) scenario {
	policies := []v1.RestartPolicy{v1.RestartPolicyAlways, v1.RestartPolicyOnFailure, v1.RestartPolicyNever}
	opts := []func(*v1.Pod){withPolicy(policies[b.n(3)])}
	nInit := b.n(4)
	for i := 0; i < nInit; i++ {
		name := fmt.Sprintf("i%d", i)
		if b.n(3) == 0 {
			opts = append(opts, withSidecar(name))
		} else {
			opts = append(opts, withInit(name))
		}
	}
	var regular []string
	for i := 0; i <= b.n(3); i++ {
		regular = append(regular, fmt.Sprintf("c%d", i))
	}
	pod := newPod(regular, opts...)
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if b.n(4) == 0 {
				list[i].ReadinessProbe = &v1.Probe{}
			}
			if b.n(4) == 0 {
				list[i].StartupProbe = &v1.Probe{}
			}
		}
	}
	s := scenario{pod: pod, terminal: b.n(4) == 0, backOff: map[string]string{}, probes: map[string]bool{}, noProber: b.n(4) == 0}
	// Ephemeral containers, drawn last so that they leave the other
	// choices of a seed as they were.
	addEphemeral := func() {
		for i := range b.n(3) {
			pod.Spec.EphemeralContainers = append(pod.Spec.EphemeralContainers, v1.EphemeralContainer{
				EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: fmt.Sprintf("e%d", i), Image: fmt.Sprintf("img-e%d", i)}})
		}
	}
	if b.n(5) == 0 {
		addEphemeral()
		return s // nothing in the runtime
	}
	s.rt = sandboxed()
	if b.n(4) == 0 {
		s.rt.SandboxStatuses[0].State = runtime.SandboxStateNotReady
	}
	states := []runtime.ContainerState{runtime.ContainerStateRunning, runtime.ContainerStateExited, runtime.ContainerStateCreated, runtime.ContainerStateUnknown}
	at := 1
	add := func(name string) {
		for r := 0; r <= b.n(3); r++ {
			c := instance(name, states[b.n(4)], at, r)
			if c.State == runtime.ContainerStateExited {
				c.ExitCode = []int{0, 1, 137}[b.n(3)]
			}
			at++
			s.rt.ContainerStatuses = append(s.rt.ContainerStatuses, c)
			if b.yes() {
				s.probes[c.ID.String()+"/"+string(Readiness)] = b.yes()
			}
			if b.yes() {
				s.probes[c.ID.String()+"/"+string(Startup)] = b.yes()
			}
		}
		if b.n(3) == 0 {
			s.backOff[name] = "back-off"
		}
	}
	// Init containers in order; the regular ones only if the walk got
	// through them (or at random, a pod that initialized before).
	progressed := true
	for i := range pod.Spec.InitContainers {
		if !progressed || b.n(4) == 0 {
			progressed = false
			break
		}
		add(pod.Spec.InitContainers[i].Name)
	}
	if progressed || b.n(6) == 0 {
		for i := range pod.Spec.Containers {
			if b.n(5) != 0 {
				add(pod.Spec.Containers[i].Name)
			}
		}
	}
	addEphemeral()
	for i := range pod.Spec.EphemeralContainers {
		if b.n(3) != 0 {
			c := instance(pod.Spec.EphemeralContainers[i].Name, states[b.n(4)], at, 0)
			if c.State == runtime.ContainerStateExited {
				c.ExitCode = []int{0, 1, 137}[b.n(3)]
			}
			at++
			s.rt.ContainerStatuses = append(s.rt.ContainerStatuses, c)
		}
	}
	slices.Reverse(s.rt.ContainerStatuses) // any order
	return s
}

func (s scenario) input(prev *v1.PodStatus, now int) Input {
	probes := s.probes
	in := Input{
		Pod: s.pod, Runtime: s.rt, Previous: prev, Terminal: s.terminal, BackOff: s.backOff, Now: sec(now),
		NodeIPs: []string{"192.168.1.2"},
		ProbeResult: func(_ types.UID, _, id string, p ProbeType) (bool, bool) {
			ok, known := probes[id+"/"+string(p)]
			return ok, known
		},
	}
	if s.noProber {
		in.ProbeResult = nil
	}
	return in
}

// checkInvariants checks one generated status against its input.
func checkInvariants(t *testing.T, in Input, got v1.PodStatus) {
	t.Helper()
	pod := in.Pod
	rt := in.Runtime
	if rt == nil {
		rt = &runtime.PodStatus{}
	}
	inst := instancesByName(rt)
	newestRunning := func(name string) bool {
		l := inst[name]
		return len(l) > 0 && l[0].State == runtime.ContainerStateRunning
	}
	all := append(append([]v1.ContainerStatus{}, got.InitContainerStatuses...), got.ContainerStatuses...)

	// One status per spec container; regular ones sorted by name.
	if len(got.ContainerStatuses) != len(pod.Spec.Containers) || len(got.InitContainerStatuses) != len(pod.Spec.InitContainers) {
		t.Fatalf("%d/%d statuses for %d/%d containers", len(got.ContainerStatuses), len(got.InitContainerStatuses), len(pod.Spec.Containers), len(pod.Spec.InitContainers))
	}
	if !slices.IsSortedFunc(got.ContainerStatuses, func(a, b v1.ContainerStatus) int { return cmpString(a.Name, b.Name) }) {
		t.Errorf("container statuses not sorted")
	}

	// The API server accepts at most one state in each, and a current one.
	for _, cs := range all {
		if n := states(cs.State); n != 1 {
			t.Errorf("%s: %d states in state", cs.Name, n)
		}
		if n := states(cs.LastTerminationState); n > 1 {
			t.Errorf("%s: %d states in lastState", cs.Name, n)
		}
	}

	// Never a terminal phase while not terminal and a regular container
	// runs (unless an init container failed for good).
	failedInit := false
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		st := status(got.InitContainerStatuses, c.Name)
		end := st.State.Terminated
		if end == nil && st.State.Waiting != nil {
			end = st.LastTerminationState.Terminated
		}
		if !isSidecar(c) && end != nil && end.ExitCode != 0 && !shouldRestart(c, &pod.Spec, end.ExitCode) {
			failedInit = true
		}
	}
	anyRegularRunning := false
	for i := range pod.Spec.Containers {
		anyRegularRunning = anyRegularRunning || newestRunning(pod.Spec.Containers[i].Name)
	}
	prevTerminal := in.Previous != nil && isTerminal(in.Previous.Phase)
	if !in.Terminal && anyRegularRunning && !failedInit && !prevTerminal && isTerminal(got.Phase) {
		t.Errorf("phase %s while a regular container runs", got.Phase)
	}

	// Terminal: a terminal phase and nothing running or ready.
	if in.Terminal {
		if !isTerminal(got.Phase) {
			t.Errorf("terminal pod in phase %s", got.Phase)
		}
		for _, cs := range all {
			if cs.State.Running != nil {
				t.Errorf("terminal pod with %s running", cs.Name)
			}
		}
		for _, cs := range got.ContainerStatuses {
			if cs.Ready {
				t.Errorf("terminal pod with %s ready", cs.Name)
			}
		}
	}

	// The seed's rule: no regular container ever ran → none is reported
	// failed or unknown (nor running); init containers after the last one
	// attempted neither.
	regularEverRan := false
	for i := range pod.Spec.Containers {
		regularEverRan = regularEverRan || len(inst[pod.Spec.Containers[i].Name]) > 0
	}
	prevShowsRun := in.Previous != nil && initialized(pod, in.Previous)
	lastInitDone := false
	if n := len(pod.Spec.InitContainers); n > 0 {
		last := &pod.Spec.InitContainers[n-1]
		for _, c := range inst[last.Name] {
			lastInitDone = lastInitDone || (isSidecar(last) && c.State == runtime.ContainerStateRunning) ||
				(!isSidecar(last) && c.State == runtime.ContainerStateExited && c.ExitCode == 0)
		}
	}
	if len(pod.Spec.InitContainers) > 0 && !regularEverRan && !prevShowsRun && !lastInitDone {
		for _, cs := range got.ContainerStatuses {
			if cs.State.Waiting == nil {
				t.Errorf("uninitialized pod: regular container %s is %s", cs.Name, stateOf(cs.State))
			}
		}
		lastAttempted := -1
		for i := range pod.Spec.InitContainers {
			if len(inst[pod.Spec.InitContainers[i].Name]) > 0 {
				lastAttempted = i
			}
		}
		prevAttempted := 0
		if in.Previous != nil {
			prevAttempted = len(attempted(in.Previous.InitContainerStatuses))
		}
		for i := max(lastAttempted+1, prevAttempted); i < len(pod.Spec.InitContainers); i++ {
			cs := status(got.InitContainerStatuses, pod.Spec.InitContainers[i].Name)
			if cs.State.Waiting == nil {
				t.Errorf("init container %s not attempted yet is %s", cs.Name, stateOf(cs.State))
			}
		}
	}

	// Conditions: the five, once each, lastTransitionTime kept while the
	// status is unchanged, now when it changed.
	for _, typ := range []v1.PodConditionType{v1.PodReadyToStartContainers, v1.PodInitialized, v1.PodReady, v1.ContainersReady, v1.PodScheduled} {
		n := 0
		for _, c := range got.Conditions {
			if c.Type == typ {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%d %s conditions", n, typ)
			continue
		}
		c := condition(got, typ)
		if in.Previous != nil {
			if old := condition(*in.Previous, typ); old.Status == c.Status && !old.LastTransitionTime.Equal(&c.LastTransitionTime) {
				t.Errorf("%s stayed %s but lastTransitionTime moved %v → %v", typ, c.Status, old.LastTransitionTime, c.LastTransitionTime)
			} else if old.Status != c.Status && !c.LastTransitionTime.Time.Equal(in.Now) {
				t.Errorf("%s changed %s → %s at %v, want now", typ, old.Status, c.Status, c.LastTransitionTime)
			}
		}
	}
	if condition(got, v1.PodReady).Status == v1.ConditionTrue && isTerminal(got.Phase) {
		t.Errorf("Ready in phase %s", got.Phase)
	}
	checkEphemeral(t, in, got)
}

// checkEphemeral: one status per ephemeral container, sorted by name, with
// one state, never started nor ready, with the newest instance's (zero)
// restart count; and the ephemeral containers change nothing else in the
// status (phase, conditions, the other containers).
func checkEphemeral(t *testing.T, in Input, got v1.PodStatus) {
	t.Helper()
	pod := in.Pod
	if len(got.EphemeralContainerStatuses) != len(pod.Spec.EphemeralContainers) {
		t.Fatalf("%d ephemeral statuses for %d ephemeral containers", len(got.EphemeralContainerStatuses), len(pod.Spec.EphemeralContainers))
	}
	if !slices.IsSortedFunc(got.EphemeralContainerStatuses, func(a, b v1.ContainerStatus) int { return cmpString(a.Name, b.Name) }) {
		t.Errorf("ephemeral container statuses not sorted")
	}
	for _, cs := range got.EphemeralContainerStatuses {
		if n := states(cs.State); n != 1 {
			t.Errorf("ephemeral %s: %d states", cs.Name, n)
		}
		if cs.Started != nil || cs.Ready || cs.RestartCount != 0 {
			t.Errorf("ephemeral %s: started %v ready %v restarts %d", cs.Name, cs.Started, cs.Ready, cs.RestartCount)
		}
	}
	bare := in
	bare.Pod = pod.DeepCopy()
	bare.Pod.Spec.EphemeralContainers = nil
	want := Generate(bare)
	got.EphemeralContainerStatuses = nil
	if !reflect.DeepEqual(want, got) {
		t.Errorf("the ephemeral containers change the status:\nwith:    %+v\nwithout: %+v", got, want)
	}
}

func states(s v1.ContainerState) int {
	n := 0
	if s.Waiting != nil {
		n++
	}
	if s.Running != nil {
		n++
	}
	if s.Terminated != nil {
		n++
	}
	return n
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// checkSequence generates two successive statuses (the second on top of
// the first) and checks both, plus purity.
func checkSequence(t *testing.T, b *bits) {
	first := randomScenario(b)
	second := randomScenario(b)
	second.pod = first.pod // the same pod, a later runtime view
	if first.terminal {
		second.terminal = true
	}
	in1 := first.input(nil, 10)
	before := in1.Pod.DeepCopy()
	got1 := Generate(in1)
	if again := Generate(first.input(nil, 10)); !reflect.DeepEqual(got1, again) {
		t.Fatalf("not deterministic:\n%+v\n%+v", got1, again)
	}
	if !reflect.DeepEqual(before, in1.Pod) {
		t.Fatalf("Generate modified its pod")
	}
	checkInvariants(t, in1, got1)
	in2 := second.input(&got1, 20)
	prevCopy := got1.DeepCopy()
	got2 := Generate(in2)
	if !reflect.DeepEqual(prevCopy, &got1) {
		t.Fatalf("Generate modified its previous status")
	}
	checkInvariants(t, in2, got2)
	if got1.StartTime != nil && !got2.StartTime.Equal(got1.StartTime) {
		t.Errorf("startTime moved %v → %v", got1.StartTime, got2.StartTime)
	}
	if isTerminal(got1.Phase) && got2.Phase != got1.Phase {
		t.Errorf("phase left %s for %s", got1.Phase, got2.Phase)
	}
}

// TestGenerateProperties checks the invariants on many random scenarios
// (deterministic seeds, so a failure reproduces).
func TestGenerateProperties(t *testing.T) {
	n := 3000
	if testing.Short() {
		n = 300
	}
	for seed := 0; seed < n; seed++ {
		ok := t.Run(fmt.Sprint(seed), func(t *testing.T) {
			checkSequence(t, &bits{rnd: rand.New(rand.NewPCG(uint64(seed), 7))})
		})
		if !ok {
			break
		}
	}
}

// FuzzGenerate checks the same invariants on fuzzed choices:
// go test -fuzz FuzzGenerate ./agent/podstatus
func FuzzGenerate(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{2, 3, 1, 0, 2, 2, 1, 0, 0, 1, 1, 1, 3, 2, 0, 1, 2, 0, 1, 1, 0, 0, 3})
	f.Add([]byte{0, 1, 1, 1, 2, 0, 0, 0, 1, 0, 1, 1, 1, 1, 1, 1, 1, 0, 2, 1, 1, 2, 1, 1, 0, 1, 1, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		checkSequence(t, &bits{data: data})
	})
}
