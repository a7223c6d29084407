package cri

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"

	"github.com/podlife/podlife/runtime"
)

// EventRecorder is the part of client-go's record.EventRecorder the adapter
// uses: a record.EventRecorder fits. The object is always the *v1.Pod.
type EventRecorder interface {
	Eventf(object apiruntime.Object, eventtype, reason, messageFmt string, args ...interface{})
}

// The kubelet's event reasons that the adapter emits.
const (
	EventPulling             = "Pulling"
	EventPulled              = "Pulled"
	EventFailed              = "Failed"
	EventErrImageNeverPull   = "ErrImageNeverPull"
	EventCreated             = "Created"
	EventStarted             = "Started"
	EventKilling             = "Killing"
	EventBackOff             = "BackOff"
	EventFailedPostStartHook = "FailedPostStartHook"
	EventFailedPreStopHook   = "FailedPreStopHook"
)

// event records one event about pod, when there is a recorder and a pod.
func (r *Runtime) event(pod *v1.Pod, eventType, reason, format string, args ...any) {
	if r.opts.Recorder == nil || pod == nil {
		return
	}
	r.opts.Recorder.Eventf(pod, eventType, reason, format, args...)
}

// podDesc is the kubelet's format of a pod in messages: name_namespace(uid).
func podDesc(pod *v1.Pod) string {
	return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
}

// BackOff returns, for each container of the pod (init containers
// included) whose newest instance in st exited and waits for its
// crash-loop back-off, the kubelet's message
// "back-off 10s restarting failed container=NAME pod=NAME_NAMESPACE(UID)".
// A status generator shows such a container as Waiting, reason
// CrashLoopBackOff, with this message. The map is empty when nothing waits.
func (r *Runtime) BackOff(pod *v1.Pod, st *runtime.PodStatus) map[string]string {
	out := map[string]string{}
	if pod == nil || st == nil {
		return out
	}
	visit := func(c *v1.Container) {
		cs := st.FindContainerStatusByName(c.Name)
		if cs == nil || cs.State != runtime.ContainerStateExited {
			return
		}
		key := backOffKey(pod, c.Name)
		if r.backOff.wait(key, cs.FinishedAt) <= 0 {
			return
		}
		out[c.Name] = fmt.Sprintf("back-off %s restarting failed container=%s pod=%s", r.backOff.delay(key).Round(time.Second), c.Name, podDesc(pod))
	}
	for i := range pod.Spec.InitContainers {
		visit(&pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		visit(&pod.Spec.Containers[i])
	}
	return out
}
