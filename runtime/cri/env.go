package cri

import (
	"fmt"
	"math"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// envContext is what the downward API may read besides the spec.
type envContext struct {
	podIPs  []string
	hostIPs []string
	// allocatable stands in for unset limits (the kubelet's rule).
	allocatable v1.ResourceList
}

// containerEnv builds a container's environment as the kubelet does: in
// order, each value expanded with $(VAR) against the variables before it,
// valueFrom fieldRef and resourceFieldRef resolved.
func containerEnv(pod *v1.Pod, c *v1.Container, ec envContext) (names []string, values map[string]string, err error) {
	values = map[string]string{}
	for _, e := range c.Env {
		var v string
		switch {
		case e.ValueFrom == nil:
			v = expand(e.Value, func(n string) (string, bool) { x, ok := values[n]; return x, ok })
		case e.ValueFrom.FieldRef != nil:
			if v, err = fieldRefValue(pod, e.ValueFrom.FieldRef.FieldPath, ec); err != nil {
				return nil, nil, fmt.Errorf("env %q: %w", e.Name, err)
			}
		case e.ValueFrom.ResourceFieldRef != nil:
			if v, err = resourceFieldValue(pod, c, e.ValueFrom.ResourceFieldRef, ec); err != nil {
				return nil, nil, fmt.Errorf("env %q: %w", e.Name, err)
			}
		default:
			return nil, nil, fmt.Errorf("env %q: valueFrom source not supported", e.Name)
		}
		if _, seen := values[e.Name]; !seen {
			names = append(names, e.Name)
		}
		values[e.Name] = v
	}
	return names, values, nil
}

// fieldRefValue answers the downward API's fieldRef paths the kubelet
// answers for env.
func fieldRefValue(pod *v1.Pod, path string, ec envContext) (string, error) {
	if k, ok := subscript(path, "metadata.labels"); ok {
		return pod.Labels[k], nil
	}
	if k, ok := subscript(path, "metadata.annotations"); ok {
		return pod.Annotations[k], nil
	}
	first := func(l []string) string {
		if len(l) == 0 {
			return ""
		}
		return l[0]
	}
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
	case "status.hostIP":
		return first(ec.hostIPs), nil
	case "status.hostIPs":
		return strings.Join(ec.hostIPs, ","), nil
	case "status.podIP":
		return first(ec.podIPs), nil
	case "status.podIPs":
		return strings.Join(ec.podIPs, ","), nil
	}
	return "", fmt.Errorf("fieldRef %q is not supported", path)
}

// subscript parses prefix['key'].
func subscript(path, prefix string) (string, bool) {
	rest, ok := strings.CutPrefix(path, prefix+"['")
	if !ok {
		return "", false
	}
	return strings.CutSuffix(rest, "']")
}

// resourceFieldValue: limits.* and requests.* of cpu, memory and
// ephemeral-storage, divided by the divisor (default 1) and rounded up;
// an unset limit is the node's allocatable.
func resourceFieldValue(pod *v1.Pod, c *v1.Container, ref *v1.ResourceFieldSelector, ec envContext) (string, error) {
	target := c
	if ref.ContainerName != "" {
		if target = findContainer(pod, ref.ContainerName); target == nil {
			return "", fmt.Errorf("resourceFieldRef: no container %q", ref.ContainerName)
		}
	}
	kind, name, ok := strings.Cut(ref.Resource, ".")
	if !ok || (kind != "limits" && kind != "requests") {
		return "", fmt.Errorf("resourceFieldRef %q is not supported", ref.Resource)
	}
	rn := v1.ResourceName(name)
	if rn != v1.ResourceCPU && rn != v1.ResourceMemory && rn != v1.ResourceEphemeralStorage {
		return "", fmt.Errorf("resourceFieldRef %q is not supported", ref.Resource)
	}
	var q resource.Quantity
	if kind == "limits" {
		var has bool
		if q, has = target.Resources.Limits[rn]; !has {
			q = ec.allocatable[rn]
		}
	} else {
		q = target.Resources.Requests[rn]
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	if rn == v1.ResourceCPU {
		return fmt.Sprint(int64(math.Ceil(float64(q.MilliValue()) / float64(divisor.MilliValue())))), nil
	}
	return fmt.Sprint(int64(math.Ceil(float64(q.Value()) / float64(divisor.Value())))), nil
}

// expand replaces $(NAME) by its value when lookup knows it, "$$" by "$",
// and leaves anything else as written, as the kubelet does.
func expand(in string, lookup func(string) (string, bool)) string {
	if !strings.Contains(in, "$") {
		return in
	}
	var b strings.Builder
	for i := 0; i < len(in); i++ {
		if in[i] != '$' || i+1 == len(in) {
			b.WriteByte(in[i])
			continue
		}
		switch in[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(in[i+2:], ')')
			if end < 0 {
				b.WriteString(in[i:])
				return b.String()
			}
			name := in[i+2 : i+2+end]
			if v, ok := lookup(name); ok {
				b.WriteString(v)
			} else {
				b.WriteString("$(" + name + ")")
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}
