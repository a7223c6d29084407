package scale

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/podlife/podlife/agent"
	"github.com/podlife/podlife/agent/eviction"
	"github.com/podlife/podlife/podmanager"
	"github.com/podlife/podlife/podmanager/source"
	"github.com/podlife/podlife/podworker"
	"github.com/podlife/podlife/runtime/cri"
	"github.com/podlife/podlife/runtime/fakecri"
)

// Names the scale test uses.
const (
	nodeName     = "scale-node"
	apiNamespace = "scale"
	testImage    = "localhost/podlife/pause:1.0"
)

// settings of one scale run.
type settings struct {
	pods          int
	housekeeping  time.Duration // agent.Options.HousekeepingInterval
	relist        time.Duration // agent.Options.RelistInterval
	relistWorkers int           // agent.Options.RelistWorkers
	log           bool
	// eviction runs the agent's eviction manager (agent.Options.Eviction,
	// the kubelet's default thresholds and 10 s interval) on node stats
	// with room to spare, so that its passes (every pod's stats from the
	// runtime, their emptyDir and log usage read from disk) run beside
	// housekeeping without ever evicting.
	eviction bool
	// direct: the CRI client calls fakecri through its direct connection
	// (fakecri.Server.Conn: no transport) instead of gRPC over a unix
	// socket.
	direct bool
}

// roomyNode is a node far from every eviction threshold.
type roomyNode struct{}

func (roomyNode) NodeStats(context.Context) (*statsapi.NodeStats, error) {
	t := metav1.Now()
	memAvail, memWS := uint64(200<<30), uint64(56<<30)
	capacity, avail := uint64(4<<40), uint64(3<<40)
	inodes, free := uint64(1e9), uint64(9e8)
	maxPID, procs := int64(4194304), int64(1000)
	fs := &statsapi.FsStats{Time: t, AvailableBytes: &avail, CapacityBytes: &capacity, Inodes: &inodes, InodesFree: &free}
	return &statsapi.NodeStats{
		Memory:  &statsapi.MemoryStats{Time: t, AvailableBytes: &memAvail, WorkingSetBytes: &memWS},
		Fs:      fs,
		Runtime: &statsapi.RuntimeStats{ImageFs: fs},
		Rlimit:  &statsapi.RlimitStats{Time: t, MaxPID: &maxPID, NumOfRunningProcesses: &procs},
	}, nil
}

// world is one agent over one fakecri, with the API pods pushed through a
// channel source, as test/chaos builds it.
type world struct {
	srv *fakecri.Server
	rt  *cri.Runtime
	a   *agent.Agent
	api *source.Channel
	rep *countingReporter
	reg *prometheus.Registry

	cancel context.CancelFunc
	done   chan error
}

// startWorld starts fakecri on a unix socket in a short temporary folder,
// a CRI client and an agent, and runs the agent. Cleanup stops everything.
func startWorld(t testing.TB, s settings) *world {
	t.Helper()
	dir, err := os.MkdirTemp("", "scale")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	w := &world{srv: fakecri.New(fakecri.Options{Images: []string{testImage}}), reg: prometheus.NewRegistry(), done: make(chan error, 1)}
	ep, err := w.srv.StartUnix(filepath.Join(dir, "cri.sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.srv.Stop)
	var conn grpc.ClientConnInterface
	if s.direct {
		conn = w.srv.Conn()
	}
	w.rt, err = cri.New(cri.Options{
		Endpoint:     ep,
		Conn:         conn,
		CgroupParent: "/podlife-scale",
		VolumeRoot:   filepath.Join(dir, "volumes"),
		// A listing of 100,000 containers is about 50 MB.
		MaxMessageSize: 1 << 30,
	})
	if err != nil {
		t.Fatal(err)
	}
	log := logr.Discard()
	if tt, ok := t.(*testing.T); ok && s.log {
		log = testr.NewWithOptions(tt, testr.Options{Verbosity: 2})
	}
	var evict *eviction.Options
	if s.eviction {
		evict = &eviction.Options{NodeStats: roomyNode{}}
	}
	w.a, err = agent.New(agent.Options{
		Runtime:  w.rt,
		NodeName: nodeName,
		Sources: []agent.Source{{Name: podmanager.APISource, New: func(sink source.Sink) (agent.Runner, error) {
			ch, err := source.NewChannel(sink, source.ChannelOptions{Source: podmanager.APISource})
			w.api = ch
			return ch, err
		}}},
		OnSourceError: func(err error) { t.Errorf("source rejected input: %v", err) },
		StatusReporter: func(agent.PodStateProvider) (agent.StatusReporter, error) {
			w.rep = newCountingReporter()
			return w.rep, nil
		},
		Registerer:           w.reg,
		RelistWorkers:        s.relistWorkers,
		Logger:               log,
		HousekeepingInterval: s.housekeeping,
		RelistInterval:       s.relist,
		BackOffPeriod:        time.Second,
		Eviction:             evict,
	})
	if err != nil {
		_ = w.rt.Close()
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	go func() { w.done <- w.a.Run(ctx) }()
	t.Cleanup(func() {
		if err := w.stop(); err != nil {
			t.Error(err)
		}
	})
	return w
}

// stop ends Run, waits for it (bounded) and closes the CRI client. It may be
// called more than once.
func (w *world) stop() error {
	if w.cancel == nil {
		return nil
	}
	w.cancel()
	w.cancel = nil
	defer w.rt.Close()
	select {
	case err := <-w.done:
		if err != nil {
			return fmt.Errorf("agent Run: %w", err)
		}
		return nil
	case <-time.After(time.Minute):
		return errors.New("agent Run did not return within 1m of its context ending")
	}
}

// push hands the API pods to the agent's channel source.
func (w *world) push(pods []*v1.Pod) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := w.api.Push(ctx, pods); err != nil {
		return fmt.Errorf("push %d API pods: %w", len(pods), err)
	}
	return nil
}

// apiPods returns n API pods of one container each.
func apiPods(n int) []*v1.Pod {
	grace := int64(0)
	pods := make([]*v1.Pod, n)
	for i := range pods {
		name := fmt.Sprintf("p%06d", i)
		pods[i] = &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Name:              name,
				Namespace:         apiNamespace,
				UID:               types.UID("uid-" + name),
				CreationTimestamp: metav1.Now(),
			},
			Spec: v1.PodSpec{
				NodeName:                      nodeName,
				RestartPolicy:                 v1.RestartPolicyAlways,
				TerminationGracePeriodSeconds: &grace,
				Containers:                    []v1.Container{{Name: "main", Image: testImage, Args: []string{"run"}}},
			},
		}
	}
	return pods
}

