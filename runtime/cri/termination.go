package cri

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/cri-client/pkg/logs"

	"github.com/podlife/podlife/runtime"
)

// Termination messages as the kubelet gives them: every container gets a
// host file mounted read-write at its terminationMessagePath (default
// /dev/termination-log); when the container has exited, its status
// message is the end of that file (at most 4096 bytes), or, with
// terminationMessagePolicy FallbackToLogsOnError, an empty file and a
// non-zero exit code, the end of its log (the last 80 lines, at most the
// last 2048 bytes of them). The runtime writes the log because the
// sandbox has a LogDirectory (VolumeRoot/UID/logs) and each container a
// LogPath (NAME/RESTARTCOUNT.log), as with the kubelet.

// The kubelet's bounds of a termination message.
const (
	maxTerminationMessageBytes = 4096
	maxTerminationLogBytes     = 2048
	maxTerminationLogLines     = 80
)

// AnnotationTerminationMessageHostPath records on a container the host
// file mounted at its terminationMessagePath, for GetPodStatus to read
// (the kubelet finds it among the mounts the runtime reports; a runtime
// need not report them).
const AnnotationTerminationMessageHostPath = "io.podlife.container.terminationMessageHostPath"

// DefaultVolumeRoot is the default Options.VolumeRoot:
// os.TempDir()/podlife-volumes.
func DefaultVolumeRoot() string { return filepath.Join(os.TempDir(), "podlife-volumes") }

// logDirectory is the sandbox's LogDirectory: VolumeRoot/UID/logs, or
// PodLogsDir/NAMESPACE_NAME_UID; "" when the pod has no folder.
func (r *Runtime) logDirectory(pod *v1.Pod) string {
	dir, err := r.podDir(pod.UID)
	if err != nil {
		return ""
	}
	if r.opts.PodLogsDir != "" {
		return filepath.Join(r.opts.PodLogsDir, pod.Namespace+"_"+pod.Name+"_"+string(pod.UID))
	}
	return filepath.Join(dir, "logs")
}

// containerFiles makes the container's log folder and termination-message
// file, and adds to cfg the LogPath, the mount of the file at
// terminationMessagePath and the annotation naming it.
func (r *Runtime) containerFiles(pod *v1.Pod, c *v1.Container, restartCount int, cfg *runtimeapi.ContainerConfig) error {
	dir, err := r.podDir(pod.UID)
	if err != nil {
		return nil // a UID that cannot name a folder: no files, no messages
	}
	if err := os.MkdirAll(filepath.Join(r.logDirectory(pod), c.Name), 0o755); err != nil {
		return fmt.Errorf("log folder of container %q: %w", c.Name, err)
	}
	cfg.LogPath = filepath.Join(c.Name, strconv.Itoa(restartCount)+".log")

	path := c.TerminationMessagePath
	if path == "" {
		path = v1.TerminationMessagePathDefault
	}
	cdir := filepath.Join(dir, "containers", c.Name)
	if err := os.MkdirAll(cdir, 0o755); err != nil {
		return fmt.Errorf("termination message file of container %q: %w", c.Name, err)
	}
	// A new file for every instance: an older one keeps its message.
	f, err := os.CreateTemp(cdir, strconv.Itoa(restartCount)+"-")
	if err != nil {
		return fmt.Errorf("termination message file of container %q: %w", c.Name, err)
	}
	host := f.Name()
	// Whatever the umask and the container's user: it may write.
	err = f.Chmod(0o666)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("termination message file of container %q: %w", c.Name, err)
	}
	cfg.Mounts = append(cfg.Mounts, &runtimeapi.Mount{ContainerPath: path, HostPath: host})
	if cfg.Annotations == nil {
		cfg.Annotations = map[string]string{}
	}
	cfg.Annotations[AnnotationTerminationMessageHostPath] = host
	return nil
}

