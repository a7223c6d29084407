package agent_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/agent"
	"github.com/podlife/podlife/podmanager"
	"github.com/podlife/podlife/podmanager/source"
	"github.com/podlife/podlife/podworker/podworkertest"
	"github.com/podlife/podlife/runtime"
	"github.com/podlife/podlife/runtime/cri"
	"github.com/podlife/podlife/runtime/fakecri"
)

// testImage is the image of every test pod (fakecri pulls any name; the
// containerd test preloads this one).
const testImage = "localhost/podlife/pause:1.0"

// waitTimeout bounds every wait of the end-to-end tests.
const waitTimeout = 30 * time.Second

// manifest returns a static pod manifest with one container running args.
func manifest(name string, grace int, args ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\nspec:\n  terminationGracePeriodSeconds: %d\n  containers:\n  - name: main\n    image: %s\n", name, grace, testImage)
	if len(args) > 0 {
		b.WriteString("    args:\n")
		for _, a := range args {
			fmt.Fprintf(&b, "    - %q\n", a)
		}
	}
	return b.String()
}

// writeManifest writes atomically, so the file watch never sees half a file.
func writeManifest(t *testing.T, dir, name, content string) {
	t.Helper()
	tmp := filepath.Join(dir, ".tmp-"+name)
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
}

func removeManifest(t *testing.T, dir, name string) {
	t.Helper()
	if err := os.Remove(filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
}

// errorLog collects the errors sources report.
type errorLog struct {
	mu   sync.Mutex
	errs []error
}

func (l *errorLog) add(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errs = append(l.errs, err)
}

func (l *errorLog) matching(target error) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, e := range l.errs {
		if errors.Is(e, target) {
			n++
		}
	}
	return n
}

// faultyRuntime fails the next KillPod calls on demand, for runtimes that
// cannot inject faults themselves (containerd). It embeds the CRI runtime
// itself, not the runtime.Runtime interface, so that the agent still finds
// what the runtime can do beyond it (KillContainer for liveness kills,
// ExecSync for exec probes).
type faultyRuntime struct {
	*cri.Runtime
	failKills atomic.Int32
	// blindAfterKill: once a KillPod succeeds, every GetPods (the
	// relister's listing) fails.
	blindAfterKill atomic.Bool
	blind          atomic.Bool
}

func (f *faultyRuntime) KillPod(ctx context.Context, pod *v1.Pod, runningPod *runtime.Pod, gp *int64) error {
	if f.failKills.Add(-1) >= 0 {
		return fmt.Errorf("injected kill failure: %w", runtime.ErrUnavailable)
	}
	if err := f.Runtime.KillPod(ctx, pod, runningPod, gp); err != nil {
		return err
	}
	if f.blindAfterKill.Load() {
		f.blind.Store(true)
	}
	return nil
}

func (f *faultyRuntime) GetPods(ctx context.Context, all bool) ([]*runtime.Pod, error) {
	if f.blind.Load() {
		return nil, fmt.Errorf("injected listing failure: %w", runtime.ErrUnavailable)
	}
	return f.Runtime.GetPods(ctx, all)
}

// runningAgent is one in-process agent over a CRI endpoint.
type runningAgent struct {
	*agent.Agent
	rt     *faultyRuntime
	reg    *prometheus.Registry
	errs   *errorLog
	cancel context.CancelFunc
	done   chan error
}

