package runtime

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// QOSClass computes a pod's quality of service class as the kubelet does
// (only cpu and memory count): BestEffort when no container (init ones
// included) requests or limits either; Guaranteed when every container
// limits both and requests exactly its limits (an unset request counts as
// its limit, the API server's default); Burstable otherwise. Pod-level
// resources (spec.resources) are not considered.
func QOSClass(pod *v1.Pod) v1.PodQOSClass {
	any, guaranteed := false, true
	visit := func(c *v1.Container) {
		for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
			limit, hasLimit := c.Resources.Limits[name]
			request, hasRequest := c.Resources.Requests[name]
			if hasLimit && !limit.IsZero() || hasRequest && !request.IsZero() {
				any = true
			}
			if !hasLimit || limit.IsZero() {
				guaranteed = false
				continue
			}
			if hasRequest && request.Cmp(limit) != 0 {
				guaranteed = false
			}
		}
	}
	for i := range pod.Spec.InitContainers {
		visit(&pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		visit(&pod.Spec.Containers[i])
	}
	switch {
	case !any:
		return v1.PodQOSBestEffort
	case guaranteed:
		return v1.PodQOSGuaranteed
	default:
		return v1.PodQOSBurstable
	}
}

// EffectiveRequest is the container's request of a resource, its limit
// when the request is unset (the API server's default), or zero.
func EffectiveRequest(c *v1.Container, name v1.ResourceName) resource.Quantity {
	if q, ok := c.Resources.Requests[name]; ok {
		return q
	}
	if q, ok := c.Resources.Limits[name]; ok {
		return q
	}
	return resource.Quantity{}
}
