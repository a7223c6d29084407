package cri

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
)

// EventRecorder is what the adapter needs to record Kubernetes events
// about pods: the method of client-go's record.EventRecorder (and of
// agent/events.Recorder) that it calls.
type EventRecorder interface {
	Eventf(object k8sruntime.Object, eventtype, reason, messageFmt string, args ...interface{})
}

// Event reasons the adapter records, as the kubelet names them.
const (
	eventPulling     = "Pulling"
	eventPulled      = "Pulled"
	eventCreated     = "Created"
	eventStarted     = "Started"
	eventFailed      = "Failed"
	eventUnsupported = "UnsupportedPodFields"
	// eventBackOff: an image pull deferred by its back-off.
	eventBackOff = "BackOff"
	// eventInspectFailed: an image name that does not parse, or an image
	// whose status cannot be read.
	eventInspectFailed     = "InspectFailed"
	eventErrImageNeverPull = "ErrImageNeverPull"
)

// recorderBox holds the recorder, set after New by SetRecorder.
type recorderBox struct{ rec EventRecorder }

// SetRecorder makes the adapter record the kubelet's container events
// (Pulling, Pulled, BackOff, InspectFailed, ErrImageNeverPull, Created,
// Started, Failed) and a warning about the pod-spec
// fields it does not honour, on rec. The agent calls it with its own
// recorder (agent.Options.Cluster); nil stops the events. It is safe to
// call at any time.
func (r *Runtime) SetRecorder(rec EventRecorder) {
	if rec == nil {
		r.recorder.Store(nil)
		return
	}
	r.recorder.Store(&recorderBox{rec})
}

func (r *Runtime) event(pod *v1.Pod, eventtype, reason, messageFmt string, args ...any) {
	if b := r.recorder.Load(); b != nil {
		b.rec.Eventf(pod, eventtype, reason, messageFmt, args...)
	}
}

// unsupportedFields lists the pod-spec fields the adapter accepts but does
// not honour (it refuses the others in validatePod): the pod runs without
// them, and says so in a warning event when its sandbox is created.
func unsupportedFields(pod *v1.Pod) []string {
	out := unmountedVolumes(pod)
	for _, list := range []struct {
		field string
		cs    []v1.Container
	}{{"spec.initContainers", pod.Spec.InitContainers}, {"spec.containers", pod.Spec.Containers}} {
		for i, c := range list.cs {
			path := fmt.Sprintf("%s[%d]", list.field, i)
			if len(c.Ports) > 0 && !pod.Spec.HostNetwork {
				out = append(out, path+".ports: not published (pods use the node's network)")
			}
		}
	}
	return out
}

// warnUnsupported records one warning event listing the fields the pod
// runs without.
func (r *Runtime) warnUnsupported(pod *v1.Pod) {
	if fields := unsupportedFields(providerView(pod, r.optionsProvider())); len(fields) > 0 {
		r.log.V(2).Info("pod runs without some of its spec", "pod", podRef(pod), "fields", fields)
		r.event(pod, v1.EventTypeWarning, eventUnsupported, "podlife's CRI adapter runs this pod without: %s", strings.Join(fields, "; "))
	}
}
