package cri

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/runtime"
)

// unsupported names every field of the spec that the adapter does not
// honour and that would change what runs: such a pod is refused rather than
// run without it. docs/pod-spec.md lists what is honoured.
func unsupported(pod *v1.Pod) []error {
	var errs []error
	no := func(field string) {
		errs = append(errs, fmt.Errorf("%s: not supported by podlife's CRI adapter: %w", field, runtime.ErrUnimplemented))
	}
	for _, f := range volumeProblems(pod) {
		no(f)
	}
	if pod.Spec.Resources != nil {
		no("spec.resources")
	}
	if len(pod.Spec.HostAliases) > 0 {
		no("spec.hostAliases")
	}
	if pod.Spec.DNSConfig != nil {
		no("spec.dnsConfig")
	}
	if pod.Spec.HostPID {
		no("spec.hostPID")
	}
	if pod.Spec.HostIPC {
		no("spec.hostIPC")
	}
	if psc := pod.Spec.SecurityContext; psc != nil {
		if psc.SELinuxOptions != nil {
			no("spec.securityContext.seLinuxOptions")
		}
		if len(psc.Sysctls) > 0 {
			no("spec.securityContext.sysctls")
		}
		if psc.AppArmorProfile != nil && psc.AppArmorProfile.Type != v1.AppArmorProfileTypeUnconfined {
			no("spec.securityContext.appArmorProfile")
		}
	}
	check := func(field string, c *v1.Container) {
		if len(c.VolumeDevices) > 0 {
			no(field + ".volumeDevices")
		}
		if len(c.EnvFrom) > 0 {
			no(field + ".envFrom")
		}
		for j, e := range c.Env {
			src := e.ValueFrom
			switch {
			case src == nil:
			case src.FieldRef != nil:
				if _, err := fieldRefValue(pod, src.FieldRef.FieldPath, envContext{}); err != nil {
					no(fmt.Sprintf("%s.env[%d].valueFrom.fieldRef.fieldPath %q", field, j, src.FieldRef.FieldPath))
				}
			case src.ResourceFieldRef != nil:
				if _, err := resourceFieldValue(pod, c, src.ResourceFieldRef, envContext{}); err != nil {
					no(fmt.Sprintf("%s.env[%d].valueFrom.resourceFieldRef (%v)", field, j, err))
				}
			default:
				no(fmt.Sprintf("%s.env[%d].valueFrom", field, j))
			}
		}
		if c.Lifecycle != nil {
			if c.Lifecycle.StopSignal != nil {
				no(field + ".lifecycle.stopSignal")
			}
			for name, h := range map[string]*v1.LifecycleHandler{"postStart": c.Lifecycle.PostStart, "preStop": c.Lifecycle.PreStop} {
				if h != nil && h.TCPSocket != nil {
					no(field + ".lifecycle." + name + ".tcpSocket")
				}
			}
		}
		if sc := c.SecurityContext; sc != nil {
			if sc.SELinuxOptions != nil {
				no(field + ".securityContext.seLinuxOptions")
			}
			if sc.ProcMount != nil && *sc.ProcMount != v1.DefaultProcMount {
				no(field + ".securityContext.procMount")
			}
			if sc.AppArmorProfile != nil && sc.AppArmorProfile.Type != v1.AppArmorProfileTypeUnconfined {
				no(field + ".securityContext.appArmorProfile")
			}
		}
	}
	for i := range pod.Spec.InitContainers {
		check(fmt.Sprintf("spec.initContainers[%d]", i), &pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		check(fmt.Sprintf("spec.containers[%d]", i), &pod.Spec.Containers[i])
	}
	return errs
}

// volumeKind is the JSON name of a volume's source.
func volumeKind(s *v1.VolumeSource) string {
	switch {
	case s.EmptyDir != nil:
		return "emptyDir"
	case s.HostPath != nil:
		return "hostPath"
	case s.ConfigMap != nil:
		return "configMap"
	case s.Secret != nil:
		return "secret"
	case s.Projected != nil:
		return "projected"
	case s.PersistentVolumeClaim != nil:
		return "persistentVolumeClaim"
	case s.DownwardAPI != nil:
		return "downwardAPI"
	case s.Ephemeral != nil:
		return "ephemeral"
	case s.CSI != nil:
		return "csi"
	case s.Image != nil:
		return "image"
	case s.NFS != nil:
		return "nfs"
	default:
		return "(volume source)"
	}
}

// isServiceAccountVolume: the projected service account token volume that
// the API server's ServiceAccount admission adds to every pod
// ("kube-api-access-*"). It is not mounted (podlife has no token
// manager), but refusing it would refuse every pod of a real cluster: it
// is let through unmounted, as docs/pod-spec.md says. Set
// automountServiceAccountToken: false on pods that must not expect it.
func isServiceAccountVolume(v *v1.Volume) bool {
	return v.Projected != nil && strings.HasPrefix(v.Name, "kube-api-access-")
}
