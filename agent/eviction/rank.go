package eviction

import (
	"slices"

	v1 "k8s.io/api/core/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/podlife/podlife/internal/podresources"
)

// fsStats are the parts of a pod's disk usage measured for a file system.
type fsStats int

const (
	fsRoot        fsStats = 1 << iota // the containers' writable layers
	fsLogs                            // the containers' logs
	fsLocalVolume                     // emptyDir (on disk), configMap and gitRepo volumes
)

// rankKey is what a pod is ranked on, computed once per pass: pods
// without stats first, then those using more than they request, then by
// priority (lowest first), then by usage above request (largest first).
type rankKey struct {
	pod      *v1.Pod
	index    int // the pod's place in the list given: ties keep it
	noStats  bool
	exceeds  bool
	priority int32
	over     int64
}

func compareKeys(a, b rankKey) int {
	if a.noStats != b.noStats {
		if a.noStats {
			return -1
		}
		return 1
	}
	if a.exceeds != b.exceeds {
		if a.exceeds {
			return -1
		}
		return 1
	}
	if a.priority != b.priority {
		if a.priority < b.priority {
			return -1
		}
		return 1
	}
	switch {
	case a.over > b.over:
		return -1
	case a.over < b.over:
		return 1
	}
	return a.index - b.index
}

// rank orders pods for eviction to reclaim the resource of signal, as the
// kubelet's rankMemoryPressure, rankDiskPressureFunc and rankPIDPressure:
// memory and disk by (usage above requests, priority, usage less
// requests), PIDs by (priority, process count). Pods that compare equal
// keep their order.
func rank(pods []*v1.Pod, stats podStatsFunc, signal Signal, dedicatedImageFs bool) []*v1.Pod {
	keys := rankKeys(nil, pods, stats, signal, dedicatedImageFs)
	slices.SortFunc(keys, compareKeys)
	out := make([]*v1.Pod, len(keys))
	for i, k := range keys {
		out[i] = k.pod
	}
	return out
}

// first returns the first pod in rank that ok accepts, or nil: what a
// pass needs of the ranking, in one walk over the pods instead of a sort.
func first(keys []rankKey, ok func(*v1.Pod) bool) *v1.Pod {
	best := -1
	for i := range keys {
		if !ok(keys[i].pod) {
			continue
		}
		if best < 0 || compareKeys(keys[i], keys[best]) < 0 {
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	return keys[best].pod
}

// rankKeys computes what each pod is ranked on, into keys (reused when
// large enough).
func rankKeys(keys []rankKey, pods []*v1.Pod, stats podStatsFunc, signal Signal, dedicatedImageFs bool) []rankKey {
	keys = slices.Grow(keys[:0], len(pods))[:len(pods)]
	res := signalResource(signal)
	measure := fsRoot | fsLogs | fsLocalVolume
	if dedicatedImageFs {
		switch signal {
		case SignalNodeFsAvailable, SignalNodeFsInodesFree:
			measure = fsLogs | fsLocalVolume
		case SignalImageFsAvailable, SignalImageFsInodesFree:
			measure = fsRoot
		}
	}
	for i, pod := range pods {
		k := rankKey{pod: pod, index: i, priority: podPriority(pod)}
		ps, ok := stats(pod)
		if !ok {
			k.noStats = true
			keys[i] = k
			continue
		}
		var usage, request int64
		switch res {
		case v1.ResourceMemory:
			usage, request = memoryUsage(ps), podRequest(pod, v1.ResourceMemory)
		case v1.ResourceEphemeralStorage:
			usage, request = diskUsage(pod, ps, measure, false), podRequest(pod, v1.ResourceEphemeralStorage)
		case resourceInodes:
			usage = diskUsage(pod, ps, measure, true)
		case resourcePIDs:
			// By priority, then process count: no request to exceed.
			if ps.ProcessStats != nil && ps.ProcessStats.ProcessCount != nil {
				usage = int64(*ps.ProcessStats.ProcessCount)
			}
			k.over = usage
			keys[i] = k
			continue
		}
		k.exceeds = usage > request
		k.over = usage - request
		keys[i] = k
	}
	return keys
}

// podPriority is the pod's priority, 0 when unset.
func podPriority(pod *v1.Pod) int32 {
	if pod.Spec.Priority != nil {
		return *pod.Spec.Priority
	}
	return 0
}

// memoryUsage is the pod's working set.
func memoryUsage(ps *statsapi.PodStats) int64 {
	if ps.Memory != nil && ps.Memory.WorkingSetBytes != nil {
		return clampInt64(*ps.Memory.WorkingSetBytes)
	}
	return 0
}

func clampInt64(v uint64) int64 {
	if v > 1<<62 {
		return 1 << 62
	}
	return int64(v)
}

func fsUsed(fs *statsapi.FsStats, inodes bool) int64 {
	if fs == nil {
		return 0
	}
	if inodes {
		if fs.InodesUsed != nil {
			return clampInt64(*fs.InodesUsed)
		}
		return 0
	}
	if fs.UsedBytes != nil {
		return clampInt64(*fs.UsedBytes)
	}
	return 0
}

// diskUsage sums the pod's bytes (or inodes) in the parts measured.
func diskUsage(pod *v1.Pod, ps *statsapi.PodStats, measure fsStats, inodes bool) int64 {
	var sum int64
	for i := range ps.Containers {
		c := &ps.Containers[i]
		if measure&fsRoot != 0 {
			sum += fsUsed(c.Rootfs, inodes)
		}
		if measure&fsLogs != 0 {
			sum += fsUsed(c.Logs, inodes)
		}
	}
	if measure&fsLocalVolume != 0 && len(ps.VolumeStats) > 0 {
		for i := range pod.Spec.Volumes {
			v := &pod.Spec.Volumes[i]
			if !localEphemeralVolume(v) {
				continue
			}
			for j := range ps.VolumeStats {
				if ps.VolumeStats[j].Name == v.Name {
					sum += fsUsed(&ps.VolumeStats[j].FsStats, inodes)
					break
				}
			}
		}
	}
	return sum
}

// localEphemeralVolume reports whether v is kept on the node's disk for
// the pod's life (the kubelet's IsLocalEphemeralVolume).
func localEphemeralVolume(v *v1.Volume) bool {
	return v.GitRepo != nil || v.ConfigMap != nil ||
		(v.EmptyDir != nil && v.EmptyDir.Medium != v1.StorageMediumMemory)
}

// podRequest is the pod's request of a resource, in its units, as the
// scheduler counts it: the larger of the app containers with the sidecars
// and of each init container with the sidecars started before it, plus
// the pod overhead.
func podRequest(pod *v1.Pod, name v1.ResourceName) int64 {
	total, _, _ := podresources.Sum(pod, podresources.Requests(name))
	if q, ok := pod.Spec.Overhead[name]; ok {
		total += q.Value()
	}
	return total
}
