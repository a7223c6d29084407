package server

import (
	"context"
	"net/url"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// What the Server needs from the rest of the agent. Each is small so that an
// agent whose pods do not run on a CRI runtime can give its own; runtime/cri
// implements ContainerLogs, Streaming, CommandRunner and PodStats.
//
// Errors: an error wrapping runtime.ErrNotFound becomes 404, one wrapping
// runtime.ErrUnavailable (or a cancelled or timed-out runtime call) 503.

// PodLister lists the pods the agent runs, with their latest status: the
// pods /pods serves and the ones the other endpoints look names up in.
type PodLister interface {
	ListPods() []*v1.Pod
}

// PodListerFunc adapts a function to a PodLister.
type PodListerFunc func() []*v1.Pod

// ListPods calls f.
func (f PodListerFunc) ListPods() []*v1.Pod { return f() }

var _ PodLister = PodListerFunc(nil)

// ContainerLogs finds the CRI log file of a container instance. The Server
// reads it with k8s.io/cri-client/pkg/logs, as the kubelet does, so the file
// must be in the CRI log format ("TIMESTAMP STREAM P|F CONTENT").
type ContainerLogs interface {
	// ContainerLogPath returns the log file of the container whose
	// runtime ID (the part of a status containerID after "://") is
	// containerID.
	ContainerLogPath(ctx context.Context, containerID string) (string, error)
	// ContainerRunning reports whether the container still runs: a
	// followed log ends once it does not. A container that is gone is not
	// running (false, nil).
	ContainerRunning(ctx context.Context, containerID string) (bool, error)
}

// Streaming gives the URL of a streaming session that the runtime serves
// (CRI Exec, Attach and PortForward return one); the Server proxies the
// client's upgraded connection to it.
type Streaming interface {
	GetExec(ctx context.Context, containerID string, cmd []string, stdin, stdout, stderr, tty bool) (*url.URL, error)
	GetAttach(ctx context.Context, containerID string, stdin, stdout, stderr, tty bool) (*url.URL, error)
	GetPortForward(ctx context.Context, podUID types.UID, ports []int32) (*url.URL, error)
}

// CommandRunner runs a command in a container and returns its output, for
// /run (runtime/cri's ExecSync).
type CommandRunner interface {
	ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (stdout, stderr []byte, exitCode int32, err error)
}

// PodStats gives the CPU and memory figures of the pods the runtime runs,
// for /stats/summary and /metrics/resource: one statsapi.PodStats per pod
// (PodRef, StartTime, Containers with their CPU and Memory, and the pod's
// own CPU and Memory when known).
type PodStats interface {
	ListPodStats(ctx context.Context) ([]statsapi.PodStats, error)
}

// NodeStats gives the node's own figures (CPU, memory) for the summary.
type NodeStats interface {
	NodeStats(ctx context.Context) (statsapi.NodeStats, error)
}
