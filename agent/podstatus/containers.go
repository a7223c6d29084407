package podstatus

import (
	"cmp"
	"slices"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podlife/podlife/runtime"
)

// instancesByName groups the runtime's container instances by container
// name, newest first (by creation time, then restart count).
func instancesByName(rt *runtime.PodStatus) map[string][]*runtime.ContainerStatus {
	m := make(map[string][]*runtime.ContainerStatus, len(rt.ContainerStatuses))
	for _, c := range rt.ContainerStatuses {
		if c != nil {
			m[c.Name] = append(m[c.Name], c)
		}
	}
	for _, list := range m {
		slices.SortStableFunc(list, func(a, b *runtime.ContainerStatus) int {
			return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), cmp.Compare(b.RestartCount, a.RestartCount))
		})
	}
	return m
}

// newest returns the newest instance of the named container, or nil.
func (g *generator) newest(name string) *runtime.ContainerStatus {
	if l := g.instances[name]; len(l) > 0 {
		return l[0]
	}
	return nil
}

// containerKind says which of the pod's lists a container is in.
type containerKind int

const (
	kindRegular containerKind = iota
	kindInit
	kindEphemeral
)

// ephemeralContainers are the pod's ephemeral containers as Containers
// (the types have the same fields, as the kubelet converts them).
func ephemeralContainers(pod *v1.Pod) []v1.Container {
	if len(pod.Spec.EphemeralContainers) == 0 {
		return nil
	}
	out := make([]v1.Container, len(pod.Spec.EphemeralContainers))
	for i := range pod.Spec.EphemeralContainers {
		out[i] = v1.Container(pod.Spec.EphemeralContainers[i].EphemeralContainerCommon)
	}
	return out
}

// containerStatuses is the kubelet's convertToAPIContainerStatuses for the
// regular, init or ephemeral containers of the pod: the newest instance
// gives the state, the one before it the last state; a container with no
// instance is Waiting (ContainerCreating, or PodInitializing in a pod with
// init containers) with what the previous status knew of it; a container
// whose (re)start is pending shows why (CrashLoopBackOff and friends).
// Regular and ephemeral containers come sorted by name, init containers in
// spec order.
func (g *generator) containerStatuses(containers []v1.Container, previous []v1.ContainerStatus, kind containerKind) []v1.ContainerStatus {
	if len(containers) == 0 {
		return nil
	}
	olds := make(map[string]*v1.ContainerStatus, len(previous))
	for i := range previous {
		olds[previous[i].Name] = &previous[i]
	}
	hasInit := len(g.pod.Spec.InitContainers) > 0
	defaultReason := ReasonContainerCreating
	if hasInit {
		defaultReason = ReasonPodInitializing
	}

	out := make([]v1.ContainerStatus, len(containers))
	for i := range containers {
		c := &containers[i]
		old := olds[c.Name]
		st := v1.ContainerStatus{Name: c.Name, Image: c.Image,
			State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: defaultReason}}}
		if old != nil {
			if old.State.Terminated != nil {
				st = *old.DeepCopy()
			} else {
				st.RestartCount = old.RestartCount
				st.LastTerminationState = *old.LastTerminationState.DeepCopy()
			}
		}
		instances := g.instances[c.Name]
		if len(instances) == 0 && old != nil && old.State.Running != nil &&
			isDefaultWaiting(&st, defaultReason) && st.LastTerminationState == (v1.ContainerState{}) {
			// It ran, and the runtime lost it: say that it stopped rather
			// than send the pod back to Pending.
			st.LastTerminationState.Terminated = &v1.ContainerStateTerminated{
				Reason: ReasonStatusUnknown, Message: msgNotLocatedDeleted, ExitCode: ExitCodeUnknown}
			if g.pod.DeletionTimestamp == nil && kind != kindEphemeral {
				st.RestartCount++ // an ephemeral container never restarts
			}
		}
		for n, inst := range instances {
			if n == 0 {
				st = g.convert(inst, old, kind)
				continue
			}
			st.LastTerminationState = g.convert(inst, old, kind).State
			break
		}
		g.pending(c, &st, kind)
		out[i] = st
	}
	if kind != kindInit {
		slices.SortFunc(out, func(a, b v1.ContainerStatus) int { return cmp.Compare(a.Name, b.Name) })
	}
	return out
}

func isDefaultWaiting(st *v1.ContainerStatus, reason string) bool {
	return st.State.Waiting != nil && st.State.Waiting.Reason == reason
}

