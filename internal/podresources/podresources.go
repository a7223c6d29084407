// Package podresources sums a resource over a pod's containers the way the
// kubelet does (k8s.io/component-helpers' PodRequests and PodLimits): the
// app containers and the sidecars (restartable init containers) run
// together; each plain init container runs alone beside the sidecars
// started before it; the pod needs the larger of the two. The agent's
// eviction ranking (requests), its local-storage limits and the size of
// memory-backed emptyDir volumes all use it.
package podresources

import v1 "k8s.io/api/core/v1"

// Amount reads one container's amount of a resource; ok is false when the
// container sets none.
type Amount func(c *v1.Container) (n int64, ok bool)

// Sum returns the pod's amount, without the pod overhead (callers add it
// where the kubelet does), and whether every container and whether any
// container set one.
func Sum(pod *v1.Pod, amount Amount) (total int64, all, some bool) {
	all = true
	read := func(c *v1.Container) int64 {
		n, ok := amount(c)
		if !ok {
			all = false
			return 0
		}
		some = true
		return n
	}
	var apps, sidecars, initMax int64
	for i := range pod.Spec.Containers {
		apps += read(&pod.Spec.Containers[i])
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		n := read(c)
		if c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			sidecars += n
			initMax = max(initMax, sidecars)
			continue
		}
		initMax = max(initMax, sidecars+n)
	}
	return max(apps+sidecars, initMax), all, some
}

// Requests is an Amount: the container's request of name.
func Requests(name v1.ResourceName) Amount {
	return func(c *v1.Container) (int64, bool) {
		q, ok := c.Resources.Requests[name]
		return q.Value(), ok
	}
}

// Limits is an Amount: the container's limit of name (an explicit zero is
// a limit of zero).
func Limits(name v1.ResourceName) Amount {
	return func(c *v1.Container) (int64, bool) {
		q, ok := c.Resources.Limits[name]
		return q.Value(), ok
	}
}
