package podworker

import (
	v1 "k8s.io/api/core/v1"
)

// DefaultTerminationGracePeriodSeconds is used for a pod whose spec leaves
// TerminationGracePeriodSeconds unset (the API server's default).
const DefaultTerminationGracePeriodSeconds int64 = v1.DefaultTerminationGracePeriodSeconds

// MinGracePeriodSeconds is the smallest effective grace period.
const MinGracePeriodSeconds int64 = 1

// EffectiveGracePeriod folds a kill into the current grace period of a
// terminating pod and returns the new one. current is 0 before termination
// started. pod may be nil (a runtime-only pod); override is the kill's
// PodTerminationGracePeriodSecondsOverride.
//
// The rules are the kubelet's: the pod's deletion grace period, then the
// override, are taken when nothing is set yet or when they are shorter; if
// neither applied and nothing is set, the spec's grace period is used
// (DefaultTerminationGracePeriodSeconds when unset; nothing for a pod without
// spec); the result is at least MinGracePeriodSeconds. So the grace period
// can only shrink. shortened reports that an already set value changed.
func EffectiveGracePeriod(current int64, pod *v1.Pod, override *int64) (gracePeriod int64, shortened bool) {
	// "Set" is tracked apart from the value: the kubelet treats a working
	// value of 0 as "nothing set yet", so after a deletion grace period of 0
	// a later, longer override would win and the grace period would grow.
	gp, set := current, current != 0
	take := func(v int64) {
		if !set || v < gp {
			gp, set = v, true
		}
	}
	if pod != nil && pod.DeletionGracePeriodSeconds != nil {
		take(*pod.DeletionGracePeriodSeconds)
	}
	if override != nil {
		take(*override)
	}
	if !set && pod != nil {
		if pod.Spec.TerminationGracePeriodSeconds != nil {
			gp = *pod.Spec.TerminationGracePeriodSeconds
		} else {
			gp = DefaultTerminationGracePeriodSeconds
		}
	}
	if gp < MinGracePeriodSeconds {
		gp = MinGracePeriodSeconds
	}
	return gp, current != 0 && gp != current
}
