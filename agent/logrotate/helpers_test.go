package logrotate_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/runtime"
)

// fakeRuntime runs containers that are log files in a folder: a test
// appends to a container's log path as its process would, and a reopen
// creates the file again, as a runtime does after a rotation.
type fakeRuntime struct {
	mu         sync.Mutex
	pods       map[types.UID]*runtime.Pod
	paths      map[string]string // container ID → log path; missing: no log file
	listErr    error             // GetPods fails with it
	reopenErr  error             // ReopenContainerLog fails with it
	listCalls  int
	pathCalls  map[string]int
	reopens    map[string]int
	inReopen   func(id string) // called at each reopen, before it answers
	concurrent int             // calls running now, and the most seen
	maxConc    int
}

func newFakeRuntime() *fakeRuntime {
	return &fakeRuntime{pods: map[types.UID]*runtime.Pod{}, paths: map[string]string{},
		pathCalls: map[string]int{}, reopens: map[string]int{}}
}

// run adds a running container with its log file (created empty) at
// dir/POD/NAME/0.log, and returns that path.
func (f *fakeRuntime) run(t testing.TB, dir, pod, name string) string {
	t.Helper()
	path := filepath.Join(dir, pod, name, "0.log")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, nil, 0o640); err != nil {
		t.Fatal(err)
	}
	f.runWithPath(pod, name, path)
	return path
}

// runWithPath adds a running container whose log file is path ("": none).
func (f *fakeRuntime) runWithPath(pod, name, path string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	uid := types.UID("uid-" + pod)
	p := f.pods[uid]
	if p == nil {
		p = &runtime.Pod{ID: uid, Name: pod, Namespace: "ns"}
		f.pods[uid] = p
	}
	id := pod + "-" + name
	p.Containers = append(p.Containers, &runtime.Container{ID: runtime.ContainerID{Type: "fake", ID: id}, Name: name, State: runtime.ContainerStateRunning})
	if path != "" {
		f.paths[id] = path
	}
}

// stop marks every container of the pod exited.
func (f *fakeRuntime) stop(pod string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.pods[types.UID("uid-"+pod)].Containers {
		c.State = runtime.ContainerStateExited
	}
}

func (f *fakeRuntime) setReopenErr(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reopenErr = err
}

func (f *fakeRuntime) setListErr(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.listErr = err
}

func (f *fakeRuntime) counts(id string) (pathCalls, reopens int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pathCalls[id], f.reopens[id]
}

func (f *fakeRuntime) enter() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.concurrent++
	f.maxConc = max(f.maxConc, f.concurrent)
}

func (f *fakeRuntime) leave() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.concurrent--
}

func (f *fakeRuntime) GetPods(_ context.Context, all bool) ([]*runtime.Pod, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.listCalls++
	if f.listErr != nil {
		return nil, f.listErr
	}
	var out []*runtime.Pod
	for _, p := range f.pods {
		cp := *p
		cp.Containers = nil
		for _, c := range p.Containers {
			if all || c.State == runtime.ContainerStateRunning {
				cc := *c
				cp.Containers = append(cp.Containers, &cc)
			}
		}
		out = append(out, &cp)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

func (f *fakeRuntime) ContainerLogPath(_ context.Context, id string) (string, error) {
	f.enter()
	defer f.leave()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pathCalls[id]++
	p, ok := f.paths[id]
	if !ok {
		return "", fmt.Errorf("container %q has no log file: %w", id, runtime.ErrNotFound)
	}
	return p, nil
}

func (f *fakeRuntime) ReopenContainerLog(_ context.Context, id string) error {
	f.enter()
	defer f.leave()
	f.mu.Lock()
	f.reopens[id]++
	err, path, hook := f.reopenErr, f.paths[id], f.inReopen
	f.mu.Unlock()
	if hook != nil {
		hook(id)
	}
	if err != nil {
		return fmt.Errorf("reopen log of container %q: %w", id, err)
	}
	fl, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o640)
	if err != nil {
		return err
	}
	return fl.Close()
}

// appendLog appends n CRI log lines "line FROM".."line FROM+n-1" to path,
// each padded to 100 bytes, as the container's process would.
func appendLog(t *testing.T, path string, from, n int) {
	t.Helper()
	var b strings.Builder
	for i := from; i < from+n; i++ {
		l := fmt.Sprintf("2026-01-02T03:04:05.000000000Z stdout F line %06d ", i)
		b.WriteString(l + strings.Repeat("x", 99-len(l)) + "\n")
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o640)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(b.String()); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// files lists the names in dir, sorted.
func files(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	return names
}

// logRecorder is a logr sink that keeps every entry, for tests that count
// what was logged.
type logRecorder struct {
	mu      sync.Mutex
	entries []logEntry
}

type logEntry struct {
	level int // -1 for errors
	msg   string
	err   error
}

func (r *logRecorder) logger() logr.Logger { return logr.New(recorderSink{r}) }

// count returns how many entries have the message at the level (-1:
// errors).
func (r *logRecorder) count(level int, msg string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, e := range r.entries {
		if e.level == level && e.msg == msg {
			n++
		}
	}
	return n
}

func (r *logRecorder) errors() []logEntry {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []logEntry
	for _, e := range r.entries {
		if e.level < 0 {
			out = append(out, e)
		}
	}
	return out
}

type recorderSink struct{ r *logRecorder }

func (recorderSink) Init(logr.RuntimeInfo) {}
func (recorderSink) Enabled(int) bool      { return true }
func (s recorderSink) Info(level int, msg string, _ ...any) {
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	s.r.entries = append(s.r.entries, logEntry{level: level, msg: msg})
}
func (s recorderSink) Error(err error, msg string, _ ...any) {
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	s.r.entries = append(s.r.entries, logEntry{level: -1, msg: msg, err: err})
}
func (s recorderSink) WithValues(...any) logr.LogSink { return s }
func (s recorderSink) WithName(string) logr.LogSink   { return s }

var errRefused = errors.New("refused by the test")
