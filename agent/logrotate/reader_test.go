package logrotate_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/cri-client/pkg/logs"

	"github.com/podlife/podlife/agent/logrotate"
	"github.com/podlife/podlife/podworker/podworkertest"
)

// What kubectl logs reads: the kubelet's reader (k8s.io/cri-client/pkg/logs,
// which agent/server uses) on the current log file.

// readLog returns the last tail lines of the log at path, as kubectl logs
// --tail shows them.
func readLog(t *testing.T, path string, tail int64) string {
	t.Helper()
	var out bytes.Buffer
	if err := logs.ReadLogs(context.Background(), path, "", &logs.LogOptions{TailLines: &tail}, nil, &out, &out); err != nil {
		t.Fatalf("ReadLogs: %v", err)
	}
	return out.String()
}

// runningService answers the reader's one question while it follows a log:
// does the container still run?
type runningService struct {
	internalapi.RuntimeService
	running atomic.Bool
	asked   atomic.Int32
}

func (s *runningService) ContainerStatus(_ context.Context, id string, _ bool) (*runtimeapi.ContainerStatusResponse, error) {
	s.asked.Add(1)
	state := runtimeapi.ContainerState_CONTAINER_EXITED
	if s.running.Load() {
		state = runtimeapi.ContainerState_CONTAINER_RUNNING
	}
	return &runtimeapi.ContainerStatusResponse{Status: &runtimeapi.ContainerStatus{Id: id, State: state}}, nil
}

// syncBuffer is a bytes.Buffer safe for one writer and concurrent readers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// A followed log (kubectl logs -f) goes on across rotations: the reader
// sees the log renamed and the new file created by the reopen, and
// follows the new file.
func TestFollowAcrossRotations(t *testing.T) {
	fr, clk, _, m := setup(t, logrotate.Options{MaxSize: 1000})
	path := fr.run(t, t.TempDir(), "chatty", "main")
	appendLog(t, path, 0, 10)

	svc := &runningService{}
	svc.running.Store(true)
	var out syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- logs.ReadLogs(ctx, path, "chatty-main", &logs.LogOptions{Follow: true}, svc, &out, &out)
	}()
	shows := func(line int) func() bool {
		return func() bool { return strings.Contains(out.String(), fmt.Sprintf("line %06d ", line)) }
	}
	podworkertest.WaitFor(t, 10*time.Second, "the first lines", shows(9))
	// The reader asks whether the container runs once it watches the
	// log's folder for changes; a rotation before that would go unseen
	// (as with the kubelet, the reader would stay on the renamed file).
	podworkertest.WaitFor(t, 10*time.Second, "the reader to wait for changes", func() bool { return svc.asked.Load() > 0 })
	next := 10
	for range 3 {
		clk.Step(logrotate.DefaultInterval)
		rotate(t, m, logrotate.Result{Containers: 1, Rotated: 1})
		appendLog(t, path, next, 10)
		next += 10
		podworkertest.WaitFor(t, 10*time.Second, fmt.Sprintf("line %d, written after a rotation", next-1), shows(next-1))
	}
	svc.running.Store(false)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("ReadLogs: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the follow did not end after the container stopped")
	}
	got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(got) != next {
		t.Fatalf("followed %d lines, want every one of the %d written", len(got), next)
	}
	for i, l := range got {
		if !strings.HasPrefix(l, fmt.Sprintf("line %06d ", i)) {
			t.Fatalf("followed line %d is %q: out of order", i, l)
		}
	}
}
