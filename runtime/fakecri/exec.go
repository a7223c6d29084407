package fakecri

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ExecRequest is one ExecSync call as an ExecFunc sees it.
type ExecRequest struct {
	// ContainerID is the container the command runs in; it exists and runs.
	ContainerID string
	// PodUID and ContainerName come from the container's kubelet labels
	// (io.kubernetes.pod.uid, io.kubernetes.container.name), when present.
	PodUID, ContainerName string
	// Cmd is the command and its arguments.
	Cmd []string
	// Timeout is the request's timeout; zero means none.
	Timeout time.Duration
}

// ExecResult is what an ExecFunc answers: the command's output and exit code.
type ExecResult struct {
	Stdout, Stderr []byte
	ExitCode       int32
}

// ExecFunc answers the ExecSync calls of a test. ctx is done when the
// request's timeout passes or the client goes away. A returned error becomes
// the call's gRPC error (use status.Error for a particular code). Calls run
// concurrently; the server holds no lock while calling it.
type ExecFunc func(ctx context.Context, req ExecRequest) (ExecResult, error)

// SetExec makes f answer ExecSync in every running container, in place of
// the built-in commands, until the returned remove is called (which restores
// the previous function).
func (s *Server) SetExec(f ExecFunc) (remove func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	prev := s.exec
	s.exec = f
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.exec = prev
	}
}

// ExecSync runs a command in a running container: the test's ExecFunc
// (SetExec) when there is one, otherwise builtinExec.
func (r *runtimeService) ExecSync(ctx context.Context, req *runtimeapi.ExecSyncRequest) (*runtimeapi.ExecSyncResponse, error) {
	s := r.s
	s.mu.Lock()
	c, ok := s.containers[req.GetContainerId()]
	if !ok {
		s.mu.Unlock()
		return nil, notFound("container", req.GetContainerId())
	}
	if c.state != runtimeapi.ContainerState_CONTAINER_RUNNING {
		s.mu.Unlock()
		return nil, status.Errorf(codes.FailedPrecondition, "container %q is not running", c.id)
	}
	er := ExecRequest{
		ContainerID:   c.id,
		PodUID:        c.config.GetLabels()["io.kubernetes.pod.uid"],
		ContainerName: c.config.GetLabels()["io.kubernetes.container.name"],
		Cmd:           slices.Clone(req.GetCmd()),
		Timeout:       time.Duration(req.GetTimeout()) * time.Second,
	}
	f := s.exec
	s.mu.Unlock()
	if len(er.Cmd) == 0 {
		return nil, status.Error(codes.InvalidArgument, "exec: empty command")
	}
	if er.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, er.Timeout)
		defer cancel()
	}
	if f == nil {
		f = s.builtinExec
	}
	res, err := f(ctx, er)
	if err != nil {
		return nil, err
	}
	return &runtimeapi.ExecSyncResponse{Stdout: res.Stdout, Stderr: res.Stderr, ExitCode: res.ExitCode}, nil
}

// builtinExec understands the words of the project's local pause image:
//
//	echo ARGS   prints ARGS (space separated) and a newline, exits 0
//	echo -n ARGS  the same without the newline
//	exit CODE   exits with CODE
//	hang        never returns: the call ends with DeadlineExceeded at its timeout
//	true        exits 0
//	false       exits 1
//
// each also after the pause image's own path ("/pause echo hi"), as it runs
// them in containerd. Anything else fails as a missing executable does in containerd (exit 127
// with a message on stderr).
func (s *Server) builtinExec(ctx context.Context, req ExecRequest) (ExecResult, error) {
	if len(req.Cmd) > 1 && req.Cmd[0] == "/pause" {
		req.Cmd = req.Cmd[1:]
	}
	switch req.Cmd[0] {
	case "echo":
		if len(req.Cmd) > 1 && req.Cmd[1] == "-n" {
			return ExecResult{Stdout: []byte(strings.Join(req.Cmd[2:], " "))}, nil
		}
		return ExecResult{Stdout: []byte(strings.Join(req.Cmd[1:], " ") + "\n")}, nil
	case "exit":
		code := 0
		if len(req.Cmd) > 1 {
			code, _ = strconv.Atoi(req.Cmd[1])
		}
		return ExecResult{ExitCode: int32(code)}, nil
	case "true":
		return ExecResult{}, nil
	case "false":
		return ExecResult{ExitCode: 1}, nil
	case "hang":
		<-ctx.Done()
		return ExecResult{}, status.Errorf(codes.DeadlineExceeded, "command %q timed out", req.Cmd)
	}
	return ExecResult{ExitCode: 127, Stderr: []byte("exec: " + strconv.Quote(req.Cmd[0]) + ": executable file not found in $PATH\n")}, nil
}
