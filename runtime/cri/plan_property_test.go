package cri

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/runtime"
)

// randomPlanInput makes a pod and a runtime status as they may be found,
// including odd ones (instances of older sandboxes, unknown states, hashes
// of older specs, several instances of one container).
func randomPlanInput(rng *rand.Rand) (planInput, map[string]bool) {
	pick := func(n int) int { return rng.IntN(n) }
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u1", Name: "web", Namespace: "ns"}}
	pod.Spec.RestartPolicy = []v1.RestartPolicy{"", v1.RestartPolicyAlways, v1.RestartPolicyOnFailure, v1.RestartPolicyNever}[pick(4)]
	always := v1.ContainerRestartPolicyAlways
	for i := range pick(4) {
		c := v1.Container{Name: fmt.Sprintf("i%d", i), Image: "img"}
		if pick(3) == 0 {
			c.RestartPolicy = &always
			if pick(2) == 0 {
				c.StartupProbe = &v1.Probe{}
			}
		}
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, c)
	}
	for i := range 1 + pick(3) {
		pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: fmt.Sprintf("c%d", i), Image: "img"})
	}
	var ephemeral []v1.Container
	for i := range pick(3) {
		ec := v1.EphemeralContainer{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: fmt.Sprintf("e%d", i), Image: "img"}}
		if pick(2) == 0 {
			ec.TargetContainerName = pod.Spec.Containers[pick(len(pod.Spec.Containers))].Name
		}
		pod.Spec.EphemeralContainers = append(pod.Spec.EphemeralContainers, ec)
		ephemeral = append(ephemeral, *asContainer(&ec))
	}
	st := &runtime.PodStatus{ID: "u1", Name: "web", Namespace: "ns"}
	for i := range pick(3) {
		state := runtime.SandboxStateReady
		if pick(3) == 0 {
			state = runtime.SandboxStateNotReady
		}
		st.SandboxStatuses = append(st.SandboxStatuses, &runtime.SandboxStatus{ID: fmt.Sprintf("s%d", i), State: state,
			CreatedAt: time.Unix(int64(50+pick(150)), 0), Attempt: uint32(i)})
	}
	states := []runtime.ContainerState{runtime.ContainerStateCreated, runtime.ContainerStateRunning, runtime.ContainerStateExited, runtime.ContainerStateExited, runtime.ContainerStateUnknown}
	backOff := fakeBackOff{}
	notStarted := map[string]bool{}
	id := 0
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers, ephemeral} {
		for i := range list {
			c := &list[i]
			for r := range pick(3) {
				id++
				cs := &runtime.ContainerStatus{ID: runtime.ContainerID{Type: "fake", ID: fmt.Sprintf("x%d", id)}, Name: c.Name,
					State: states[pick(len(states))], ExitCode: pick(2), RestartCount: r,
					CreatedAt: time.Unix(int64(40+pick(220)), 0)}
				cs.FinishedAt = cs.CreatedAt.Add(time.Second)
				switch pick(4) {
				case 0:
					cs.Hash = 1 // an older spec
				case 1: // none recorded
				default:
					cs.Hash = runtime.HashContainer(c)
				}
				st.ContainerStatuses = append(st.ContainerStatuses, cs)
			}
			if pick(3) == 0 {
				backOff[backOffKey(pod, c.Name)] = 10 * time.Second
			}
			notStarted[c.Name] = pick(3) == 0
		}
	}
	in := planInput{pod: pod, status: st, backOff: backOff, now: time.Unix(300, 0),
		started: func(_ types.UID, name string) bool { return !notStarted[name] }}
	return in, notStarted
}

// TestPlanProperties checks, on seeded random pods and statuses, what every
// plan must hold whatever the rules' details: it is pure; it starts no
// regular container before the init containers are done; under Never it
// restarts nothing; each container it stops has a reason that the status
// bears out; the pod is finished only when no regular container is to
// run; an ephemeral container is never restarted and changes nothing else.
func TestPlanProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 2026))
	for n := range 5000 {
		in, _ := randomPlanInput(rng)
		pod0, st0 := in.pod.DeepCopy(), deepCopyStatus(in.status)
		p := planSync(in)
		fail := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("case %d: %s\nplan: %s\npod: %s\nstatus: %s", n, fmt.Sprintf(format, args...), p, dumpPod(in.pod), dumpStatus(in.status))
		}
		if !reflect.DeepEqual(pod0, in.pod) || !reflect.DeepEqual(st0, in.status) {
			fail("planSync changed its input")
		}
		if again := planSync(in); !reflect.DeepEqual(p, again) {
			fail("not deterministic: %s", again)
		}
		checkInitFirst(p, in, fail)
		checkNever(p, in, fail)
		checkKills(p, in, fail)
		checkEphemeral(p, in, fail)
		counts := false
		for _, s := range p.Containers {
			counts = counts || s.Action != actNone
		}
		if p.Idle == "" && p.Initialized && p.Finished == counts {
			fail("finished %v, yet a regular container runs or is to run: %v", p.Finished, counts)
		}
	}
}

