package fakecri

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Container logs. A container whose sandbox has a LogDirectory and whose
// config has a LogPath has a CRI log file (their join), created when it
// starts, as a real runtime opens it then. The "process" writes what the
// project's pause image prints at start: "log ARGS" prints ARGS, "exit
// CODE" prints "pause: exiting with CODE"; a test makes it print more with
// WriteLog. fakecri opens the file for each write, so after a rotation
// (the file renamed away) ReopenContainerLog only has to create it again.

// startLogLocked creates the container's log file and writes what the
// pause image prints at start. A container without a log file writes
// nothing; a write that fails is logged.
func (s *Server) startLogLocked(c *container) {
	path := s.logPathLocked(c)
	if path == "" {
		return
	}
	args := append(slices.Clone(c.config.GetCommand()), c.config.GetArgs()...)
	var line string
	for i, a := range args {
		switch a {
		case "log":
			line = strings.Join(args[i+1:], " ")
		case "exit":
			code := "0"
			if i+1 < len(args) {
				code = args[i+1]
			}
			line = "pause: exiting with " + code
		default:
			continue
		}
		break
	}
	var lines []string
	if line != "" {
		lines = []string{line}
	}
	if err := appendCRILog(path, time.Unix(0, s.now()), "stdout", lines); err != nil {
		s.log.Error(err, "container log", "container", c.id)
	}
}

// WriteLog makes a running container print text on stream ("stdout" or
// "stderr"), as its process would: each line of text (split at "\n"; a
// final "\n" only ends the last line) is appended to the container's log
// file in the CRI format, stamped with the server's clock. It fails for an
// unknown container (ErrNoSuchObject), one that is not running, or one
// without a log file.
func (s *Server) WriteLog(id, stream, text string) error {
	if stream != "stdout" && stream != "stderr" {
		return fmt.Errorf("write log of container %q: stream %q is neither stdout nor stderr", id, stream)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.containers[id]
	if !ok {
		return fmt.Errorf("write log of container %q: %w", id, ErrNoSuchObject)
	}
	if c.state != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return fmt.Errorf("write log of container %q: it is %s, not running", id, c.state)
	}
	path := s.logPathLocked(c)
	if path == "" {
		return fmt.Errorf("write log of container %q: it has no log file", id)
	}
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if err := appendCRILog(path, time.Unix(0, s.now()), stream, lines); err != nil {
		return fmt.Errorf("write log of container %q: %w", id, err)
	}
	return nil
}

// ReopenContainerLog creates the log file of a running container again
// when it is missing, as a runtime reopens it after a rotation. A container
// that is not running answers Unknown ("container is not running", as
// containerd's), and creates no file; an unknown one NotFound.
func (r *runtimeService) ReopenContainerLog(_ context.Context, req *runtimeapi.ReopenContainerLogRequest) (*runtimeapi.ReopenContainerLogResponse, error) {
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.containers[req.GetContainerId()]
	if !ok {
		return nil, notFound("container", req.GetContainerId())
	}
	if c.state != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return nil, status.Error(codes.Unknown, "container is not running")
	}
	if path := s.logPathLocked(c); path != "" {
		if err := appendCRILog(path, time.Time{}, "", nil); err != nil {
			return nil, status.Errorf(codes.Unknown, "reopen container log: %v", err)
		}
	}
	return &runtimeapi.ReopenContainerLogResponse{}, nil
}

// appendCRILog creates the file if missing and appends full lines in the
// CRI log format.
func appendCRILog(path string, t time.Time, stream string, lines []string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o640)
	if err != nil {
		return err
	}
	if len(lines) > 0 {
		var b bytes.Buffer
		ts := t.UTC().Format(time.RFC3339Nano)
		for _, l := range lines {
			fmt.Fprintf(&b, "%s %s F %s\n", ts, stream, l)
		}
		_, err = f.Write(b.Bytes())
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
