package eviction

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Reason is the status reason of an evicted pod and of the pods that
// admission refuses under pressure, and the reason of the eviction's event.
const Reason = "Evicted"

// The kubelet's message formats.
const (
	nodeLowMessageFmt                   = "The node was low on resource: %v. "
	thresholdMetMessageFmt              = "Threshold quantity: %v, available: %v. "
	containerMessageFmt                 = "Container %s was using %s, request is %s, has larger consumption of %v. "
	podEphemeralStorageMessageFmt       = "Pod ephemeral local storage usage exceeds the total limit of containers %s. "
	emptyDirMessageFmt                  = "Usage of EmptyDir volume %q exceeds the limit %q. "
	containerEphemeralStorageMessageFmt = "Container %s exceeded its local ephemeral storage limit %q. "
	nodeConditionMessageFmt             = "The node had condition: %v. "
)

// Annotations of the eviction's event, the kubelet's.
const (
	AnnotationOffendingContainers      = "offending_containers"
	AnnotationOffendingContainersUsage = "offending_containers_usage"
	AnnotationStarvedResource          = "starved_resource"
)

func quantity(v int64, res v1.ResourceName) *resource.Quantity {
	if res == v1.ResourceMemory || res == v1.ResourceEphemeralStorage {
		return resource.NewQuantity(v, resource.BinarySI)
	}
	return resource.NewQuantity(v, resource.DecimalSI)
}

// evictionMessage is the kubelet's message for a pod evicted to reclaim
// res: the threshold met and what is left, then each container using more
// of res than it requests; and the event's annotations.
func evictionMessage(res v1.ResourceName, pod *v1.Pod, stats podStatsFunc, met []Threshold, obs observations) (string, map[string]string) {
	var b strings.Builder
	fmt.Fprintf(&b, nodeLowMessageFmt, res)
	for _, t := range met {
		if signalResource(t.Signal) != res {
			continue
		}
		if o, ok := obs[t.Signal]; ok {
			fmt.Fprintf(&b, thresholdMetMessageFmt, quantity(t.Value.amount(o.capacity), res), quantity(o.available, res))
		}
		break
	}
	var containers, usages []string
	if ps, ok := stats(pod); ok {
		for _, cs := range ps.Containers {
			for i := range pod.Spec.Containers {
				c := &pod.Spec.Containers[i]
				if c.Name != cs.Name {
					continue
				}
				request := c.Resources.Requests[res]
				var usage *resource.Quantity
				switch res {
				case v1.ResourceEphemeralStorage:
					if cs.Rootfs != nil && cs.Rootfs.UsedBytes != nil && cs.Logs != nil && cs.Logs.UsedBytes != nil {
						usage = quantity(clampInt64(*cs.Rootfs.UsedBytes)+clampInt64(*cs.Logs.UsedBytes), res)
					}
				case v1.ResourceMemory:
					if cs.Memory != nil && cs.Memory.WorkingSetBytes != nil {
						usage = quantity(clampInt64(*cs.Memory.WorkingSetBytes), res)
					}
				}
				if usage != nil && usage.Cmp(request) > 0 {
					fmt.Fprintf(&b, containerMessageFmt, c.Name, usage.String(), request.String(), res)
					containers = append(containers, c.Name)
					usages = append(usages, usage.String())
				}
			}
		}
	}
	return b.String(), map[string]string{
		AnnotationOffendingContainers:      strings.Join(containers, ","),
		AnnotationOffendingContainersUsage: strings.Join(usages, ","),
		AnnotationStarvedResource:          string(res),
	}
}
