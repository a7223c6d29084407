package cri

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podlife/podlife/runtime"
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
// limit, and the OOM score adjustment of the pod's QoS class (oomScoreAdj).
// An unset request counts as its limit (the API server's defaulting).
func linuxResources(pod *v1.Pod, c *v1.Container, nodeMemory int64) *runtimeapi.LinuxContainerResources {
	req, lim := c.Resources.Requests, c.Resources.Limits
	cpuReq, hasReq := req[v1.ResourceCPU]
	cpuLim, hasLim := lim[v1.ResourceCPU]
	mem, hasMem := lim[v1.ResourceMemory]
	if !hasReq && hasLim { // the API server defaults the request to the limit
		cpuReq, hasReq = cpuLim, true
	}
	out := &runtimeapi.LinuxContainerResources{CpuShares: minShares, OomScoreAdj: oomScoreAdj(pod, c, nodeMemory)}
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

// The kubelet's OOM score adjustments (pkg/kubelet/qos).
const (
	guaranteedOOMScoreAdj = -997
	bestEffortOOMScoreAdj = 1000
	// systemNodeCritical is the priority class whose pods the kubelet
	// protects as Guaranteed ones, whatever their resources.
	systemNodeCritical = "system-node-critical"
)

// oomScoreAdj is the kubelet's GetContainerOOMScoreAdjust: -997 for a
// Guaranteed (or system-node-critical) pod, 1000 for a BestEffort one; in a
// Burstable pod 1000 - 1000*memoryRequest/nodeMemory, kept within
// [1000-997, 999] = [3, 999] so that a Burstable container is always killed
// before a Guaranteed one and never after a BestEffort one. A sidecar
// (restartable init container) gets no more than the regular container
// with the smallest memory request, so that it outlives them. Init
// containers that are not sidecars are computed as regular ones. Without
// the node's memory (nodeMemory 0) a Burstable container gets 999.
func oomScoreAdj(pod *v1.Pod, c *v1.Container, nodeMemory int64) int64 {
	if pod.Spec.PriorityClassName == systemNodeCritical {
		return guaranteedOOMScoreAdj
	}
	switch runtime.QOSClass(pod) {
	case v1.PodQOSGuaranteed:
		return guaranteedOOMScoreAdj
	case v1.PodQOSBestEffort:
		return bestEffortOOMScoreAdj
	}
	if nodeMemory <= 0 {
		return bestEffortOOMScoreAdj - 1
	}
	adj := burstableOOMScoreAdj(memoryRequest(c), nodeMemory)
	if isSidecar(c) && len(pod.Spec.Containers) > 0 {
		least := memoryRequest(&pod.Spec.Containers[0])
		for i := range pod.Spec.Containers[1:] {
			least = min(least, memoryRequest(&pod.Spec.Containers[i+1]))
		}
		adj = min(adj, burstableOOMScoreAdj(least, nodeMemory))
	}
	return min(max(adj, 1000+guaranteedOOMScoreAdj), bestEffortOOMScoreAdj-1)
}

func burstableOOMScoreAdj(request, nodeMemory int64) int64 {
	return 1000 - (1000*request)/nodeMemory
}

// readMemTotal reads MemTotal, in bytes, from a /proc/meminfo file.
func readMemTotal(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("node memory: %w", err)
	}
	for line := range strings.Lines(string(b)) {
		rest, ok := strings.CutPrefix(line, "MemTotal:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			break
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || kb <= 0 {
			break
		}
		return kb * 1024, nil
	}
	return 0, fmt.Errorf("node memory: no MemTotal in kB in %s", path)
}

// memoryRequest is the container's memory request in bytes, its limit when
// it sets none (the API server's defaulting), or 0.
func memoryRequest(c *v1.Container) int64 {
	if q, ok := c.Resources.Requests[v1.ResourceMemory]; ok {
		return q.Value()
	}
	if q, ok := c.Resources.Limits[v1.ResourceMemory]; ok {
		return q.Value()
	}
	return 0
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
	for _, list := range podContainerLists(pod) {
		for i := range list.cs {
			errs = append(errs, containerFieldErrors(pod, fmt.Sprintf("%s[%d]", list.field, i), &list.cs[i])...)
		}
	}
	return errs
}

// containerFieldErrors are validateContainerFields' problems with one
// container, whose field is path.
func containerFieldErrors(pod *v1.Pod, path string, c *v1.Container) []error {
	var errs []error
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
	return append(errs, validateLifecycle(path, c)...)
}
