package cri

import (
	"fmt"
	"math"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The kubelet's CPU conversions (pkg/kubelet/cm).
const (
	minShares     = 2
	maxShares     = 262144
	sharesPerCPU  = 1024
	milliCPUToCPU = 1000
	quotaPeriod   = 100000 // microseconds
	minQuotaUs    = 1000
)

// linuxResources maps a container's requests and limits to CRI Linux
// resources as the kubelet does: CPU shares from the CPU request (at least
// 2), a CFS quota from the CPU limit over a 100 ms period, the memory
// limit. Nil when the container sets none.
func linuxResources(c *v1.Container) *runtimeapi.LinuxContainerResources {
	req, lim := c.Resources.Requests, c.Resources.Limits
	cpuReq, hasReq := req[v1.ResourceCPU]
	cpuLim, hasLim := lim[v1.ResourceCPU]
	mem, hasMem := lim[v1.ResourceMemory]
	if !hasReq && !hasLim && !hasMem {
		return nil
	}
	if !hasReq && hasLim { // the API server defaults the request to the limit
		cpuReq, hasReq = cpuLim, true
	}
	out := &runtimeapi.LinuxContainerResources{CpuShares: minShares}
	if hasReq {
		shares := cpuReq.MilliValue() * sharesPerCPU / milliCPUToCPU
		out.CpuShares = min(max(shares, minShares), maxShares)
	}
	if hasLim {
		out.CpuPeriod = quotaPeriod
		out.CpuQuota = max(cpuLim.MilliValue()*quotaPeriod/milliCPUToCPU, minQuotaUs)
	}
	if hasMem {
		out.MemoryLimitInBytes = mem.Value()
	}
	return out
}

// securityContext maps the container's (and the pod's) security context
// fields that CRI takes as they are: run as user and group, privileged,
// read-only root file system, no_new_privs, added and dropped
// capabilities, supplemental groups.
func securityContext(pod *v1.Pod, c *v1.Container, sc *runtimeapi.LinuxContainerSecurityContext) {
	if ps := pod.Spec.SecurityContext; ps != nil {
		if ps.RunAsUser != nil {
			sc.RunAsUser = &runtimeapi.Int64Value{Value: *ps.RunAsUser}
		}
		if ps.RunAsGroup != nil {
			sc.RunAsGroup = &runtimeapi.Int64Value{Value: *ps.RunAsGroup}
		}
		sc.SupplementalGroups = append(sc.SupplementalGroups, ps.SupplementalGroups...)
	}
	cs := c.SecurityContext
	if cs == nil {
		return
	}
	if cs.RunAsUser != nil {
		sc.RunAsUser = &runtimeapi.Int64Value{Value: *cs.RunAsUser}
	}
	if cs.RunAsGroup != nil {
		sc.RunAsGroup = &runtimeapi.Int64Value{Value: *cs.RunAsGroup}
	}
	if cs.Privileged != nil {
		sc.Privileged = *cs.Privileged
	}
	if cs.ReadOnlyRootFilesystem != nil {
		sc.ReadonlyRootfs = *cs.ReadOnlyRootFilesystem
	}
	if cs.AllowPrivilegeEscalation != nil {
		sc.NoNewPrivs = !*cs.AllowPrivilegeEscalation
	}
	if caps := cs.Capabilities; caps != nil {
		sc.Capabilities = &runtimeapi.Capability{}
		for _, a := range caps.Add {
			sc.Capabilities.AddCapabilities = append(sc.Capabilities.AddCapabilities, string(a))
		}
		for _, d := range caps.Drop {
			sc.Capabilities.DropCapabilities = append(sc.Capabilities.DropCapabilities, string(d))
		}
	}
}

// envValue resolves an env var's valueFrom from the pod itself (the
// downward API): fieldRef of metadata and spec, resourceFieldRef of the
// container's own requests and limits. The rest is refused by
// validateEnv, so it never reaches here.
func envValue(pod *v1.Pod, c *v1.Container, src *v1.EnvVarSource) (string, error) {
	switch {
	case src.FieldRef != nil:
		return fieldValue(pod, src.FieldRef.FieldPath)
	case src.ResourceFieldRef != nil:
		return resourceValue(pod, c, src.ResourceFieldRef)
	}
	return "", fmt.Errorf("only fieldRef and resourceFieldRef are supported")
}

func fieldValue(pod *v1.Pod, path string) (string, error) {
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	}
	for prefix, m := range map[string]map[string]string{"metadata.labels": pod.Labels, "metadata.annotations": pod.Annotations} {
		if rest, ok := strings.CutPrefix(path, prefix+"['"); ok && strings.HasSuffix(rest, "']") {
			return m[strings.TrimSuffix(rest, "']")], nil
		}
	}
	return "", fmt.Errorf("fieldRef %q is not supported by podlife's CRI adapter", path)
}

func resourceValue(pod *v1.Pod, c *v1.Container, ref *v1.ResourceFieldSelector) (string, error) {
	target := c
	if ref.ContainerName != "" {
		target = nil
		for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
			for i := range list {
				if list[i].Name == ref.ContainerName {
					target = &list[i]
				}
			}
		}
		if target == nil {
			return "", fmt.Errorf("resourceFieldRef: no container %q", ref.ContainerName)
		}
	}
	kind, name, ok := strings.Cut(ref.Resource, ".")
	var list v1.ResourceList
	switch {
	case ok && kind == "limits":
		list = target.Resources.Limits
	case ok && kind == "requests":
		list = target.Resources.Requests
	default:
		return "", fmt.Errorf("resourceFieldRef %q is not supported", ref.Resource)
	}
	q, set := list[v1.ResourceName(name)]
	if !set {
		return "", fmt.Errorf("resourceFieldRef %q: the container sets none (the kubelet would use the node's allocatable, which podlife's CRI adapter does not know)", ref.Resource)
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	if name == string(v1.ResourceCPU) {
		return fmt.Sprint(int64(math.Ceil(float64(q.MilliValue()) / float64(divisor.MilliValue())))), nil
	}
	return fmt.Sprint(int64(math.Ceil(float64(q.Value()) / float64(divisor.Value())))), nil
}

// validateContainerFields refuses what the adapter cannot honour and would
// otherwise drop without a word, naming the field.
func validateContainerFields(pod *v1.Pod) []error {
	var errs []error
	check := func(field string, list []v1.Container) {
		for i := range list {
			c := &list[i]
			path := fmt.Sprintf("%s[%d]", field, i)
			if len(c.EnvFrom) > 0 {
				errs = append(errs, fmt.Errorf("%s.envFrom: not supported by podlife's CRI adapter", path))
			}
			for j, e := range c.Env {
				if e.ValueFrom == nil {
					continue
				}
				if _, err := envValue(pod, c, e.ValueFrom); err != nil {
					errs = append(errs, fmt.Errorf("%s.env[%d] (%s).valueFrom: %w", path, j, e.Name, err))
				}
			}
			errs = append(errs, validateLifecycle(path, c)...)
		}
	}
	check("spec.initContainers", pod.Spec.InitContainers)
	check("spec.containers", pod.Spec.Containers)
	return errs
}
