package eviction

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/podlife/podlife/internal/podresources"
)

// The signals counted in the evictions metric for local storage limits,
// the kubelet's.
const (
	signalEphemeralContainerFsLimit = "ephemeralcontainerfs.limit"
	signalEphemeralPodFsLimit       = "ephemeralpodfs.limit"
	signalEmptyDirFsLimit           = "emptydirfs.limit"
)

// storageLimited reports whether the pod has a limit local storage
// eviction enforces: an emptyDir sizeLimit or a container's
// ephemeral-storage limit.
func storageLimited(pod *v1.Pod) bool {
	for i := range pod.Spec.Volumes {
		if ed := pod.Spec.Volumes[i].EmptyDir; ed != nil && ed.SizeLimit != nil && ed.SizeLimit.Sign() > 0 {
			return true
		}
	}
	for _, cs := range [][]v1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range cs {
			if _, ok := cs[i].Resources.Limits[v1.ResourceEphemeralStorage]; ok {
				return true
			}
		}
	}
	return false
}

// storageViolation is why a pod breaks its local storage limits: the
// metric's signal and the eviction's message.
type storageViolation struct {
	signal, message string
}

// localStorageViolation checks, as the kubelet's localStorageEviction, in
// this order: each emptyDir against its sizeLimit, the pod's ephemeral
// storage against the sum of its containers' limits, each container's
// logs (and writable layer, without a dedicated image file system)
// against its limit.
func localStorageViolation(pod *v1.Pod, stats podStatsFunc, dedicatedImageFs bool) (storageViolation, bool) {
	ps, ok := stats(pod)
	if !ok {
		return storageViolation{}, false
	}
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if v.EmptyDir == nil || v.EmptyDir.SizeLimit == nil || v.EmptyDir.SizeLimit.Sign() <= 0 {
			continue
		}
		for j := range ps.VolumeStats {
			vs := &ps.VolumeStats[j]
			if vs.Name != v.Name || vs.UsedBytes == nil {
				continue
			}
			if resource.NewQuantity(clampInt64(*vs.UsedBytes), resource.BinarySI).Cmp(*v.EmptyDir.SizeLimit) > 0 {
				return storageViolation{signalEmptyDirFsLimit, fmt.Sprintf(emptyDirMessageFmt, v.Name, v.EmptyDir.SizeLimit.String())}, true
			}
		}
	}
	if limit, ok := podEphemeralLimit(pod); ok {
		var used int64
		if ps.EphemeralStorage != nil && ps.EphemeralStorage.UsedBytes != nil {
			used = clampInt64(*ps.EphemeralStorage.UsedBytes)
		}
		if resource.NewQuantity(used, resource.BinarySI).Cmp(limit) > 0 {
			return storageViolation{signalEphemeralPodFsLimit, fmt.Sprintf(podEphemeralStorageMessageFmt, limit.String())}, true
		}
	}
	for _, cs := range ps.Containers {
		var limit *resource.Quantity
		for i := range pod.Spec.Containers {
			c := &pod.Spec.Containers[i]
			if c.Name == cs.Name {
				if q, ok := c.Resources.Limits[v1.ResourceEphemeralStorage]; ok && q.Value() != 0 {
					limit = &q
				}
				break
			}
		}
		if limit == nil {
			continue
		}
		used := fsUsed(cs.Logs, false)
		if !dedicatedImageFs {
			used += fsUsed(cs.Rootfs, false)
		}
		if limit.Cmp(*resource.NewQuantity(used, resource.BinarySI)) < 0 {
			return storageViolation{signalEphemeralContainerFsLimit, fmt.Sprintf(containerEphemeralStorageMessageFmt, cs.Name, limit.String())}, true
		}
	}
	return storageViolation{}, false
}

// podEphemeralLimit is the pod's ephemeral-storage limit, as the
// kubelet's PodLimits: the sum of the app containers' and sidecars', or
// an init container's when larger, when any container has one.
func podEphemeralLimit(pod *v1.Pod) (resource.Quantity, bool) {
	total, _, found := podresources.Sum(pod, podresources.Limits(v1.ResourceEphemeralStorage))
	if !found {
		return resource.Quantity{}, false
	}
	if q, ok := pod.Spec.Overhead[v1.ResourceEphemeralStorage]; ok {
		total += q.Value()
	}
	return *resource.NewQuantity(total, resource.BinarySI), true
}
