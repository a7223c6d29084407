package fakecri

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"time"
)

// startLogLocked writes what the project's pause image prints at start to
// the container's CRI log file (the sandbox's LogDirectory joined with the
// container's LogPath), so that log readers have something to read:
// "log ARGS" prints ARGS, "exit CODE" prints "pause: exiting with CODE".
// A container without a log file writes nothing; a write that fails is
// logged.
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
	if line == "" {
		return
	}
	if err := appendCRILog(path, time.Unix(0, s.now()), "stdout", line); err != nil {
		s.log.Error(err, "container log", "container", c.id)
	}
}

// appendCRILog appends one full line in the CRI log format.
func appendCRILog(path string, t time.Time, stream, line string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o640)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(f, "%s %s F %s\n", t.UTC().Format(time.RFC3339Nano), stream, line)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