// deleted returns copies of pods marked for deletion with grace period g,
// as the API server marks them.
func deleted(pods []*v1.Pod, g int64) []*v1.Pod {
	now := metav1.Now()
	out := make([]*v1.Pod, len(pods))
	for i, p := range pods {
		c := *p
		c.DeletionTimestamp, c.DeletionGracePeriodSeconds = &now, &g
		out[i] = &c
	}
	return out
}

// countingReporter is the agent's StatusReporter: it keeps, per pod, only
// whether it was reported Running and whether it finished.
type countingReporter struct {
	mu       sync.Mutex
	running  map[types.UID]bool
	finished map[types.UID]bool
	terminal int // terminal phases reported for pods not being deleted
}

func newCountingReporter() *countingReporter {
	return &countingReporter{running: map[types.UID]bool{}, finished: map[types.UID]bool{}}
}

func (r *countingReporter) SetPodStatus(_ context.Context, pod, _ *v1.Pod, status v1.PodStatus) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if status.Phase == v1.PodRunning {
		r.running[pod.UID] = true
	}
	if (status.Phase == v1.PodSucceeded || status.Phase == v1.PodFailed) && pod.DeletionTimestamp == nil {
		r.terminal++
	}
	return nil
}

func (r *countingReporter) PodFinished(_ context.Context, pod, _ *v1.Pod, _ v1.PodStatus) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.finished[pod.UID] = true
	return nil
}

// counts returns how many pods were reported running and finished, and how
// many terminal phases were reported for pods not being deleted.
func (r *countingReporter) counts() (running, finished, terminal int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.running), len(r.finished), r.terminal
}

// allRunning reports whether every pod is known to the workers, is in the
// sync state with its first sync done, and was reported Running.
func (w *world) allRunning(pods []*v1.Pod) (bool, string) {
	if running, _, _ := w.rep.counts(); running < len(pods) {
		return false, fmt.Sprintf("%d of %d pods reported running", running, len(pods))
	}
	if n := w.a.Workers().Len(); n != len(pods) {
		return false, fmt.Sprintf("the workers know %d pods, want %d", n, len(pods))
	}
	for _, p := range pods {
		info, ok := w.a.Workers().PodInfo(p.UID)
		if !ok || info.State != podworker.SyncPod || !info.Started || info.SyncedAt.IsZero() {
			return false, fmt.Sprintf("pod %s: %+v (known %v)", p.Name, info, ok)
		}
	}
	if sb, c := w.srv.RunningCounts(); sb != len(pods) || c != len(pods) {
		return false, fmt.Sprintf("fakecri runs %d sandboxes and %d containers, want %d of each", sb, c, len(pods))
	}
	return true, ""
}

// drained reports whether the workers know no pod and the runtime holds
// nothing.
func (w *world) drained() (bool, string) {
	if n := w.a.Workers().Len(); n != 0 {
		return false, fmt.Sprintf("the workers still know %d pods", n)
	}
	if sb, c := w.srv.Counts(); sb != 0 || c != 0 {
		return false, fmt.Sprintf("fakecri still holds %d sandboxes and %d containers", sb, c)
	}
	return true, ""
}

// waitFor polls cond every interval until it holds or within has passed;
// it returns the last reason cond gave on a timeout.
func waitFor(within, interval time.Duration, cond func() (bool, string)) error {
	deadline := time.Now().Add(within)
	for {
		ok, why := cond()
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %s: %s", within, why)
		}
		t := time.NewTimer(interval)
		<-t.C
	}
}
