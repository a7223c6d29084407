package runtime

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// QOSClass returns the pod's QoS class as the kubelet's GetPodQOS does: the
// class in the pod's status when there is one (it never changes), else the
// one its resources give. With pod-level resources (spec.resources setting
// cpu or memory) those decide; otherwise every container, init containers
// included, is Guaranteed (cpu and memory requests equal to non-zero
// limits), BestEffort (no cpu or memory request or limit) or Burstable, and
// the pod is Guaranteed or BestEffort only when all its containers are.
//
// A missing request counts as equal to the limit, as the API server's
// defaulting sets it, so a pod that skipped defaulting gets the same class.
func QOSClass(pod *v1.Pod) v1.PodQOSClass {
	if pod.Status.QOSClass != "" {
		return pod.Status.QOSClass
	}
	if r := pod.Spec.Resources; r != nil && setsCPUOrMemory(r) {
		return requirementsQOS(r)
	}
	var class v1.PodQOSClass
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			c := requirementsQOS(&list[i].Resources)
			switch {
			case c == v1.PodQOSBurstable:
				return c
			case class == "":
				class = c
			case class != c:
				return v1.PodQOSBurstable
			}
		}
	}
	if class == "" {
		return v1.PodQOSBestEffort
	}
	return class
}

func setsCPUOrMemory(r *v1.ResourceRequirements) bool {
	for _, l := range []v1.ResourceList{r.Requests, r.Limits} {
		for _, n := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
			if _, ok := l[n]; ok {
				return true
			}
		}
	}
	return false
}

// requirementsQOS is the class of one set of requirements: cpu and memory
// each give BestEffort (neither request nor limit), Guaranteed (request
// equal to a non-zero limit) or Burstable; mixed answers are Burstable.
func requirementsQOS(r *v1.ResourceRequirements) v1.PodQOSClass {
	var class v1.PodQOSClass
	for _, n := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
		lim, hasLim := r.Limits[n]
		req, hasReq := r.Requests[n]
		if !hasReq && hasLim {
			req = lim // the API's defaulting
		}
		var c v1.PodQOSClass
		switch {
		case !equal(req, lim):
			c = v1.PodQOSBurstable
		case req.IsZero():
			c = v1.PodQOSBestEffort
		default:
			c = v1.PodQOSGuaranteed
		}
		switch {
		case c == v1.PodQOSBurstable:
			return c
		case class == "":
			class = c
		case class != c:
			return v1.PodQOSBurstable
		}
	}
	return class
}

func equal(a, b resource.Quantity) bool { return a.Cmp(b) == 0 }
