package logrotate_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/cri-client/pkg/logs"

	"github.com/podlife/podlife/agent/logrotate"
	"github.com/podlife/podlife/podworker/podworkertest"
	"github.com/podlife/podlife/runtime"
	"github.com/podlife/podlife/runtime/cri"
)

// criRunning answers the log reader's question (does the container run?)
// through runtime/cri, as agent/server does.
type criRunning struct {
	internalapi.RuntimeService
	rt    *cri.Runtime
	asked atomic.Int32
}

func (c *criRunning) ContainerStatus(ctx context.Context, id string, _ bool) (*runtimeapi.ContainerStatusResponse, error) {
	c.asked.Add(1)
	running, err := c.rt.ContainerRunning(ctx, id)
	if err != nil {
		return nil, err
	}
	state := runtimeapi.ContainerState_CONTAINER_EXITED
	if running {
		state = runtimeapi.ContainerState_CONTAINER_RUNNING
	}
	return &runtimeapi.ContainerStatusResponse{Status: &runtimeapi.ContainerStatus{Id: id, State: state}}, nil
}

// onePod shows the Manager only one pod of the runtime: the containerd of
// the tests is shared with other packages' tests, whose logs are theirs.
type onePod struct {
	*cri.Runtime
	uid types.UID
}

func (o onePod) GetPods(ctx context.Context, all bool) ([]*runtime.Pod, error) {
	pods, err := o.Runtime.GetPods(ctx, all)
	var mine []*runtime.Pod
	for _, p := range pods {
		if p.ID == o.uid {
			mine = append(mine, p)
		}
	}
	return mine, err
}

// chattyNumber reads N from a "chatty N xxx" line, or -1.
func chattyNumber(line string) int {
	f := strings.Fields(line)
	if len(f) < 2 || f[0] != "chatty" {
		return -1
	}
	n, err := strconv.Atoi(f[1])
	if err != nil {
		return -1
	}
	return n
}

// counterValue reads a counter of reg by name, 0 when absent.
func counterValue(t *testing.T, reg prometheus.Gatherer, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return 0
}

