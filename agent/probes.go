package agent

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/agent/podstatus"
	"github.com/podlife/podlife/podworker"
	"github.com/podlife/podlife/runtime"
	"github.com/podlife/podlife/runtime/prober"
)

// ContainerKiller is what the agent needs of a runtime to restart a
// container whose liveness or startup probe failed (runtime/cri implements
// it). Without it, such a container is reported but not killed.
type ContainerKiller interface {
	KillContainer(ctx context.Context, id runtime.ContainerID, gracePeriod int64) error
}

// newProber builds the prober of the agent (Options.DisableProbes unset):
// exec probes run through the runtime when it can exec (prober.Exec).
func (a *Agent) newProber() error {
	po := prober.Options{
		OnResult:   a.onProbeResult,
		OnWarning:  a.onProbeWarning,
		Logger:     a.opts.Logger.WithName("prober"),
		Clock:      a.opts.Clock,
		Registerer: a.opts.Registerer,
		Probe:      a.opts.Probe,
	}
	if e, ok := a.opts.Runtime.(prober.Exec); ok {
		po.Exec = e
	}
	p, err := prober.New(po)
	if err != nil {
		return err
	}
	a.prober = p
	return nil
}

// onProbeResult syncs the pod whose probe result changed, so that its
// status (ready, started) is published and a failed liveness or startup
// probe leads to a kill. It is called from probe goroutines and does not
// block.
func (a *Agent) onProbeResult(u prober.Update) {
	pod, ok := a.pods.GetPodByUID(u.PodUID)
	if !ok {
		return
	}
	if u.Result == prober.Failure {
		a.log.V(2).Info("probe failed", "pod", podRef(pod), "podUID", pod.UID, "container", u.ContainerName, "probe", u.Probe, "output", u.Output)
		a.event(pod, v1.EventTypeWarning, eventUnhealthy, "%s probe failed: %s", probeName(u.Probe), u.Output)
	}
	if u.Probe == prober.Readiness && a.workers.IsPodTerminationRequested(pod.UID) {
		a.publishReadiness(context.Background(), pod, u)
	}
	_, mirror, _ := a.pods.GetPodAndMirrorPod(pod)
	a.workers.UpdatePod(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodSync, Pod: pod, MirrorPod: mirror})
}

// onProbeWarning records the kubelet's ProbeWarning event for a probe that
// succeeded with a warning (an HTTP redirect to another host, not followed).
func (a *Agent) onProbeWarning(u prober.Update) {
	if pod, ok := a.pods.GetPodByUID(u.PodUID); ok {
		a.event(pod, v1.EventTypeWarning, eventProbeWarning, "%s probe warning: %s", probeName(u.Probe), u.Output)
	}
}

func probeName(t prober.ProbeType) string {
	switch t {
	case prober.Liveness:
		return "Liveness"
	case prober.Readiness:
		return "Readiness"
	}
	return "Startup"
}

// probeContainers tells the prober which containers of pod run now (and
// the address its network probes go to).
func (a *Agent) probeContainers(pod *v1.Pod, st *runtime.PodStatus) {
	if a.prober == nil || st == nil {
		return
	}
	running := map[string]prober.RunningContainer{}
	for _, cs := range st.ContainerStatuses {
		if cs.State == runtime.ContainerStateRunning {
			if _, seen := running[cs.Name]; !seen { // newest first
				running[cs.Name] = prober.RunningContainer{ID: cs.ID.ID, StartedAt: cs.StartedAt} // the ID the runtime execs in
			}
		}
	}
	ip := ""
	if len(st.IPs) > 0 && !pod.Spec.HostNetwork {
		ip = st.IPs[0]
	} else if a.opts.NodeIPs != nil {
		if ips := a.opts.NodeIPs(); len(ips) > 0 {
			ip = ips[0]
		}
	}
	a.prober.SetContainers(pod, ip, running)
}

// probeResult answers podstatus for startup and readiness probes.
func (a *Agent) probeResult(uid types.UID, container, containerID string, t podstatus.ProbeType) (bool, bool) {
	pt := prober.Readiness
	if t == podstatus.Startup {
		pt = prober.Startup
	}
	switch a.prober.Result(uid, container, pt) {
	case prober.Success:
		return true, true
	case prober.Failure:
		return false, true
	}
	return false, false
}

// killUnhealthy kills the running containers of pod whose liveness or
// startup probe failed, each with the probe's grace period or the pod's;
// the runtime's SyncPod then restarts them by the restart policy. It
// reports whether it killed any.
func (a *Agent) killUnhealthy(ctx context.Context, pod *v1.Pod) (bool, error) {
	if a.prober == nil {
		return false, nil
	}
	unhealthy := a.prober.Unhealthy(pod.UID)
	if len(unhealthy) == 0 {
		return false, nil
	}
	killer, ok := a.opts.Runtime.(ContainerKiller)
	if !ok {
		return false, nil
	}
	for _, u := range unhealthy {
		grace := int64(v1.DefaultTerminationGracePeriodSeconds)
		if pod.Spec.TerminationGracePeriodSeconds != nil {
			grace = *pod.Spec.TerminationGracePeriodSeconds
		}
		if u.TerminationGracePeriodSeconds != nil {
			grace = *u.TerminationGracePeriodSeconds
		}
		id := runtime.ParseContainerID(u.ContainerID)
		a.event(pod, v1.EventTypeNormal, eventKilling, "Container %s failed %s probe, will be restarted", u.ContainerName, probeName(u.Probe))
		if err := killer.KillContainer(ctx, id, grace); err != nil {
			return false, fmt.Errorf("kill container %s after its %s probe failed: %w", u.ContainerName, probeName(u.Probe), err)
		}
	}
	return true, nil
}
