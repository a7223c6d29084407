package prober

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/podlife/podlife/runtime"
)

// probeExec runs an exec probe: exit code 0 is success; a command that does
// not finish within the timeout fails; an error of the runtime is Unknown.
func (m *Manager) probeExec(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (Result, string) {
	if m.opts.Exec == nil {
		return Unknown, "no Exec configured for exec probes"
	}
	stdout, stderr, code, err := m.opts.Exec.ExecSync(ctx, containerID, cmd, timeout)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, runtime.ErrDeadlineExceeded) {
			return Failure, fmt.Sprintf("command %q timed out after %s", cmd, timeout)
		}
		return Unknown, err.Error()
	}
	out := stdout
	if len(stderr) > 0 {
		out = append(append([]byte(nil), stdout...), stderr...)
	}
	if code != 0 {
		return Failure, fmt.Sprintf("command %q exited with %d: %s", cmd, code, truncate(out))
	}
	return Success, truncate(out)
}
