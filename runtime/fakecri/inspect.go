package fakecri

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ErrNoSuchObject is returned by the test helpers below for an unknown ID.
var ErrNoSuchObject = errors.New("fakecri: no such sandbox or container")

// ExitContainer makes a running container's process exit by itself with code,
// as a crash or a completed job does.
func (s *Server) ExitContainer(id string, code int32) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.containers[id]
	if !ok {
		return fmt.Errorf("exit container %q: %w", id, ErrNoSuchObject)
	}
	if c.state != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return fmt.Errorf("exit container %q: it is %s, not running", id, c.state)
	}
	s.exitLocked(c, code, exitReason(code), "")
	return nil
}

// Forget makes the runtime lose a container, or a sandbox with its
// containers, without any call: later calls about it answer NotFound.
func (s *Server) Forget(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.containers[id]; ok {
		s.removeContainerLocked(c)
		return nil
	}
	if sb, ok := s.sandboxes[id]; ok {
		s.removeSandboxLocked(sb)
		return nil
	}
	return fmt.Errorf("forget %q: %w", id, ErrNoSuchObject)
}

// Counts returns how many sandboxes and containers exist, in any state.
func (s *Server) Counts() (sandboxes, containers int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sandboxes), len(s.containers)
}

// HasImage reports whether ref (a tag or an image ID) is present.
func (s *Server) HasImage(ref string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.findImageLocked(ref) != nil
}

// StopTimeout returns the timeout (grace period, seconds) of the last
// StopContainer call for a container.
func (s *Server) StopTimeout(containerID string) (seconds int64, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	seconds, ok = s.stopTimes[containerID]
	return seconds, ok
}

// StopSandbox stops a sandbox behind the client's back (its processes
// died): the sandbox becomes NOTREADY and its containers exit with 137.
func (s *Server) StopSandbox(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sb, ok := s.sandboxes[id]
	if !ok {
		return fmt.Errorf("stop sandbox %q: %w", id, ErrNoSuchObject)
	}
	s.stopSandboxLocked(sb)
	return nil
}

// RunningCounts returns how many sandboxes are ready and how many containers
// are running.
func (s *Server) RunningCounts() (readySandboxes, runningContainers int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sb := range s.sandboxes {
		if sb.state == runtimeapi.PodSandboxState_SANDBOX_READY {
			readySandboxes++
		}
	}
	for _, c := range s.containers {
		if c.state == runtimeapi.ContainerState_CONTAINER_RUNNING {
			runningContainers++
		}
	}
	return readySandboxes, runningContainers
}

// ContainerConfig returns a copy of the config a container was created
// with, as CreateContainer received it.
func (s *Server) ContainerConfig(id string) (*runtimeapi.ContainerConfig, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.containers[id]
	if !ok {
		return nil, fmt.Errorf("container config %q: %w", id, ErrNoSuchObject)
	}
	return proto.Clone(c.config).(*runtimeapi.ContainerConfig), nil
}

// SandboxConfig returns a copy of the config a sandbox was created with, as
// RunPodSandbox received it.
func (s *Server) SandboxConfig(id string) (*runtimeapi.PodSandboxConfig, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sb, ok := s.sandboxes[id]
	if !ok {
		return nil, fmt.Errorf("sandbox config %q: %w", id, ErrNoSuchObject)
	}
	return proto.Clone(sb.config).(*runtimeapi.PodSandboxConfig), nil
}