// convert is the status of one container instance.
func (g *generator) convert(rs *runtime.ContainerStatus, old *v1.ContainerStatus, kind containerKind) v1.ContainerStatus {
	id := rs.ID.String()
	st := v1.ContainerStatus{
		Name:         rs.Name,
		Image:        rs.Image,
		ImageID:      rs.ImageID,
		ContainerID:  id,
		RestartCount: int32(rs.RestartCount),
	}
	if old != nil {
		for i := range old.VolumeMounts {
			st.VolumeMounts = append(st.VolumeMounts, *old.VolumeMounts[i].DeepCopy())
		}
	}
	if st.Image == "" {
		st.Image = g.specImage(rs.Name)
	}
	switch {
	case rs.State == runtime.ContainerStateRunning:
		st.State.Running = &v1.ContainerStateRunning{StartedAt: metav1.NewTime(rs.StartedAt)}
		if old != nil && old.ContainerID == id && old.Started != nil {
			started := *old.Started
			st.Started = &started
		}
	case rs.State == runtime.ContainerStateCreated:
		st.State.Waiting = &v1.ContainerStateWaiting{Reason: ReasonContainerCreating}
	case rs.State == runtime.ContainerStateExited:
		reason := rs.Reason
		if reason == "" {
			reason = ReasonCompleted
			if rs.ExitCode != 0 {
				reason = ReasonError
			}
		}
		st.State.Terminated = &v1.ContainerStateTerminated{
			ExitCode:    int32(rs.ExitCode),
			Reason:      reason,
			Message:     rs.Message,
			StartedAt:   metav1.NewTime(rs.StartedAt),
			FinishedAt:  metav1.NewTime(rs.FinishedAt),
			ContainerID: id,
		}
	case rs.State == runtime.ContainerStateUnknown && old != nil && old.State.Running != nil:
		// It ran and its end was not seen: it stopped, with an unknown
		// result, rather than "never ran".
		st.State.Terminated = &v1.ContainerStateTerminated{
			Reason: ReasonStatusUnknown, Message: msgNotLocatedTerminated, ExitCode: ExitCodeUnknown}
		if kind != kindEphemeral { // an ephemeral container never restarts
			st.RestartCount = old.RestartCount + 1
		}
	default:
		st.State.Waiting = &v1.ContainerStateWaiting{}
	}
	return st
}

func (g *generator) specImage(name string) string {
	for _, list := range [][]v1.Container{g.pod.Spec.Containers, g.pod.Spec.InitContainers} {
		for i := range list {
			if list[i].Name == name {
				return list[i].Image
			}
		}
	}
	for i := range g.pod.Spec.EphemeralContainers {
		if g.pod.Spec.EphemeralContainers[i].Name == name {
			return g.pod.Spec.EphemeralContainers[i].Image
		}
	}
	return ""
}

// pending shows why a container that is to be started (again) is not
// running: the crash-loop back-off or the last start failure. It also
// reports as Completed an init container the runtime no longer has in a pod
// whose regular containers were created (it must have succeeded).
func (g *generator) pending(c *v1.Container, st *v1.ContainerStatus, kind containerKind) {
	newest := g.newest(c.Name)
	if kind == kindEphemeral && !g.ephemeralToStart(newest) {
		return
	}
	if kind == kindInit {
		if newest != nil && newest.State == runtime.ContainerStateExited && newest.ExitCode == 0 {
			return
		}
		if newest == nil && !isSidecar(c) && st.State.Waiting != nil && g.anyRegularContainerCreated() {
			st.State = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
				Reason: ReasonCompleted, Message: msgInitAssumedDone}}
			return
		}
	}
	if kind != kindEphemeral && !g.shouldStart(c, newest) {
		return
	}
	var w v1.ContainerStateWaiting
	if msg, ok := g.in.BackOff[c.Name]; ok {
		w = v1.ContainerStateWaiting{Reason: ReasonCrashLoopBackOff, Message: msg}
	} else if f, ok := g.in.StartFailures[c.Name]; ok && f.Reason != "" {
		w = f
	} else {
		return
	}
	if st.State.Terminated != nil {
		st.LastTerminationState = st.State
	}
	st.State = v1.ContainerState{Waiting: &w}
}

// shouldStart is the kubelet's ShouldContainerBeRestarted: whether the
// container, whose newest instance is newest, is to be started again.
func (g *generator) shouldStart(c *v1.Container, newest *runtime.ContainerStatus) bool {
	switch {
	case g.pod.DeletionTimestamp != nil:
		return false
	case newest == nil:
		return true
	case newest.State == runtime.ContainerStateRunning:
		return false
	case newest.State == runtime.ContainerStateExited:
		return shouldRestart(c, &g.pod.Spec, int32(newest.ExitCode))
	default: // created or unknown
		return true
	}
}

