package cri

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podlife/podlife/runtime"
)

// What a node server (agent/server) asks of the runtime for kubectl logs,
// exec, attach and port-forward: the URLs of the runtime's streaming
// server (CRI Exec, Attach and PortForward) and the containers' log files.

// GetExec returns the URL of the runtime's streaming session running cmd
// in the container containerID.
func (r *Runtime) GetExec(ctx context.Context, containerID string, cmd []string, stdin, stdout, stderr, tty bool) (*url.URL, error) {
	cctx, cancel := r.callCtx(ctx, 0)
	defer cancel()
	resp, err := r.rs.Exec(cctx, &runtimeapi.ExecRequest{ContainerId: containerID, Cmd: cmd,
		Stdin: stdin, Stdout: stdout, Stderr: stderr, Tty: tty})
	if err != nil {
		return nil, fmt.Errorf("exec in container %q: %w", containerID, fromGRPC(err))
	}
	return streamURL(resp.GetUrl())
}

// GetAttach returns the URL of the runtime's streaming session attached to
// the container containerID.
func (r *Runtime) GetAttach(ctx context.Context, containerID string, stdin, stdout, stderr, tty bool) (*url.URL, error) {
	cctx, cancel := r.callCtx(ctx, 0)
	defer cancel()
	resp, err := r.rs.Attach(cctx, &runtimeapi.AttachRequest{ContainerId: containerID,
		Stdin: stdin, Stdout: stdout, Stderr: stderr, Tty: tty})
	if err != nil {
		return nil, fmt.Errorf("attach to container %q: %w", containerID, fromGRPC(err))
	}
	return streamURL(resp.GetUrl())
}

// GetPortForward returns the URL of the runtime's port-forward session
// into the ready sandbox of the pod podUID.
func (r *Runtime) GetPortForward(ctx context.Context, podUID types.UID, ports []int32) (*url.URL, error) {
	sbs, err := r.listSandboxes(ctx, &runtimeapi.PodSandboxFilter{
		State:         &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY},
		LabelSelector: map[string]string{LabelPodUID: string(podUID)},
	})
	if err != nil {
		return nil, err
	}
	if len(sbs) == 0 {
		return nil, fmt.Errorf("port-forward to pod %s: no ready sandbox: %w", podUID, runtime.ErrNotFound)
	}
	cctx, cancel := r.callCtx(ctx, 0)
	defer cancel()
	resp, err := r.rs.PortForward(cctx, &runtimeapi.PortForwardRequest{PodSandboxId: sbs[0].GetId(), Port: ports})
	if err != nil {
		return nil, fmt.Errorf("port-forward to pod %s: %w", podUID, fromGRPC(err))
	}
	return streamURL(resp.GetUrl())
}

func streamURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("runtime streaming URL %q: %w", s, runtime.ErrUnknown)
	}
	return u, nil
}

// ContainerLogPath returns the log file of the container containerID, as
// the runtime reports it.
func (r *Runtime) ContainerLogPath(ctx context.Context, containerID string) (string, error) {
	s, err := r.containerStatus(ctx, containerID)
	if err != nil {
		return "", err
	}
	if s.GetLogPath() == "" {
		return "", fmt.Errorf("container %q has no log file: %w", containerID, runtime.ErrNotFound)
	}
	return s.GetLogPath(), nil
}

// ContainerRunning reports whether the container containerID runs; one
// that is gone does not.
func (r *Runtime) ContainerRunning(ctx context.Context, containerID string) (bool, error) {
	s, err := r.containerStatus(ctx, containerID)
	if errors.Is(err, runtime.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return s.GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING, nil
}

func (r *Runtime) containerStatus(ctx context.Context, id string) (*runtimeapi.ContainerStatus, error) {
	cctx, cancel := r.callCtx(ctx, 0)
	defer cancel()
	resp, err := r.rs.ContainerStatus(cctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
	if err != nil {
		return nil, fmt.Errorf("status of container %q: %w", id, fromGRPC(err))
	}
	if resp.GetStatus() == nil {
		return nil, fmt.Errorf("status of container %q: empty: %w", id, runtime.ErrUnknown)
	}
	return resp.GetStatus(), nil
}
