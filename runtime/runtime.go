package runtime

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Runtime is what a node agent's Syncer needs from a container runtime. It is
// expressed in podlife's own types; runtime/cri implements it over the CRI.
//
// Every method takes ctx first and returns once ctx is done at the latest.
// Errors wrap one of this package's sentinel errors (ErrNotFound,
// ErrUnavailable, …) so that callers classify them with errors.Is.
type Runtime interface {
	// GetPods lists the pods the runtime knows, grouped by pod UID. With all
	// false, only pods with a running container or a ready sandbox are
	// returned; with all true, exited ones too.
	GetPods(ctx context.Context, all bool) ([]*Pod, error)
	// GetPodStatus reads the status of every sandbox and container of the pod.
	// A pod the runtime does not know gives an empty status (ID, Name and
	// Namespace set) and no error.
	GetPodStatus(ctx context.Context, uid types.UID, name, namespace string) (*PodStatus, error)
	// SyncPod makes the runtime match pod's spec, given podStatus (as recently
	// read by GetPodStatus; nil means "read it now"): it creates the sandbox
	// when none is ready, makes sure the images are present, creates and starts
	// missing containers and restarts exited ones as the restart policy says,
	// with a per-container crash-loop back-off. It returns an error wrapping
	// ErrBackOff when a restart was deferred by the back-off; the caller should
	// sync again later.
	SyncPod(ctx context.Context, pod *v1.Pod, podStatus *PodStatus) error
	// KillPod stops every running container of the pod, each with its grace
	// period (gracePeriodOverride, when set, replaces the pod's), then stops
	// its sandboxes. pod may be nil for a pod known only to the runtime; then
	// runningPod is used alone. A container or sandbox that vanished counts as
	// stopped.
	KillPod(ctx context.Context, pod *v1.Pod, runningPod *Pod, gracePeriodOverride *int64) error
	// RemovePod removes the containers and sandboxes of a pod whose containers
	// have all stopped. A vanished object counts as removed.
	RemovePod(ctx context.Context, runningPod *Pod) error
	// Status reports the runtime's readiness conditions.
	Status(ctx context.Context) (*Status, error)
	// Version reports the runtime's name and versions.
	Version(ctx context.Context) (*VersionInfo, error)
}

// Runtime condition types, as the CRI names them.
const (
	ConditionRuntimeReady = "RuntimeReady"
	ConditionNetworkReady = "NetworkReady"
)

// Condition is one runtime readiness condition.
type Condition struct {
	Type    string
	Status  bool
	Reason  string
	Message string
}

// Status is the runtime's overall status.
type Status struct {
	Conditions []Condition
}

// Condition returns the condition of the given type, or nil.
func (s *Status) Condition(t string) *Condition {
	for i := range s.Conditions {
		if s.Conditions[i].Type == t {
			return &s.Conditions[i]
		}
	}
	return nil
}

// RuntimeReady reports whether the RuntimeReady condition is true. (Without a
// CNI network, NetworkReady is false and host-network pods still run.)
func (s *Status) RuntimeReady() bool {
	c := s.Condition(ConditionRuntimeReady)
	return c != nil && c.Status
}

// VersionInfo names the runtime and the versions it speaks.
type VersionInfo struct {
	RuntimeName    string // "containerd", "cri-o", "fakecri"
	RuntimeVersion string // the runtime's own version
	APIVersion     string // the CRI API version, "v1"
}
