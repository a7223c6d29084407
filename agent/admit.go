package agent

import (
	"fmt"
	goruntime "runtime"

	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/internal/sysctl"
)

// Reasons of the kubelet's own admission checks, which the agent runs
// before Options.AdmitHandlers.
const (
	// ReasonPodOSNotSupported: the pod's spec.os is not the node's.
	ReasonPodOSNotSupported = "PodOSNotSupported"
	// ReasonPodOSSelectorMismatch: the pod's kubernetes.io/os label is
	// not the node's OS.
	ReasonPodOSSelectorMismatch = "PodOSSelectorNodeLabelDoesNotMatch"
	// ReasonSysctlForbidden: a sysctl the node does not allow
	// (Options.AllowedUnsafeSysctls), or one of a namespace the pod shares
	// with the node.
	ReasonSysctlForbidden = "SysctlForbidden"
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

// builtinAdmit runs the kubelet's own checks of a new pod, which need
// nothing but the pod: its OS (the spec.os field, then the
// kubernetes.io/os label), then its sysctls against the allowlist.
func builtinAdmit(pod *v1.Pod, sysctls *sysctl.Allowlist) AdmitResult {
	if os := pod.Spec.OS; os != nil && string(os.Name) != goruntime.GOOS {
		return AdmitResult{Reason: ReasonPodOSNotSupported, Message: "Failed to admit pod as the OS field doesn't match node OS"}
	}
	if os, ok := pod.Labels[v1.LabelOSStable]; ok && os != goruntime.GOOS {
		return AdmitResult{Reason: ReasonPodOSSelectorMismatch, Message: "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label"}
	}
	if sc := pod.Spec.SecurityContext; sc != nil {
		for _, s := range sc.Sysctls {
			if err := sysctls.Validate(s.Name, pod.Spec.HostNetwork, pod.Spec.HostIPC); err != nil {
				return AdmitResult{Reason: ReasonSysctlForbidden, Message: fmt.Sprintf("forbidden sysctl: %v", err)}
			}
		}
	}
	return AdmitResult{Admit: true}
}
