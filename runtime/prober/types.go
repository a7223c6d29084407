package prober

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// ProbeType names one of the three probes of a container.
type ProbeType int

// The probe types, named as in the kubelet's metrics.
const (
	Startup ProbeType = iota
	Liveness
	Readiness
)

func (t ProbeType) String() string {
	switch t {
	case Startup:
		return "Startup"
	case Liveness:
		return "Liveness"
	case Readiness:
		return "Readiness"
	}
	return "ProbeType(?)"
}

// Result is the outcome of a probe, or the published state of one.
type Result int

const (
	// Unknown: not probed yet (a startup probe before its first verdict), or
	// the probe could not be run (an error of the runtime, not of the
	// container); an Unknown outcome changes no state.
	Unknown Result = iota
	// Success: the probe passed (successThreshold times in a row).
	Success
	// Failure: the probe failed (failureThreshold times in a row).
	Failure
)

// warning is what a probe returns for a success that deserves a word (the
// kubelet's probe.Warning: an HTTP probe whose redirect to another host was
// not followed). It is published as Success, and Options.OnWarning hears of
// it at every probe that ends so.
const warning Result = -1

func (r Result) String() string {
	switch r {
	case Success:
		return "Success"
	case Failure:
		return "Failure"
	}
	return "Unknown"
}

// Update is a change of the published result of one probe of one container
// instance, delivered to Options.OnResult.
type Update struct {
	PodUID        types.UID
	PodName       string
	PodNamespace  string
	ContainerName string
	// ContainerID is the instance the result is about (as given to
	// SetContainers).
	ContainerID string
	Probe       ProbeType
	Result      Result
	// Output is what the last probe said (exec stdout and stderr, an HTTP
	// body or status, an error), at most 10 KiB.
	Output string
	// TerminationGracePeriodSeconds is the probe's own grace period
	// (spec.containers[].{liveness,startup}Probe.terminationGracePeriodSeconds)
	// for the kill that follows a liveness or startup Failure; nil when the
	// probe does not set one (then the pod's applies).
	TerminationGracePeriodSeconds *int64
}

// RunningContainer is a running instance of a container, as the agent's
// last runtime status saw it.
type RunningContainer struct {
	// ID identifies the instance (the runtime's container ID). A new ID is a
	// new instance: its probes start over.
	ID string
	// StartedAt is when the instance started; initialDelaySeconds counts
	// from it. Zero means "when the manager first saw this ID".
	StartedAt time.Time
}

// Request is one probe of one container instance, for Options.Probe.
type Request struct {
	PodUID       types.UID
	PodName      string
	PodNamespace string
	// Container is the container's spec. Read-only.
	Container *v1.Container
	// ContainerID is the instance probed (as given to SetContainers), and
	// StartedAt when it started (zero when the manager was not told).
	ContainerID string
	StartedAt   time.Time
	// Probe is the probe as the container's spec gives it, with the
	// defaults of its zero fields applied. Read-only.
	Probe *v1.Probe
	Type  ProbeType
	// PodIP is the pod's IP, "" when it has none yet.
	PodIP string
	// Timeout is the probe's timeoutSeconds; ctx ends with it.
	Timeout time.Duration
}
