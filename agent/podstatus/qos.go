package podstatus

import (
	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/runtime"
)

// QOSClass returns the pod's QoS class as the kubelet's GetPodQOS does; it
// is runtime.QOSClass (the runtime adapter needs it too, for OOM scores),
// kept here for the status generator's callers.
func QOSClass(pod *v1.Pod) v1.PodQOSClass { return runtime.QOSClass(pod) }