type failFunc func(format string, args ...any)

// checkEphemeral: an ephemeral container is started only when the runtime
// has no instance of it (or started once created in this sandbox and
// never started), never restarted, never waits for a back-off, is stopped
// only with a dead sandbox, and starts nothing while the sandbox is being
// created or once the pod failed or finished. And it changes nothing else:
// without the ephemeral containers in the spec (their instances left in the
// status), the plan is the same but for them: the sandbox, kills, init
// and regular containers, initialization and completion.
func checkEphemeral(p *syncPlan, in planInput, fail failFunc) {
	if len(p.Ephemeral) != len(in.pod.Spec.EphemeralContainers) && p.Idle == "" {
		fail("%d ephemeral steps for %d ephemeral containers", len(p.Ephemeral), len(in.pod.Spec.EphemeralContainers))
	}
	since := currentSandboxCreated(p, in.status)
	for _, s := range p.Ephemeral {
		if !s.Ephemeral || s.Init || s.Counts || s.Restart || s.Kill != nil || s.Action == actBackOff || s.Action == actWait {
			fail("ephemeral step %s: restart %v, counts %v, kill %v, init %v", s, s.Restart, s.Counts, s.Kill, s.Init)
		}
		starts := s.Action == actStart || s.Action == actStartCreated
		if starts && (p.CreateSandbox || p.Finished || p.InitFailed) {
			fail("ephemeral %s starts, but createSandbox %v finished %v initFailed %v", s.Name, p.CreateSandbox, p.Finished, p.InitFailed)
		}
		cs := in.status.FindContainerStatusByName(s.Name)
		switch s.Action {
		case actStart:
			if cs != nil {
				fail("ephemeral %s is started again; it has instance %s (%s)", s.Name, cs.ID.ID, cs.State)
			}
			if ec := findEphemeral(in.pod, s.Name); s.Target != ec.TargetContainerName {
				fail("ephemeral %s targets %q, its spec %q", s.Name, s.Target, ec.TargetContainerName)
			}
			want := ""
			if t := in.status.FindContainerStatusByName(s.Target); s.Target != "" && t != nil {
				want = t.ID.ID
			}
			if s.TargetID != want {
				fail("ephemeral %s: target id %q, want %q (the newest instance of %q)", s.Name, s.TargetID, want, s.Target)
			}
		case actStartCreated:
			if cs == nil || cs.State != runtime.ContainerStateCreated || cs.ID.ID != s.CreatedID || cs.CreatedAt.Before(since) {
				fail("ephemeral %s: start-created %s, not its newest instance created in this sandbox", s.Name, s.CreatedID)
			}
		case actKeep:
			if cs == nil || cs.State != runtime.ContainerStateRunning {
				fail("ephemeral %s kept, but not running", s.Name)
			}
		}
	}

	bare := in
	bare.pod = in.pod.DeepCopy()
	bare.pod.Spec.EphemeralContainers = nil
	q := planSync(bare)
	q.Ephemeral = p.Ephemeral
	if !reflect.DeepEqual(p, q) {
		fail("the ephemeral containers change the plan; without them: %s", q)
	}
}

// currentSandboxCreated is when the sandbox the plan keeps was created;
// every instance in the status is older than a sandbox to create.
func currentSandboxCreated(p *syncPlan, st *runtime.PodStatus) time.Time {
	if p.CreateSandbox {
		return time.Unix(1<<40, 0)
	}
	return newestSandbox(st).CreatedAt
}

// checkInitFirst: a regular container is started only once every init
// container has succeeded, and every sidecar runs, in the current sandbox,
// or once regular containers already ran in it.
func checkInitFirst(p *syncPlan, in planInput, fail failFunc) {
	starts := false
	for _, s := range p.Containers {
		starts = starts || s.Action == actStart || s.Action == actStartCreated
	}
	if !starts || len(in.pod.Spec.InitContainers) == 0 {
		return
	}
	if !p.Initialized || p.CreateSandbox {
		fail("a regular container starts, but initialized=%v createSandbox=%v", p.Initialized, p.CreateSandbox)
	}
	since := currentSandboxCreated(p, in.status)
	here := func(name string) *runtime.ContainerStatus {
		cs := in.status.FindContainerStatusByName(name)
		if cs == nil || cs.CreatedAt.Before(since) {
			return nil
		}
		return cs
	}
	for i := range in.pod.Spec.Containers {
		if here(in.pod.Spec.Containers[i].Name) != nil {
			return // regular containers ran in this sandbox: initialized
		}
	}
	for i := range in.pod.Spec.InitContainers {
		c := &in.pod.Spec.InitContainers[i]
		cs := here(c.Name)
		switch {
		case isSidecar(c) && (cs == nil || cs.State != runtime.ContainerStateRunning):
			fail("a regular container starts before sidecar %s runs", c.Name)
		case !isSidecar(c) && (cs == nil || cs.State != runtime.ContainerStateExited || cs.ExitCode != 0):
			fail("a regular container starts before init container %s succeeded", c.Name)
		}
	}
}

