package cri

import (
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podlife/podlife/runtime"
)

// The CRI → runtime conversions. Pure functions, table-tested.

func toTime(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

func toContainerState(s runtimeapi.ContainerState) runtime.ContainerState {
	switch s {
	case runtimeapi.ContainerState_CONTAINER_CREATED:
		return runtime.ContainerStateCreated
	case runtimeapi.ContainerState_CONTAINER_RUNNING:
		return runtime.ContainerStateRunning
	case runtimeapi.ContainerState_CONTAINER_EXITED:
		return runtime.ContainerStateExited
	default:
		return runtime.ContainerStateUnknown
	}
}

// sandboxContainerState: a ready sandbox is "running", any other "exited".
func sandboxContainerState(s runtimeapi.PodSandboxState) runtime.ContainerState {
	if s == runtimeapi.PodSandboxState_SANDBOX_READY {
		return runtime.ContainerStateRunning
	}
	return runtime.ContainerStateExited
}

func toSandboxState(s runtimeapi.PodSandboxState) runtime.SandboxState {
	if s == runtimeapi.PodSandboxState_SANDBOX_READY {
		return runtime.SandboxStateReady
	}
	return runtime.SandboxStateNotReady
}

func toContainer(runtimeName string, c *runtimeapi.Container) *runtime.Container {
	name := c.GetLabels()[LabelContainerName]
	if name == "" {
		name = c.GetMetadata().GetName()
	}
	return &runtime.Container{
		ID:        runtime.ContainerID{Type: runtimeName, ID: c.GetId()},
		Name:      name,
		Image:     c.GetImage().GetImage(),
		ImageID:   c.GetImageRef(),
		Hash:      hashFromAnnotations(c.GetAnnotations()),
		State:     toContainerState(c.GetState()),
		CreatedAt: toTime(c.GetCreatedAt()),
		Attempt:   c.GetMetadata().GetAttempt(),
		SandboxID: c.GetPodSandboxId(),
	}
}

func toSandboxContainer(runtimeName string, sb *runtimeapi.PodSandbox) *runtime.Container {
	return &runtime.Container{
		ID:        runtime.ContainerID{Type: runtimeName, ID: sb.GetId()},
		State:     sandboxContainerState(sb.GetState()),
		CreatedAt: toTime(sb.GetCreatedAt()),
		Attempt:   sb.GetMetadata().GetAttempt(),
	}
}

func toContainerStatus(runtimeName string, s *runtimeapi.ContainerStatus) *runtime.ContainerStatus {
	info := infoFromAnnotations(s.GetAnnotations())
	name := s.GetLabels()[LabelContainerName]
	if name == "" {
		name = s.GetMetadata().GetName()
	}
	return &runtime.ContainerStatus{
		ID:           runtime.ContainerID{Type: runtimeName, ID: s.GetId()},
		Name:         name,
		State:        toContainerState(s.GetState()),
		CreatedAt:    toTime(s.GetCreatedAt()),
		StartedAt:    toTime(s.GetStartedAt()),
		FinishedAt:   toTime(s.GetFinishedAt()),
		ExitCode:     int(s.GetExitCode()),
		Image:        s.GetImage().GetImage(),
		ImageID:      s.GetImageRef(),
		Hash:         info.Hash,
		RestartCount: info.RestartCount,
		Reason:       s.GetReason(),
		Message:      s.GetMessage(),
	}
}

func toSandboxStatus(s *runtimeapi.PodSandboxStatus) *runtime.SandboxStatus {
	st := &runtime.SandboxStatus{
		ID:        s.GetId(),
		State:     toSandboxState(s.GetState()),
		CreatedAt: toTime(s.GetCreatedAt()),
		Attempt:   s.GetMetadata().GetAttempt(),
	}
	if ip := s.GetNetwork().GetIp(); ip != "" {
		st.IPs = append(st.IPs, ip)
	}
	for _, ip := range s.GetNetwork().GetAdditionalIps() {
		if ip.GetIp() != "" {
			st.IPs = append(st.IPs, ip.GetIp())
		}
	}
	if s.GetLinux().GetNamespaces().GetOptions().GetNetwork() == runtimeapi.NamespaceMode_NODE {
		st.Network = "node"
	}
	return st
}
