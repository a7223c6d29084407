package envvars

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// PodFieldValue is the value of a downward-API fieldRef of pod, as the
// kubelet gives it to env vars and downwardAPI volumes: metadata.name,
// .namespace, .uid, .labels['k'], .annotations['k'], metadata.labels and
// metadata.annotations (all, as sorted k="v" lines), spec.nodeName,
// spec.serviceAccountName, status.podIP (the first of podIPs),
// status.podIPs and status.hostIPs (comma-separated), status.hostIP (the
// first of hostIPs). An IP that is not known yet is "" for the pod, an
// error for the host (as in the kubelet, which then retries).
func PodFieldValue(pod *v1.Pod, path string, podIPs, hostIPs []string) (string, error) {
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "metadata.labels":
		return formatMap(pod.Labels), nil
	case "metadata.annotations":
		return formatMap(pod.Annotations), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.podIP":
		if len(podIPs) == 0 {
			return "", nil
		}
		return podIPs[0], nil
	case "status.podIPs":
		return strings.Join(podIPs, ","), nil
	case "status.hostIP", "status.hostIPs":
		if len(hostIPs) == 0 {
			return "", fmt.Errorf("%s: the node's IPs are not known", path)
		}
		if path == "status.hostIP" {
			return hostIPs[0], nil
		}
		return strings.Join(hostIPs, ","), nil
	}
	for prefix, m := range map[string]map[string]string{"metadata.labels": pod.Labels, "metadata.annotations": pod.Annotations} {
		if rest, ok := strings.CutPrefix(path, prefix+"['"); ok && strings.HasSuffix(rest, "']") {
			return m[strings.TrimSuffix(rest, "']")], nil
		}
	}
	return "", fmt.Errorf("unsupported fieldPath: %v", path)
}

// formatMap is the kubelet's downward-API form of a map: k="v" lines
// (Go-quoted values), sorted by key, without a final newline.
func formatMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	lines := make([]string, len(keys))
	for i, k := range keys {
		lines[i] = fmt.Sprintf("%s=%q", k, m[k])
	}
	return strings.Join(lines, "\n")
}

// ResourceValue is the value of a resourceFieldRef, as the kubelet gives
// it: the request or limit (limits.cpu, requests.memory,
// limits.ephemeral-storage, hugepages-*) of the container the selector
// names (else c) divided by the divisor (default 1) and rounded up. A
// limit the container does not set is the node's allocatable (when known):
// the kubelet's defaultPodLimitsForDownwardAPI. A request not set is 0.
func ResourceValue(pod *v1.Pod, c *v1.Container, ref *v1.ResourceFieldSelector, allocatable v1.ResourceList) (string, error) {
	target := c
	if ref.ContainerName != "" {
		target = nil
		for _, list := range [][]v1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
			for i := range list {
				if list[i].Name == ref.ContainerName && target == nil {
					target = &list[i]
				}
			}
		}
		if target == nil {
			return "", fmt.Errorf("container %s not found", ref.ContainerName)
		}
	}
	if target == nil {
		return "", fmt.Errorf("resourceFieldRef %q: no containerName", ref.Resource)
	}
	kind, name, _ := strings.Cut(ref.Resource, ".")
	rn := v1.ResourceName(name)
	known := rn == v1.ResourceCPU || rn == v1.ResourceMemory || rn == v1.ResourceEphemeralStorage || strings.HasPrefix(name, v1.ResourceHugePagesPrefix)
	if !known || (kind != "limits" && kind != "requests") {
		return "", fmt.Errorf("unsupported container resource : %v", ref.Resource)
	}
	var q resource.Quantity
	if kind == "requests" {
		q = target.Resources.Requests[rn]
	} else {
		var ok bool
		q, ok = target.Resources.Limits[rn]
		if (!ok || q.IsZero()) && !strings.HasPrefix(name, v1.ResourceHugePagesPrefix) {
			q = allocatable[rn]
		}
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	var v int64
	if rn == v1.ResourceCPU {
		v = int64(math.Ceil(float64(q.MilliValue()) / float64(divisor.MilliValue())))
	} else {
		v = int64(math.Ceil(float64(q.Value()) / float64(divisor.Value())))
	}
	return strconv.FormatInt(v, 10), nil
}
