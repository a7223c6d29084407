package cri

import (
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podlife/podlife/runtime"
)

// The kubelet's constants for cgroup CPU and OOM settings.
const (
	minShares     = 2
	maxShares     = 262144
	sharesPerCPU  = 1024
	quotaPeriod   = 100000 // µs, the CFS period the kubelet uses
	minQuota      = 1000   // µs
	guaranteedOOM = -997
	bestEffortOOM = 1000
)

// linuxResources maps a container's cpu and memory requests and limits to
// CRI resources as the kubelet does: CPU shares from the request (the limit
// when no request; 2 when neither), CFS quota from the limit over a 100 ms
// period, the memory limit, and the OOM score adjustment of the pod's QoS
// class. Hugepages and other resources are not mapped.
func linuxResources(pod *v1.Pod, c *v1.Container, nodeMemory int64) *runtimeapi.LinuxContainerResources {
	cpuRequest := runtime.EffectiveRequest(c, v1.ResourceCPU)
	res := &runtimeapi.LinuxContainerResources{
		CpuShares:   milliCPUToShares(cpuRequest.MilliValue()),
		OomScoreAdj: oomScoreAdj(pod, c, nodeMemory),
	}
	if limit, ok := c.Resources.Limits[v1.ResourceCPU]; ok && !limit.IsZero() {
		res.CpuPeriod = quotaPeriod
		res.CpuQuota = milliCPUToQuota(limit.MilliValue())
	}
	if limit, ok := c.Resources.Limits[v1.ResourceMemory]; ok && !limit.IsZero() {
		res.MemoryLimitInBytes = limit.Value()
	}
	return res
}

func milliCPUToShares(milli int64) int64 {
	if milli <= 0 {
		return minShares
	}
	shares := milli * sharesPerCPU / 1000
	return min(max(shares, minShares), maxShares)
}

func milliCPUToQuota(milli int64) int64 {
	if milli <= 0 {
		return 0
	}
	return max(milli*quotaPeriod/1000, minQuota)
}

// oomScoreAdj as the kubelet: Guaranteed -997, BestEffort 1000, Burstable
// 1000 - 1000*memoryRequest/nodeMemory within [3, 999]. Without the node's
// memory (nodeMemory 0) a Burstable container gets 999.
func oomScoreAdj(pod *v1.Pod, c *v1.Container, nodeMemory int64) int64 {
	switch runtime.QOSClass(pod) {
	case v1.PodQOSGuaranteed:
		return guaranteedOOM
	case v1.PodQOSBestEffort:
		return bestEffortOOM
	}
	if nodeMemory <= 0 {
		return bestEffortOOM - 1
	}
	request := runtime.EffectiveRequest(c, v1.ResourceMemory)
	if request.Value() >= nodeMemory {
		return 1000 + guaranteedOOM
	}
	adj := 1000 - (1000*request.Value())/nodeMemory
	if adj < 1000+guaranteedOOM {
		return 1000 + guaranteedOOM
	}
	if adj >= bestEffortOOM {
		return bestEffortOOM - 1
	}
	return adj
}
