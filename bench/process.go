package bench

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Process is an engine run as a process of its own (the nodeagent, a
// hollow kubelet, KWOK, the fleet), in a process group of its own.
type Process struct {
	Pid  int
	done chan struct{}
}

// StartProcess starts bin with args and the harness's environment plus
// env, its output appended to logPath.
func StartProcess(logPath string, env []string, bin string, args ...string) (*Process, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	p := &Process{Pid: cmd.Process.Pid, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); f.Close(); close(p.done) }()
	return p, nil
}

// Stop sends SIGTERM to the process group, SIGKILL after grace, and waits
// for the process.
func (p *Process) Stop(grace time.Duration) {
	_ = syscall.Kill(-p.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// Exited reports whether the process has ended.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}