// terminationMessage completes the status of an exited container as the
// kubelet does: a reason when the runtime gave none (Completed for exit
// code 0, Error otherwise; OOMKilled and others come from the runtime),
// and the termination message, after the runtime's own message and ": ".
// The message is read once per container (termMessages).
func (r *Runtime) terminationMessage(cs *runtime.ContainerStatus, s *runtimeapi.ContainerStatus) {
	if cs.State != runtime.ContainerStateExited {
		return
	}
	if cs.Reason == "" {
		cs.Reason = "Completed"
		if cs.ExitCode != 0 {
			cs.Reason = "Error"
		}
	}
	msg, ok := r.termMsgs.get(s.GetId())
	if !ok {
		msg = terminationText(cs, s)
		r.termMsgs.put(s.GetId(), msg)
	}
	if msg == "" {
		return
	}
	if cs.Message != "" {
		cs.Message += ": "
	}
	cs.Message += msg
}

// terminationText is the termination message of an exited container: its
// terminationMessagePath's file, or with FallbackToLogsOnError the end of
// its log when the file is empty and it failed.
func terminationText(cs *runtime.ContainerStatus, s *runtimeapi.ContainerStatus) string {
	a := s.GetAnnotations()
	fallback := a[AnnotationTerminationMessagePolicy] == string(v1.TerminationMessageFallbackToLogsOnError) &&
		cs.ExitCode != 0 && cs.Reason != "ContainerCannotRun"
	msg, checkLogs := "", fallback
	if host := a[AnnotationTerminationMessageHostPath]; host != "" {
		b, err := readTail(host, maxTerminationMessageBytes)
		switch {
		case err == nil:
			msg, checkLogs = string(b), fallback && len(b) == 0
		case os.IsNotExist(err):
		default:
			msg, checkLogs = fmt.Sprintf("Error on reading termination log %s: %v", host, err), false
		}
	}
	if checkLogs && s.GetLogPath() != "" {
		msg = tailLog(s.GetLogPath())
	}
	return msg
}

// termMessages keeps the termination messages of exited containers by
// container ID. An exited container writes nothing more, so its file and
// log are read once, not at every status of its pod (a file opened per
// exited container per status was 10 s of a 100,000-pod drain's 400 s of
// CPU). A full listing of the runtime's containers (listPods) forgets the
// containers that are gone, once the cache has doubled since the last time.
type termMessages struct {
	mu      sync.Mutex
	m       map[string]string
	pruneAt int
}

// minPrune is the size from which termMessages is pruned.
const minPrune = 1024

func (t *termMessages) get(id string) (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	msg, ok := t.m[id]
	return msg, ok
}

func (t *termMessages) put(id, msg string) {
	if id == "" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[string]string{}
	}
	t.m[id] = msg
}

// due reports whether the cache has grown enough to be pruned.
func (t *termMessages) due() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m) >= max(minPrune, t.pruneAt)
}

// prune forgets every container not in present (a full listing).
func (t *termMessages) prune(present map[string]bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for id := range t.m {
		if !present[id] {
			delete(t.m, id)
		}
	}
	t.pruneAt = 2 * len(t.m)
}

// size is how many messages are kept (tests).
func (t *termMessages) size() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m)
}

// readTail reads at most the last n bytes of a file. An empty file, what
// most containers leave, costs one stat and no open.
func readTail(path string, n int64) ([]byte, error) {
	if fi, err := os.Stat(path); err != nil {
		return nil, err
	} else if fi.Mode().IsRegular() && fi.Size() == 0 {
		return nil, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > n {
		if _, err := f.Seek(fi.Size()-n, io.SeekStart); err != nil {
			return nil, err
		}
	}
	return io.ReadAll(io.LimitReader(f, n))
}

// tailLog returns the content of the last maxTerminationLogLines lines of
// a CRI log file, at most their last maxTerminationLogBytes bytes, read by
// the kubelet's log reader (k8s.io/cri-client/pkg/logs: partial lines
// joined, either log format); "" when it cannot be read.
func tailLog(path string) string {
	lines := int64(maxTerminationLogLines)
	var buf bytes.Buffer
	// Without Follow the reader makes no runtime call.
	if err := logs.ReadLogs(context.Background(), path, "", &logs.LogOptions{TailLines: &lines}, nil, &buf, &buf); err != nil && buf.Len() == 0 {
		return ""
	}
	out := buf.Bytes()
	if len(out) > maxTerminationLogBytes {
		out = out[len(out)-maxTerminationLogBytes:]
	}
	return string(out)
}
