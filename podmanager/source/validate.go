package source

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// ValidatePod checks what the pod lifecycle needs from a pod: a DNS-1123
// subdomain name, a DNS-1123 label namespace, a UID, at least one container,
// init and regular containers with unique DNS-1123 label names and an
// image, and grace periods and deadlines the API server would accept (a
// negative terminationGracePeriodSeconds is refused). The error wraps
// ErrInvalidPod and lists every problem, each naming its field.
func ValidatePod(pod *v1.Pod) error {
	if pod == nil {
		return fmt.Errorf("%w: nil pod", ErrInvalidPod)
	}
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }

	if pod.Name == "" {
		add("metadata.name: required")
	} else if msgs := validation.IsDNS1123Subdomain(pod.Name); len(msgs) > 0 {
		add("metadata.name %q: %s", pod.Name, strings.Join(msgs, ", "))
	}
	if pod.Namespace == "" {
		add("metadata.namespace: required")
	} else if msgs := validation.IsDNS1123Label(pod.Namespace); len(msgs) > 0 {
		add("metadata.namespace %q: %s", pod.Namespace, strings.Join(msgs, ", "))
	}
	if pod.UID == "" {
		add("metadata.uid: required")
	}
	if len(pod.Spec.Containers) == 0 {
		add("spec.containers: at least one container is required")
	}
	names := make(map[string]bool, len(pod.Spec.InitContainers)+len(pod.Spec.Containers))
	check := func(field string, containers []v1.Container) {
		for i, c := range containers {
			path := fmt.Sprintf("%s[%d]", field, i)
			switch {
			case c.Name == "":
				add("%s.name: required", path)
			case names[c.Name]:
				add("%s.name %q: duplicate container name", path, c.Name)
			default:
				if msgs := validation.IsDNS1123Label(c.Name); len(msgs) > 0 {
					add("%s.name %q: %s", path, c.Name, strings.Join(msgs, ", "))
				}
			}
			names[c.Name] = true
			if strings.TrimSpace(c.Image) == "" {
				add("%s.image: required", path)
			}
		}
	}
	check("spec.initContainers", pod.Spec.InitContainers)
	check("spec.containers", pod.Spec.Containers)
	// As the API server: a grace period may be 0 (kill at once) but not
	// negative; a huge one is valid (the runtime bounds what a kill waits).
	if g := pod.Spec.TerminationGracePeriodSeconds; g != nil && *g < 0 {
		add("spec.terminationGracePeriodSeconds: must be greater than or equal to 0, got %d", *g)
	}
	if d := pod.Spec.ActiveDeadlineSeconds; d != nil && *d <= 0 {
		add("spec.activeDeadlineSeconds: must be greater than 0, got %d", *d)
	}
	probes := func(field string, containers []v1.Container) {
		for i, c := range containers {
			for _, p := range []struct {
				name  string
				probe *v1.Probe
			}{{"livenessProbe", c.LivenessProbe}, {"startupProbe", c.StartupProbe}} {
				if p.probe != nil && p.probe.TerminationGracePeriodSeconds != nil && *p.probe.TerminationGracePeriodSeconds <= 0 {
					add("%s[%d].%s.terminationGracePeriodSeconds: must be greater than 0, got %d", field, i, p.name, *p.probe.TerminationGracePeriodSeconds)
				}
			}
		}
	}
	probes("spec.initContainers", pod.Spec.InitContainers)
	probes("spec.containers", pod.Spec.Containers)
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", ErrInvalidPod, strings.Join(problems, "; "))
	}
	return nil
}
