package podstatus

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/runtime"
)

// ProbeType names the probes whose results shape a container's status.
type ProbeType string

// The probes Generate asks about. Liveness does not shape a status: its
// failure kills the container, and the status shows that.
const (
	Startup   ProbeType = "startup"
	Readiness ProbeType = "readiness"
)

// ProbeResultFunc returns the newest result of a probe of one container
// instance: success, and whether there is a result at all. containerID is
// the instance's runtime.ContainerID.String(), so the result of an old
// instance never applies to its restarted successor (a prober keyed by
// instance, as the kubelet's results manager is, answers exactly that).
//
// Generate asks only about probes that the container's spec defines. A
// probe with no result yet counts as not passed: a container with a startup
// probe is not started, one with a readiness probe is not ready.
type ProbeResultFunc func(podUID types.UID, containerName, containerID string, probe ProbeType) (success, known bool)

// Input is everything Generate reads. Generate never modifies it.
type Input struct {
	// Pod is the pod as the agent runs it: its spec, generation and, in
	// Status, the status last seen in the API (conditions other components
	// own, a terminal phase that may not be left). Required.
	Pod *v1.Pod
	// Runtime is what the runtime shows of the pod: every instance of every
	// container (newest first or not: Generate sorts by CreatedAt) and its
	// sandboxes. Nil means nothing runs yet.
	Runtime *runtime.PodStatus
	// Previous is the status generated and published before this one (the
	// kubelet's status manager cache). It keeps lastTransitionTime,
	// startTime, restart counts and a terminal phase across calls. Nil
	// means none: Pod.Status is used in its place, as the kubelet does.
	Previous *v1.PodStatus
	// NodeIPs are the node's addresses, primary first (at most two are
	// used: one per IP family). They become hostIP/hostIPs, and the podIPs
	// of a pod on the node's network. Empty: the previous hostIPs are kept.
	NodeIPs []string
	// Terminal says that no container of the pod runs or will run again
	// (the pod worker's terminated state): containers of an initialized
	// pod that did not finish are reported as terminated with
	// ContainerStatusUnknown (exit 137) and the phase is Succeeded or
	// Failed.
	Terminal bool
	// ProbeResult answers for startup and readiness probes. Nil means that
	// no prober runs: probes in the spec then gate nothing (a running
	// container is started and ready), as before podlife ran probes. Set, a
	// probe without a result yet has not passed.
	ProbeResult ProbeResultFunc
	// BackOff maps the name of a container whose restart the runtime
	// deferred (crash-loop back-off) to the back-off message, e.g.
	// "back-off 20s restarting failed container=web pod=web_default(uid)".
	// Such a container is Waiting with reason CrashLoopBackOff.
	BackOff map[string]string
	// StartFailures maps the name of a container whose newest start failed
	// for another reason to that reason and message (the kubelet's reason
	// cache: ErrImagePull, ImagePullBackOff, CreateContainerConfigError,
	// CreateContainerError, RunContainerError, ...). BackOff wins over it.
	StartFailures map[string]v1.ContainerStateWaiting
	// Now is the time of the call: the lastTransitionTime of a condition
	// that changes and the startTime of a pod that has none. Generate reads
	// no clock.
	Now time.Time
}

// Reasons and messages Generate writes, as the kubelet writes them.
const (
	ReasonContainerCreating  = "ContainerCreating"
	ReasonPodInitializing    = "PodInitializing"
	ReasonCrashLoopBackOff   = "CrashLoopBackOff"
	ReasonStatusUnknown      = "ContainerStatusUnknown"
	ReasonCompleted          = "Completed"
	ReasonError              = "Error"
	ReasonOOMKilled          = "OOMKilled"
	ReasonContainersNotReady = "ContainersNotReady"
	ReasonNotInitialized     = "ContainersNotInitialized"
	ReasonUnknownStatuses    = "UnknownContainerStatuses"
	ReasonReadinessGates     = "ReadinessGatesNotReady"
	ReasonPodCompleted       = "PodCompleted"
	ReasonPodFailed          = "PodFailed"
	ReasonSandboxNotReady    = "PodSandboxNotReady"

	// ExitCodeUnknown is the exit code of a container whose end was not
	// seen (the kubelet reports 137, as for a SIGKILL).
	ExitCodeUnknown = 137

	msgNotLocatedTerminated = "The container could not be located when the pod was terminated"
	msgNotLocatedDeleted    = "The container could not be located when the pod was deleted.  The container used to be Running"
	msgInitAssumedDone      = "Unable to get init container status from container runtime and pod has been initialized, treat it as exited normally"

	// maxTerminationMessage is the kubelet's budget for the termination
	// messages of a pod, shared between its containers.
	maxTerminationMessage = 12 * 1024
)