// TestRotationOnContainerd rotates the log of a container that writes
// 200 KB/s (the test image's "pause chatty") on a real containerd
// (scripts/containerd/start.sh; skipped without PODLIFE_CRI_ENDPOINT): the
// log is rotated at the size through CRI ReopenContainerLog, at most
// MaxFiles files are ever on disk, the older ones gzipped, the reader's
// tail returns the newest lines and a follow goes on across rotations.
func TestRotationOnContainerd(t *testing.T) {
	endpoint := os.Getenv("PODLIFE_CRI_ENDPOINT")
	if endpoint == "" {
		t.Skip("PODLIFE_CRI_ENDPOINT is not set: start a containerd with `sock=$(bash scripts/containerd/start.sh)`")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rt, err := cri.New(cri.Options{Endpoint: endpoint, Timeout: 30 * time.Second, CgroupParent: "/podlife-test",
		Logger: testr.New(t), VolumeRoot: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() }) // after the pod's removal below
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	suffix := hex.EncodeToString(b)
	grace := int64(2)
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "chatty-" + suffix[:8], Namespace: "podlife-test", UID: types.UID("chatty-" + suffix)},
		Spec: v1.PodSpec{RestartPolicy: v1.RestartPolicyNever, TerminationGracePeriodSeconds: &grace,
			Containers: []v1.Container{{Name: "c", Image: "localhost/podlife/pause:1.0", ImagePullPolicy: v1.PullIfNotPresent,
				Args: []string{"chatty", "200000"}}}},
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := rt.KillPod(ctx, pod, nil, &grace); err != nil {
			t.Errorf("KillPod: %v", err)
		}
		if pods, err := rt.GetPods(ctx, true); err == nil {
			for _, p := range pods {
				if p.ID == pod.UID {
					_ = rt.RemovePod(ctx, p)
				}
			}
		}
	})
	if err := rt.SyncPod(ctx, pod, nil); err != nil {
		t.Fatalf("SyncPod: %v", err)
	}
	st, err := rt.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	cs := st.FindContainerStatusByName("c")
	if cs == nil || cs.State != runtime.ContainerStateRunning {
		t.Fatalf("container c: %+v", cs)
	}
	id := cs.ID.ID
	path, err := rt.ContainerLogPath(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(path)

	// kubectl logs -f from the start, until the test ends.
	svc := &criRunning{rt: rt}
	var followed syncBuffer
	followCtx, stopFollow := context.WithCancel(ctx)
	followDone := make(chan error, 1)
	go func() {
		followDone <- logs.ReadLogs(followCtx, path, id, &logs.LogOptions{Follow: true}, svc, &followed, &followed)
	}()
	endFollow := sync.OnceValue(func() error { stopFollow(); return <-followDone })
	defer endFollow()
	podworkertest.WaitFor(t, 30*time.Second, "the follow to watch the log", func() bool { return svc.asked.Load() > 0 })

	const maxSize, maxFiles = 64 << 10, 3
	reg := prometheus.NewRegistry()
	m, err := logrotate.New(logrotate.Options{Runtime: onePod{rt, pod.UID}, MaxSize: maxSize, MaxFiles: maxFiles,
		Interval: 100 * time.Millisecond, Logger: testr.New(t), Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stopRun := context.WithCancel(ctx)
	runDone := make(chan error, 1)
	go func() { runDone <- m.Run(runCtx) }()
	endRun := sync.OnceValue(func() error { stopRun(); return <-runDone })
	defer endRun()

	// Until 4 rotations: never more than maxFiles files (a compression's
	// temporary file aside), no failure.
	const rotations = 4
	most := 0
	podworkertest.WaitFor(t, 60*time.Second, fmt.Sprintf("%d rotations", rotations), func() bool {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, e := range entries {
			if !strings.HasSuffix(e.Name(), ".tmp") {
				n++
			}
		}
		most = max(most, n)
		if n > maxFiles {
			t.Fatalf("%d log files, want at most %d: %v", n, maxFiles, entries)
		}
		return counterValue(t, reg, "kubelet_container_log_rotations_total") >= rotations
	})
	if f := counterValue(t, reg, "kubelet_container_log_rotation_failures_total"); f != 0 {
		t.Errorf("%v failed rotations", f)
	}
	if err := endRun(); err != nil {
		t.Errorf("Run: %v", err)
	}

	names := files(t, dir)
	t.Logf("files after %d rotations: %v (at most %d at once)", rotations, names, most)
	var gz, plain int
	for _, n := range names[1:] {
		if strings.HasSuffix(n, ".gz") {
			gz++
			lines := readLines(t, filepath.Join(dir, n))
			if len(lines) == 0 || chattyNumber(lines[len(lines)-1][strings.LastIndex(lines[len(lines)-1], " F ")+3:]) < 0 {
				t.Errorf("%s does not hold the container's lines", n)
			}
		} else if !strings.HasSuffix(n, ".tmp") {
			plain++
		}
	}
	if names[0] != "0.log" || gz != 1 || plain != 1 {
		t.Errorf("files %v: want 0.log, one gzipped and one plain rotated file", names)
	}

	// kubectl logs --tail 5: the newest lines, in order, from the current
	// file.
	firstCurrent := -1
	if lines := readLines(t, path); len(lines) > 0 {
		firstCurrent = chattyNumber(lines[0][strings.LastIndex(lines[0], " F ")+3:])
	}
	tail := strings.Split(strings.TrimSuffix(readLog(t, path, 5), "\n"), "\n")
	if len(tail) != 5 {
		t.Fatalf("tail 5: %q", tail)
	}
	for i, l := range tail {
		n := chattyNumber(l)
		if n < firstCurrent || i > 0 && n != chattyNumber(tail[i-1])+1 {
			t.Fatalf("tail 5: %q, want 5 consecutive lines from the current file (which starts at %d)", tail, firstCurrent)
		}
	}

	// The follow went on into the current file: it shows lines written
	// after the last rotation, each line at most once and in order. (The
	// kubelet's reader may miss what the runtime wrote into the renamed
	// file just before it reopened the log.)
	podworkertest.WaitFor(t, 30*time.Second, "the follow to reach the current file", func() bool {
		out := strings.TrimSuffix(followed.String(), "\n")
		return chattyNumber(out[strings.LastIndex(out, "\n")+1:]) >= firstCurrent
	})
	// Cancelled, the reader ends with its own "context cancelled", or with
	// the error of the runtime call it was making at that moment.
	if err := endFollow(); err != nil && !strings.Contains(err.Error(), "context cancelled") &&
		!errors.Is(err, runtime.ErrCanceled) && !errors.Is(err, context.Canceled) {
		t.Errorf("ReadLogs: %v", err)
	}
	prev, gaps := -1, 0
	for _, l := range strings.Split(strings.TrimSuffix(followed.String(), "\n"), "\n") {
		n := chattyNumber(l)
		if n <= prev {
			t.Fatalf("followed line %q after %d: repeated or out of order", l, prev)
		}
		if n != prev+1 {
			gaps++
		}
		prev = n
	}
	t.Logf("followed lines 0..%d across %d rotations, %d gaps", prev, rotations, gaps)

	// containerd refuses to reopen the log of a container that is not
	// running (fakecri answers the same).
	if err := rt.KillPod(ctx, pod, nil, &grace); err != nil {
		t.Fatal(err)
	}
	if err := rt.ReopenContainerLog(ctx, id); !errors.Is(err, runtime.ErrUnknown) {
		t.Errorf("reopen of a stopped container: %v, want runtime.ErrUnknown", err)
	}
}
