package agent

import (
	v1 "k8s.io/api/core/v1"
)

// AdmitAttributes is what an AdmitHandler decides on.
type AdmitAttributes struct {
	// Pod is the pod asking to run. Read-only.
	Pod *v1.Pod
	// OtherPods are the pods already admitted and active on the node
	// (neither known to be terminated nor in a terminal phase). Read-only.
	OtherPods []*v1.Pod
}

// AdmitResult is an AdmitHandler's answer.
type AdmitResult struct {
	// Admit lets the pod run.
	Admit bool
	// Reason is a brief CamelCase reason for a rejection; it becomes the
	// pod's status reason. Default "Rejected".
	Reason string
	// Message explains a rejection to people.
	Message string
}

// AdmitHandler decides whether a new pod may run on the node (the kubelet's
// PodAdmitHandler). Handlers run on the agent's sync loop, one pod at a time,
// in the order of Options.AdmitHandlers; they must be quick.
type AdmitHandler interface {
	Admit(attrs *AdmitAttributes) AdmitResult
}

// AdmitHandlerFunc adapts a function to an AdmitHandler.
type AdmitHandlerFunc func(attrs *AdmitAttributes) AdmitResult

var _ AdmitHandler = AdmitHandlerFunc(nil)

// Admit calls f.
func (f AdmitHandlerFunc) Admit(attrs *AdmitAttributes) AdmitResult { return f(attrs) }

// admit runs the handlers in order; the first rejection wins.
func admit(handlers []AdmitHandler, attrs *AdmitAttributes) AdmitResult {
	for _, h := range handlers {
		if r := h.Admit(attrs); !r.Admit {
			if r.Reason == "" {
				r.Reason = "Rejected"
			}
			return r
		}
	}
	return AdmitResult{Admit: true}
}

// rejectedStatus is the status of a pod that admission rejected, as the
// kubelet's rejectPod writes it.
func rejectedStatus(pod *v1.Pod, r AdmitResult) v1.PodStatus {
	st := *pod.Status.DeepCopy()
	st.Phase = v1.PodFailed
	st.Reason = r.Reason
	st.Message = "Pod was rejected: " + r.Message
	return st
}
