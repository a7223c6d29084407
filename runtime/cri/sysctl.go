package cri

import (
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/internal/sysctl"
)

// podSysctls are the pod's sysctls for its sandbox, by name with dots as
// separators (the kubelet's ConvertPodSysctlsVariableToDotsSeparator); nil
// without any. Which ones a pod may set is admission's business (the
// agent's, as the kubelet's).
func podSysctls(pod *v1.Pod) map[string]string {
	sc := pod.Spec.SecurityContext
	if sc == nil || len(sc.Sysctls) == 0 {
		return nil
	}
	m := make(map[string]string, len(sc.Sysctls))
	for _, s := range sc.Sysctls {
		m[sysctl.Normalize(s.Name)] = s.Value
	}
	return m
}

// validateSysctls refuses the net.* sysctls of a pod that runs on the
// node's network namespace (hostNetwork, or NetworkModeNode): the runtime
// would set them for the whole node, or fail.
func (r *Runtime) validateSysctls(pod *v1.Pod) []error {
	sc := pod.Spec.SecurityContext
	if sc == nil || !r.usesNodeNetwork(pod) {
		return nil
	}
	var errs []error
	for i, s := range sc.Sysctls {
		if sysctl.NamespaceOf(sysctl.Normalize(s.Name)) == sysctl.Net {
			errs = append(errs, fmt.Errorf("spec.securityContext.sysctls[%d]: %q needs the pod's own network namespace, and this pod runs in the node's", i, s.Name))
		}
	}
	return errs
}