// startFakeCRI serves a fakecri.Server with opts on a unix socket in a
// temporary folder, stopped when the test ends, and returns it and its
// endpoint.
func startFakeCRI(t *testing.T, opts fakecri.Options) (*fakecri.Server, string) {
	t.Helper()
	srv := fakecri.New(opts)
	endpoint, err := srv.StartUnix(filepath.Join(t.TempDir(), "cri.sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	return srv, endpoint
}

// apiChannel makes a source.Channel the agent's API source; *ch is set when
// the agent builds it (in agent.New).
func apiChannel(o *agent.Options, ch **source.Channel) {
	o.Sources = []agent.Source{{Name: podmanager.APISource, New: func(sink source.Sink) (agent.Runner, error) {
		var err error
		*ch, err = source.NewChannel(sink, source.ChannelOptions{Source: podmanager.APISource})
		return *ch, err
	}}}
}

// startAgent runs an agent over endpoint with the manifests of dir, on the
// real clock with short intervals.
func startAgent(t *testing.T, endpoint, dir string) *runningAgent {
	t.Helper()
	return startAgentWith(t, endpoint, dir, nil)
}

// newRuntime returns a CRI client of endpoint, closed when the test ends.
func newRuntime(t *testing.T, endpoint string) *cri.Runtime {
	t.Helper()
	return newRuntimeWith(t, endpoint, nil)
}

// newRuntimeWith is newRuntime with options changed by edit.
func newRuntimeWith(t *testing.T, endpoint string, edit func(*cri.Options)) *cri.Runtime {
	t.Helper()
	opts := cri.Options{Endpoint: endpoint, Timeout: 20 * time.Second, CgroupParent: "/podlife-test", Logger: testr.NewWithOptions(t, testr.Options{Verbosity: 1}), VolumeRoot: t.TempDir()}
	if edit != nil {
		edit(&opts)
	}
	rt, err := cri.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	return rt
}

// startAgentWith is startAgent with options changed by edit.
func startAgentWith(t *testing.T, endpoint, dir string, edit func(*agent.Options)) *runningAgent {
	t.Helper()
	return startAgentOn(t, newRuntime(t, endpoint), dir, edit)
}

// startAgentOn is startAgentWith over a runtime of the test's making.
func startAgentOn(t *testing.T, rt *cri.Runtime, dir string, edit func(*agent.Options)) *runningAgent {
	t.Helper()
	var err error
	ra := &runningAgent{rt: &faultyRuntime{Runtime: rt}, reg: prometheus.NewRegistry(), errs: &errorLog{}, done: make(chan error, 1)}
	opts := agent.Options{
		Runtime:              ra.rt,
		NodeName:             "node1",
		ManifestPath:         dir,
		OnSourceError:        ra.errs.add,
		Registerer:           ra.reg,
		Logger:               testr.NewWithOptions(t, testr.Options{Verbosity: 2}),
		HousekeepingInterval: 100 * time.Millisecond,
		RelistInterval:       50 * time.Millisecond,
		BackOffPeriod:        100 * time.Millisecond,
		ResyncInterval:       5 * time.Second,
		// No periodic image garbage collection: on a shared containerd
		// (CI's) it would remove, once the machine's disk is 85 % used,
		// the images other tests imported, which cannot be pulled again.
		// Image GC tests set their own.
		ImageGCHighThresholdPercent: 100,
	}
	if edit != nil {
		edit(&opts)
	}
	ra.Agent, err = agent.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ra.cancel = cancel
	go func() { ra.done <- ra.Run(ctx) }()
	t.Cleanup(func() { ra.stop(t) })
	return ra
}

// stop ends Run and waits for it; it may be called more than once.
func (ra *runningAgent) stop(t *testing.T) {
	t.Helper()
	ra.cancel()
	if ra.done == nil {
		return
	}
	select {
	case err := <-ra.done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(waitTimeout):
		t.Fatal("Run did not return after its context ended")
	}
	ra.done = nil
}

// pod returns the view of the pod named name (without the node suffix), or
// false.
func (ra *runningAgent) pod(name string) (agent.PodView, bool) {
	for _, v := range ra.Pods() {
		if v.Name == name+"-node1" {
			return v, true
		}
	}
	return agent.PodView{}, false
}

// podUID waits for the desired pod named name and returns its UID.
func (ra *runningAgent) podUID(t *testing.T, name string) types.UID {
	t.Helper()
	var uid types.UID
	podworkertest.WaitFor(t, waitTimeout, "pod "+name+" desired", func() bool {
		v, ok := ra.pod(name)
		uid = v.UID
		return ok && v.Desired
	})
	return uid
}

// waitHousekeepings waits for n more complete housekeeping passes.
func (ra *runningAgent) waitHousekeepings(t *testing.T, n uint64) {
	t.Helper()
	target := ra.Housekeepings() + n
	podworkertest.WaitFor(t, waitTimeout, "housekeeping", func() bool { return ra.Housekeepings() >= target })
}

// runtimePods lists the runtime's pods by UID (all: exited ones too).
func runtimePods(t *testing.T, rt runtime.Runtime, all bool) map[types.UID]*runtime.Pod {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	pods, err := rt.GetPods(ctx, all)
	if err != nil {
		t.Logf("GetPods: %v", err)
		return nil
	}
	out := map[types.UID]*runtime.Pod{}
	for _, p := range pods {
		out[p.ID] = p
	}
	return out
}

// runningContainerIDs returns the IDs of the pod's running containers.
func runningContainerIDs(p *runtime.Pod) []string {
	var ids []string
	if p == nil {
		return nil
	}
	for _, c := range p.Containers {
		if c.State == runtime.ContainerStateRunning {
			ids = append(ids, c.ID.ID)
		}
	}
	sort.Strings(ids)
	return ids
}

// waitRunning waits until the pod runs in the runtime with a ready sandbox
// and is reported Running.
func waitRunning(t *testing.T, ra *runningAgent, uid types.UID) {
	t.Helper()
	podworkertest.WaitFor(t, waitTimeout, "pod "+string(uid)+" running", func() bool {
		p := runtimePods(t, ra.rt, false)[uid]
		if p == nil || len(runningContainerIDs(p)) == 0 {
			return false
		}
		st, ok := ra.StatusReporter().Status(uid)
		return ok && st.Phase == "Running"
	})
}

// waitGone waits until the pod has left the runtime entirely (no sandbox, no
// container) and the workers have forgotten it.
func waitGone(t *testing.T, ra *runningAgent, uid types.UID) {
	t.Helper()
	podworkertest.WaitFor(t, waitTimeout, "pod "+string(uid)+" gone", func() bool {
		pods := runtimePods(t, ra.rt, true)
		if pods == nil {
			return false
		}
		if _, ok := pods[uid]; ok {
			return false
		}
		_, known := ra.Workers().PodInfo(uid)
		return !known
	})
}

// podCountMetrics are the six metrics of kubernetes#113145.
var podCountMetrics = []string{"kubelet_desired_pods", "kubelet_active_pods", "kubelet_mirror_pods", "kubelet_working_pods",
	"kubelet_restarted_pods_total", "kubelet_orphaned_runtime_pods_total"}

// series gathers the six pod-count metrics as "name{labels}" → value.
func series(t *testing.T, reg prometheus.Gatherer) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	return seriesOf(mfs)
}

// scrape reads the six pod-count metrics the way Prometheus does: over HTTP
// from promhttp, in the text format.
func scrape(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/metrics", nil)
	req.Header.Set("Accept", "text/plain; version=0.0.4")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	byName, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	mfs := make([]*dto.MetricFamily, 0, len(byName))
	for _, mf := range byName {
		mfs = append(mfs, mf)
	}
	return seriesOf(mfs)
}

func seriesOf(mfs []*dto.MetricFamily) map[string]float64 {
	names := podCountMetrics
	out := map[string]float64{}
	for _, mf := range mfs {
		if !slices.Contains(names, mf.GetName()) {
			continue
		}
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			v := m.GetGauge().GetValue() + m.GetCounter().GetValue()
			out[mf.GetName()+"{"+strings.Join(labels, ",")+"}"] = v
		}
	}
	return out
}

// expectedSeries returns the 23 series, all zero but for set.
func expectedSeries(set map[string]float64) map[string]float64 {
	out := map[string]float64{
		`kubelet_desired_pods{static=""}`:             0,
		`kubelet_desired_pods{static="true"}`:         0,
		`kubelet_active_pods{static=""}`:              0,
		`kubelet_active_pods{static="true"}`:          0,
		`kubelet_mirror_pods{}`:                       0,
		`kubelet_restarted_pods_total{static=""}`:     0,
		`kubelet_restarted_pods_total{static="true"}`: 0,
		`kubelet_orphaned_runtime_pods_total{}`:       0,
	}
	for _, lc := range []string{"sync", "terminating", "terminated"} {
		for _, cs := range [][2]string{{"desired", ""}, {"desired", "true"}, {"orphan", ""}, {"orphan", "true"}, {"runtime_only", "unknown"}} {
			out[fmt.Sprintf(`kubelet_working_pods{config=%q,lifecycle=%q,static=%q}`, cs[0], lc, cs[1])] = 0
		}
	}
	for k, v := range set {
		out[k] = v
	}
	return out
}
