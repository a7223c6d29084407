package cri

import (
	"context"
	"fmt"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ExecSync runs cmd in the running container containerID and returns its
// output and exit code, as the kubelet's exec probes do. timeout bounds the
// command: it is sent to the runtime in whole seconds (rounded up; zero means
// none), and the call itself may take that long on top of Options.Timeout. A
// command that does not finish in time is an error wrapping
// runtime.ErrDeadlineExceeded; a container that is gone, runtime.ErrNotFound.
// A command that runs and exits non-zero is not an error: see exitCode.
func (r *Runtime) ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (stdout, stderr []byte, exitCode int32, err error) {
	secs := int64((timeout + time.Second - 1) / time.Second)
	if timeout < 0 {
		secs = 0
	}
	cctx, cancel := r.callCtx(ctx, time.Duration(secs)*time.Second)
	defer cancel()
	resp, err := r.rs.ExecSync(cctx, &runtimeapi.ExecSyncRequest{ContainerId: containerID, Cmd: cmd, Timeout: secs})
	if err != nil {
		return nil, nil, 0, fmt.Errorf("exec %q in container %q: %w", cmd, containerID, fromGRPC(err))
	}
	return resp.GetStdout(), resp.GetStderr(), resp.GetExitCode(), nil
}