// checkNever: under RestartPolicy Never no container but a sidecar is
// restarted or waits for a back-off; one whose sandbox died after it ran
// is left alone.
func checkNever(p *syncPlan, in planInput, fail failFunc) {
	if in.pod.Spec.RestartPolicy != v1.RestartPolicyNever {
		return
	}
	if p.CreateSandbox && p.OldSandboxID != "" && len(in.status.ContainerStatuses) > 0 {
		fail("a Never pod that ran gets a new sandbox")
	}
	since := currentSandboxCreated(p, in.status)
	for _, s := range append(append([]containerStep(nil), p.Init...), p.Containers...) {
		if isSidecar(findContainer(in.pod, s.Name)) {
			continue
		}
		if s.Restart || s.Action == actBackOff {
			fail("%s is restarted under Never: %s", s.Name, s)
		}
		cs := in.status.FindContainerStatusByName(s.Name)
		dead := cs != nil && !cs.CreatedAt.Before(since) && (cs.State == runtime.ContainerStateExited || cs.State == runtime.ContainerStateUnknown)
		if dead && s.Action == actStart {
			fail("%s, dead in this sandbox, is started again under Never: %s", s.Name, s)
		}
	}
}

// checkKills: every container stopped has a reason, and the status bears
// it out.
func checkKills(p *syncPlan, in planInput, fail failFunc) {
	kills := append([]containerKill(nil), p.KillFirst...)
	for _, s := range append(append([]containerStep(nil), p.Init...), p.Containers...) {
		if s.Kill != nil {
			if s.Kill.Name != s.Name {
				fail("step %s kills %s", s.Name, s.Kill.Name)
			}
			kills = append(kills, *s.Kill)
		}
	}
	byID := map[string]*runtime.ContainerStatus{}
	for _, cs := range in.status.ContainerStatuses {
		byID[cs.ID.ID] = cs
	}
	for _, k := range kills {
		cs := byID[k.ID]
		if cs == nil || cs.Name != k.Name || cs.State == runtime.ContainerStateExited {
			fail("kills %s, not a live instance of %s", k.ID, k.Name)
		}
		ok := false
		switch k.Reason {
		case reasonSandboxDead:
			ok = p.CreateSandbox && p.OldSandboxID != ""
		case reasonSpecChanged:
			c := findContainer(in.pod, k.Name)
			ok = cs.State == runtime.ContainerStateRunning && cs.Hash != 0 && cs.Hash != runtime.HashContainer(c)
		case reasonUnknownState:
			ok = cs.State == runtime.ContainerStateUnknown && k.Grace == 0
		}
		if !ok {
			fail("kills %s (%s) for reason %q, which its status %s does not bear out", k.ID, k.Name, k.Reason, cs.State)
		}
	}
	if p.OldSandboxID != "" {
		for _, cs := range in.status.ContainerStatuses {
			if cs.State != runtime.ContainerStateExited && !containsKill(p.KillFirst, cs.ID.ID) {
				fail("%s (%s) is left running under a dead sandbox", cs.ID.ID, cs.Name)
			}
		}
	}
}

func containsKill(ks []containerKill, id string) bool {
	for _, k := range ks {
		if k.ID == id {
			return true
		}
	}
	return false
}

func deepCopyStatus(st *runtime.PodStatus) *runtime.PodStatus {
	out := *st
	out.ContainerStatuses, out.SandboxStatuses = nil, nil
	for _, cs := range st.ContainerStatuses {
		c := *cs
		out.ContainerStatuses = append(out.ContainerStatuses, &c)
	}
	for _, sb := range st.SandboxStatuses {
		s := *sb
		out.SandboxStatuses = append(out.SandboxStatuses, &s)
	}
	return &out
}

func dumpPod(pod *v1.Pod) string {
	s := "policy " + string(pod.Spec.RestartPolicy) + ";"
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		s += fmt.Sprintf(" init %s (sidecar %v, probe %v)", c.Name, isSidecar(c), c.StartupProbe != nil)
	}
	for _, c := range pod.Spec.Containers {
		s += " container " + c.Name
	}
	for _, c := range pod.Spec.EphemeralContainers {
		s += " ephemeral " + c.Name + " (target " + c.TargetContainerName + ")"
	}
	return s
}

func dumpStatus(st *runtime.PodStatus) string {
	s := ""
	for _, sb := range st.SandboxStatuses {
		s += fmt.Sprintf("[sandbox %s %s created %d] ", sb.ID, sb.State, sb.CreatedAt.Unix())
	}
	for _, cs := range st.ContainerStatuses {
		s += fmt.Sprintf("[%s %s %s code %d created %d hash %d] ", cs.Name, cs.ID.ID, cs.State, cs.ExitCode, cs.CreatedAt.Unix(), cs.Hash)
	}
	return s
}