// ephemeralToStart says whether an ephemeral container, whose newest
// instance is newest, is still to be started: it has none, or one created
// and never started (runtime/cri's rule). Unlike the kubelet, which asks
// ShouldContainerBeRestarted (the pod's restart policy) for it too, an
// exited one is never to start again, so an old start failure is never
// shown over its terminated state.
func (g *generator) ephemeralToStart(newest *runtime.ContainerStatus) bool {
	return g.pod.DeletionTimestamp == nil && (newest == nil || newest.State == runtime.ContainerStateCreated)
}

// anyRegularContainerCreated reports whether the runtime has an instance of
// a regular container (the pod got past its init containers once).
func (g *generator) anyRegularContainerCreated() bool {
	for i := range g.pod.Spec.Containers {
		if n := g.newest(g.pod.Spec.Containers[i].Name); n != nil && n.State != runtime.ContainerStateUnknown {
			return true
		}
	}
	return false
}

// activeRegularContainerStarted reports whether a regular container was
// created in the pod's current sandbox, which means that the init
// containers completed for it (the kubelet's
// HasAnyActiveRegularContainerStarted). runtime.PodStatus does not tie an
// instance to its sandbox, so an instance counts when it was created no
// earlier than the newest sandbox.
func (g *generator) activeRegularContainerStarted() bool {
	var sandboxAt metav1.Time
	for _, sb := range g.rt.SandboxStatuses {
		if sb != nil && sb.CreatedAt.After(sandboxAt.Time) {
			sandboxAt = metav1.NewTime(sb.CreatedAt)
		}
	}
	for i := range g.pod.Spec.Containers {
		for _, inst := range g.instances[g.pod.Spec.Containers[i].Name] {
			if !inst.CreatedAt.Before(sandboxAt.Time) {
				return true
			}
		}
	}
	return false
}

// applyProbes sets started and ready, as the kubelet's prober manager does
// (UpdatePodStatus): a running container is started once its startup probe
// passed (at once without one) and ready once started and its readiness
// probe passed (at once without one); a regular init container is ready
// once it succeeded.
func (g *generator) applyProbes(regular, init []v1.ContainerStatus) {
	specs := map[string]*v1.Container{}
	for i := range g.pod.Spec.Containers {
		specs[g.pod.Spec.Containers[i].Name] = &g.pod.Spec.Containers[i]
	}
	initSpecs := map[string]*v1.Container{}
	for i := range g.pod.Spec.InitContainers {
		initSpecs[g.pod.Spec.InitContainers[i].Name] = &g.pod.Spec.InitContainers[i]
	}
	for i := range regular {
		g.probe(specs[regular[i].Name], &regular[i])
	}
	for i := range init {
		c := initSpecs[init[i].Name]
		if c != nil && !isSidecar(c) {
			started := g.started(c, &init[i])
			init[i].Started = &started
			init[i].Ready = init[i].State.Terminated != nil && init[i].State.Terminated.ExitCode == 0
			continue
		}
		g.probe(c, &init[i])
	}
}

func (g *generator) probe(c *v1.Container, st *v1.ContainerStatus) {
	started := g.started(c, st)
	st.Started = &started
	st.Ready = false
	if !started || st.State.Running == nil {
		return
	}
	st.Ready = true
	if g.probed(c, Readiness) {
		ok, known := g.result(st, Readiness)
		st.Ready = known && ok
	}
}

func (g *generator) started(c *v1.Container, st *v1.ContainerStatus) bool {
	if st.State.Running == nil {
		return false
	}
	if !g.probed(c, Startup) {
		return true
	}
	if ok, known := g.result(st, Startup); known {
		return ok
	}
	return st.Started != nil && *st.Started // started before, same instance
}

// probed reports whether a probe of type p gates the container: its spec
// has one and a prober runs (Input.ProbeResult is set).
func (g *generator) probed(c *v1.Container, p ProbeType) bool {
	if c == nil || g.in.ProbeResult == nil {
		return false
	}
	if p == Startup {
		return c.StartupProbe != nil
	}
	return c.ReadinessProbe != nil
}

func (g *generator) result(st *v1.ContainerStatus, p ProbeType) (success, known bool) {
	if g.in.ProbeResult == nil {
		return false, false
	}
	return g.in.ProbeResult(g.pod.UID, st.Name, st.ContainerID, p)
}
