package cri

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strconv"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podlife/podlife/runtime"
)

// The kubelet's bounds of a termination message.
const (
	maxTerminationMessage    = 4096 // bytes read from terminationMessagePath
	maxTerminationLogBytes   = 2048 // bytes of log with FallbackToLogsOnError
	maxTerminationLogLines   = 80
	annotationTerminationLog = "io.podlife.container.terminationMessageHostPath"
)

// logDirectory is the sandbox's log folder (VolumeRoot/UID/logs), "" when
// the UID cannot name a folder.
func (r *Runtime) logDirectory(pod *v1.Pod) string {
	dir, ok := r.podVolumeDir(pod.UID)
	if !ok {
		return ""
	}
	return filepath.Join(dir, "logs")
}

// terminationMount makes the file the container writes its termination
// message to (VolumeRoot/UID/containers/NAME/RESTARTCOUNT) and mounts it at
// terminationMessagePath, as the kubelet does. It returns the host path,
// or "" when the container has no terminationMessagePath.
func (r *Runtime) terminationMount(pod *v1.Pod, c *v1.Container, restartCount int) (*runtimeapi.Mount, string, error) {
	if c.TerminationMessagePath == "" {
		return nil, "", nil
	}
	dir, ok := r.podVolumeDir(pod.UID)
	if !ok {
		return nil, "", nil
	}
	dir = filepath.Join(dir, "containers", c.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, "", err
	}
	host := filepath.Join(dir, strconv.Itoa(restartCount))
	if err := os.WriteFile(host, nil, 0o666); err != nil {
		return nil, "", err
	}
	if err := os.Chmod(host, 0o666); err != nil { // whatever the umask: any user may write it
		return nil, "", err
	}
	return &runtimeapi.Mount{ContainerPath: c.TerminationMessagePath, HostPath: host}, host, nil
}

// terminationMessage fills cs.Message of an exited container the runtime
// gave none, as the kubelet does: the file at terminationMessagePath (at
// most 4096 bytes), else, with FallbackToLogsOnError and a non-zero exit
// code, the last 80 lines (at most 2048 bytes) of its log.
func terminationMessage(cs *runtime.ContainerStatus, s *runtimeapi.ContainerStatus) {
	if cs.State != runtime.ContainerStateExited || cs.Message != "" {
		return
	}
	if p := s.GetAnnotations()[annotationTerminationLog]; p != "" {
		if b, err := readHead(p, maxTerminationMessage); err == nil && len(b) > 0 {
			cs.Message = string(b)
			return
		}
	}
	if cs.ExitCode == 0 || s.GetAnnotations()[AnnotationTerminationMessagePolicy] != string(v1.TerminationMessageFallbackToLogsOnError) || s.GetLogPath() == "" {
		return
	}
	if msg := tailLog(s.GetLogPath()); msg != "" {
		cs.Message = msg
	}
}

func readHead(path string, n int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	return io.ReadAll(io.LimitReader(f, n))
}

// tailLog returns the content of the last lines of a CRI log file
// ("TIMESTAMP STREAM TAG CONTENT" lines).
func tailLog(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer func() { _ = f.Close() }()
	const window = 64 << 10
	if fi, err := f.Stat(); err == nil && fi.Size() > window {
		_, _ = f.Seek(fi.Size()-window, io.SeekStart)
	}
	b, err := io.ReadAll(io.LimitReader(f, window))
	if err != nil {
		return ""
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > maxTerminationLogLines {
		lines = lines[len(lines)-maxTerminationLogLines:]
	}
	var out []byte
	for _, l := range lines {
		fields := bytes.SplitN(l, []byte(" "), 4)
		if len(fields) < 4 {
			continue
		}
		out = append(out, fields[3]...)
		if string(fields[2]) != "P" { // a partial line goes on in the next one
			out = append(out, '\n')
		}
	}
	if len(out) > maxTerminationLogBytes {
		out = out[len(out)-maxTerminationLogBytes:]
	}
	return string(out)
}
