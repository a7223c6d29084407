package agent

import (
	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/agent/podstatus"
	"github.com/podlife/podlife/runtime"
)

// generateStatus derives the API status of pod from what the runtime shows
// (package podstatus: the kubelet's generateAPIPodStatus), on top of the
// status last published for it (unless that status is the final one of a
// previous run: a pod restarted under the same UID starts afresh). terminal says that no container runs or
// will run any more (the pod is terminated): containers that did not finish
// are then reported as killed and the phase is Succeeded or Failed.
func (a *Agent) generateStatus(pod *v1.Pod, st *runtime.PodStatus, terminal bool) v1.PodStatus {
	in := podstatus.Input{Pod: pod, Runtime: st, Terminal: terminal, Now: a.clock.Now()}
	if prev, ok := a.status.Status(pod.UID); ok && !a.status.Finished(pod.UID) {
		in.Previous = &prev
	}
	if a.opts.NodeIPs != nil {
		in.NodeIPs = a.opts.NodeIPs()
	}
	if a.prober != nil {
		in.ProbeResult = a.probeResult
	}
	if !terminal {
		a.mu.Lock()
		p := a.pending[pod.UID]
		in.BackOff, in.StartFailures = p.backOff, p.failures
		a.mu.Unlock()
	}
	out := podstatus.Generate(in)
	a.applyActiveDeadline(pod, &out, terminal)
	a.applyEviction(pod, &out)
	return out
}
