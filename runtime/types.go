package runtime

import (
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// ContainerID identifies a container (or a sandbox) inside a runtime: the
// runtime's name ("containerd", "cri-o", "fakecri", …) and its own ID.
type ContainerID struct {
	Type string
	ID   string
}

// String returns the "type://id" form the kubelet uses in pod statuses.
func (c ContainerID) String() string {
	if c.Type == "" {
		return c.ID
	}
	return c.Type + "://" + c.ID
}

// ParseContainerID reads the "type://id" form of String (a bare ID has no
// type).
func ParseContainerID(s string) ContainerID {
	if t, id, ok := strings.Cut(s, "://"); ok {
		return ContainerID{Type: t, ID: id}
	}
	return ContainerID{ID: s}
}

// IsEmpty reports whether the ID is unset.
func (c ContainerID) IsEmpty() bool { return c == ContainerID{} }

// ContainerState is the runtime state of a container or a sandbox.
type ContainerState string

// Container and sandbox states. A sandbox is either Running (ready) or Exited
// (not ready).
const (
	ContainerStateCreated ContainerState = "created"
	ContainerStateRunning ContainerState = "running"
	ContainerStateExited  ContainerState = "exited"
	ContainerStateUnknown ContainerState = "unknown"
)

// Container is a container, or a pod sandbox, as listed by the runtime.
type Container struct {
	ID        ContainerID
	Name      string
	Image     string
	ImageID   string
	Hash      uint64 // hash of the container spec it was created from
	State     ContainerState
	CreatedAt time.Time
	// Attempt is the runtime's attempt number of the container or sandbox
	// (its restart count when podlife created it), the order in which
	// garbage collection keeps instances; SandboxID is the sandbox of a
	// container ("" for a sandbox). Both are what the listing gives.
	Attempt   uint32
	SandboxID string
}

// Pod is a pod as the runtime knows it: a group of sandboxes and containers
// that carry the same pod UID. It has no spec. A Pod that the pod workers do
// not know is a "runtime-only" (orphaned) pod.
type Pod struct {
	ID         types.UID
	Name       string
	Namespace  string
	CreatedAt  time.Time
	Containers []*Container
	Sandboxes  []*Container
	// Timestamp is when the runtime was listed to build this value.
	Timestamp time.Time
}

// FullName returns name_namespace, the same form as podmanager.FullName.
func (p *Pod) FullName() string { return p.Name + "_" + p.Namespace }

// IsEmpty reports whether the pod has no containers and no sandboxes.
func (p *Pod) IsEmpty() bool { return len(p.Containers) == 0 && len(p.Sandboxes) == 0 }

// ToAPIPod returns a minimal v1.Pod for p: UID, name, namespace and the
// containers' names and images. It carries no spec beyond that and must never
// be mistaken for a desired pod.
func (p *Pod) ToAPIPod() *v1.Pod {
	pod := &v1.Pod{}
	pod.UID = p.ID
	pod.Name = p.Name
	pod.Namespace = p.Namespace
	for _, c := range p.Containers {
		pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: c.Name, Image: c.Image})
	}
	return pod
}

// FindContainerByName returns the first container with the given name, or nil.
func (p *Pod) FindContainerByName(name string) *Container {
	for _, c := range p.Containers {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// ContainerStatus is the observed status of one container instance.
type ContainerStatus struct {
	ID           ContainerID
	Name         string
	State        ContainerState
	CreatedAt    time.Time
	StartedAt    time.Time
	FinishedAt   time.Time
	ExitCode     int
	Image        string
	ImageID      string
	Hash         uint64
	RestartCount int
	Reason       string
	Message      string
}

// SandboxState is the state of a pod sandbox.
type SandboxState string

// Sandbox states, as the CRI names them.
const (
	SandboxStateReady    SandboxState = "SANDBOX_READY"
	SandboxStateNotReady SandboxState = "SANDBOX_NOTREADY"
)

// SandboxStatus is the observed status of one pod sandbox.
type SandboxStatus struct {
	ID        string
	State     SandboxState
	CreatedAt time.Time
	IPs       []string
	Attempt   uint32
	// Network is "node" when the sandbox uses the node's network namespace.
	Network string
}

// PodStatus is the observed status of a pod in the runtime.
type PodStatus struct {
	ID                types.UID
	Name              string
	Namespace         string
	IPs               []string
	ContainerStatuses []*ContainerStatus
	SandboxStatuses   []*SandboxStatus
	// TimeStamp is when the status was read from the runtime.
	TimeStamp time.Time
}

// FindContainerStatusByName returns the newest status of the named container,
// or nil.
func (s *PodStatus) FindContainerStatusByName(name string) *ContainerStatus {
	var found *ContainerStatus
	for _, c := range s.ContainerStatuses {
		if c.Name != name {
			continue
		}
		if found == nil || c.CreatedAt.After(found.CreatedAt) {
			found = c
		}
	}
	return found
}

// HasRunningContainers reports whether any container is running or may still
// be running (state unknown).
func (s *PodStatus) HasRunningContainers() bool {
	for _, c := range s.ContainerStatuses {
		if c.State == ContainerStateRunning || c.State == ContainerStateUnknown {
			return true
		}
	}
	return false
}

// HasReadySandbox reports whether any sandbox is ready.
func (s *PodStatus) HasReadySandbox() bool {
	for _, sb := range s.SandboxStatuses {
		if sb.State == SandboxStateReady {
			return true
		}
	}
	return false
}

// IsTerminal reports whether nothing of the pod runs in the runtime: no
// running container and no ready sandbox. An empty status (a cache miss) is
// terminal.
func (s *PodStatus) IsTerminal() bool {
	return !s.HasRunningContainers() && !s.HasReadySandbox()
}

// String summarises the status for logs.
func (s *PodStatus) String() string {
	return fmt.Sprintf("%s/%s(%s): %d containers, %d sandboxes", s.Namespace, s.Name, s.ID, len(s.ContainerStatuses), len(s.SandboxStatuses))
}
