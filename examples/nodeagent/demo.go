package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/codes"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/agent"
	"github.com/podlife/podlife/podworker"
	"github.com/podlife/podlife/runtime"
)

// demoTimeout bounds every wait of the demo.
const demoTimeout = 20 * time.Second

// finishRecorder is the demo's StatusReporter: it records every pod that
// reached finished (SyncTerminatedPod published its final status).
type finishRecorder struct {
	mu       sync.Mutex
	finished []finishedPod
}

type finishedPod struct {
	uid   types.UID
	name  string
	phase v1.PodPhase
	at    time.Time
}

func (r *finishRecorder) SetPodStatus(context.Context, *v1.Pod, *v1.Pod, v1.PodStatus) error {
	return nil
}

func (r *finishRecorder) PodFinished(_ context.Context, pod, _ *v1.Pod, st v1.PodStatus) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.finished = append(r.finished, finishedPod{uid: pod.UID, name: pod.Name, phase: st.Phase, at: time.Now()})
	return nil
}

func (r *finishRecorder) count(uid types.UID) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, f := range r.finished {
		if f.uid == uid {
			n++
		}
	}
	return n
}

// demo holds the demo's world.
type demo struct {
	out   io.Writer
	dir   string
	agent *agent.Agent
	reg   *prometheus.Registry
	rec   *finishRecorder
	rows  []row
	check []checkResult
}

// row is one line of the pod table.
type row struct {
	pod, uid, story, finished, phase, took string
}

type checkResult struct {
	what string
	ok   bool
}

func (d *demo) expect(what string, ok bool) {
	d.check = append(d.check, checkResult{what, ok})
	mark := "ok  "
	if !ok {
		mark = "FAIL"
	}
	fmt.Fprintf(d.out, "  [%s] %s\n", mark, what)
}

// poll waits until cond holds or the timeout passes.
func poll(ctx context.Context, cond func() bool) bool {
	deadline := time.Now().Add(demoTimeout)
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
	return true
}

func demoManifest(name string, grace int, args ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\nspec:\n  terminationGracePeriodSeconds: %d\n  containers:\n  - name: main\n    image: localhost/podlife/pause:1.0\n", name, grace)
	if len(args) > 0 {
		fmt.Fprintf(&b, "    args: [%q]\n", strings.Join(args, `", "`))
	}
	return b.String()
}

func (d *demo) write(name, content string) error {
	tmp := filepath.Join(d.dir, ".tmp-"+name)
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(d.dir, name))
}

func (d *demo) remove(name string) error { return os.Remove(filepath.Join(d.dir, name)) }

// view returns the pod named name-demo.
func (d *demo) view(name string) (agent.PodView, bool) {
	for _, v := range d.agent.Pods() {
		if v.Name == name+"-demo" {
			return v, true
		}
	}
	return agent.PodView{}, false
}

func (d *demo) running(name string) bool {
	v, ok := d.view(name)
	return ok && v.Lifecycle == "syncing" && v.Phase == v1.PodRunning
}

// series reads the six pod-count metrics.
func (d *demo) series() map[string]float64 {
	out := map[string]float64{}
	mfs, err := d.reg.Gather()
	if err != nil {
		return out
	}
	for _, mf := range mfs {
		switch strings.TrimPrefix(mf.GetName(), "kubelet_") {
		case "desired_pods", "active_pods", "mirror_pods", "working_pods", "restarted_pods_total", "orphaned_runtime_pods_total":
		default:
			continue
		}
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			name := mf.GetName()
			if len(labels) > 0 {
				name += "{" + strings.Join(labels, ",") + "}"
			}
			out[name] = m.GetGauge().GetValue() + m.GetCounter().GetValue()
		}
	}
	return out
}

func short(uid types.UID) string {
	if len(uid) > 8 {
		return string(uid[:8])
	}
	return string(uid)
}

// runDemo runs the seed's story on an embedded runtime and prints what
// happened. It reports whether every check held.
func runDemo(ctx context.Context, out io.Writer, log logr.Logger) (bool, error) {
	began := time.Now()
	rt, srv, closeRuntime, err := openRuntime("", false, log, nil)
	if err != nil {
		return false, err
	}
	defer closeRuntime()
	dir, err := os.MkdirTemp("", "podlife-demo-")
	if err != nil {
		return false, err
	}
	defer os.RemoveAll(dir)
	d := &demo{out: out, dir: dir, reg: prometheus.NewRegistry(), rec: &finishRecorder{}}

	fmt.Fprintln(out, "== before the agent starts: a pod left in the runtime by an earlier agent")
	leftover := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "leftover-demo", Namespace: "default", UID: "0rphan00-0000-4000-8000-000000000001"},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "main", Image: "localhost/podlife/pause:1.0"}}},
	}
	if err := rt.SyncPod(ctx, leftover, nil); err != nil {
		return false, fmt.Errorf("create the leftover pod: %w", err)
	}
	for name, m := range map[string]string{
		"web.yaml":   demoManifest("web", 2),
		"cache.yaml": demoManifest("cache", 1, "hang"),
		"again.yaml": demoManifest("again", 2, "hang"),
	} {
		if err := d.write(name, m); err != nil {
			return false, err
		}
	}

	d.agent, err = agent.New(agent.Options{
		Runtime:              rt,
		NodeName:             "demo",
		ManifestPath:         dir,
		Registerer:           d.reg,
		Logger:               log.WithName("agent"),
		StatusReporter:       func(agent.PodStateProvider) (agent.StatusReporter, error) { return d.rec, nil },
		HousekeepingInterval: 500 * time.Millisecond,
		RelistInterval:       100 * time.Millisecond,
		BackOffPeriod:        250 * time.Millisecond,
	})
	if err != nil {
		return false, err
	}
	agentStart := time.Now()
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- d.agent.Run(runCtx) }()
	defer func() { stop(); <-done }()

	fmt.Fprintln(out, "== static pods web, cache and again start; the leftover pod is found at start-up")
	d.expect("static pods web, cache and again are Running", poll(ctx, func() bool {
		return d.running("web") && d.running("cache") && d.running("again")
	}))
	orphanGone := poll(ctx, func() bool {
		pods, err := rt.GetPods(ctx, true)
		if err != nil {
			return false
		}
		_, known := d.agent.Workers().PodInfo(leftover.UID)
		return !known && !slices.ContainsFunc(pods, func(p *runtime.Pod) bool { return p.ID == leftover.UID })
	})
	d.expect("the orphaned runtime pod was terminated and removed", orphanGone)
	d.expect("kubelet_orphaned_runtime_pods_total is 1", d.series()["kubelet_orphaned_runtime_pods_total"] == 1)
	d.rows = append(d.rows, row{"default/leftover-demo", short(leftover.UID), "orphaned runtime pod found at start-up", yesNo(orphanGone),
		"- (no spec)", time.Since(agentStart).Round(10 * time.Millisecond).String()})
	n := d.agent.Housekeepings()
	poll(ctx, func() bool { return d.agent.Housekeepings() >= n+1 })
	atStart := d.series()
	d.expect("3 static pods desired, active and syncing", atStart[`kubelet_desired_pods{static="true"}`] == 3 &&
		atStart[`kubelet_active_pods{static="true"}`] == 3 &&
		atStart[`kubelet_working_pods{config="desired",lifecycle="sync",static="true"}`] == 3)

	fmt.Fprintln(out, "== mesh: an init container, a sidecar behind a startup probe, an app with readiness and liveness probes")
	if err := d.write("mesh.yaml", meshManifest); err != nil {
		return false, err
	}
	t0 := time.Now()
	var mesh agent.PodView
	var why string
	meshReady := poll(ctx, func() bool {
		var ok bool
		if mesh, ok = d.view("mesh"); !ok {
			why = "not seen yet"
			return false
		}
		st, ok := d.agent.StatusReporter().Status(mesh.UID)
		if !ok {
			why = "no status yet"
			return false
		}
		why = meshNotReady(st)
		return why == ""
	})
	d.expect("mesh: setup Completed, then proxy started, then app; Initialized and Ready ("+orDone(why)+")", meshReady)
	d.rows = append(d.rows, row{mesh.Namespace + "/" + mesh.Name, short(mesh.UID), "init container, sidecar, probes: Ready", yesNo(meshReady),
		"Running", time.Since(t0).Round(10 * time.Millisecond).String()})

	fmt.Fprintln(out, "== cache is force-deleted (manifest removed) while the runtime fails its stops")
	cache, _ := d.view("cache")
	srv.FailTimes("StopContainer", 2, codes.Unavailable)
	srv.FailTimes("StopPodSandbox", 2, codes.Unavailable)
	t0 = time.Now()
	if err := d.remove("cache.yaml"); err != nil {
		return false, err
	}
	maxFailures := 0
	cacheDone := poll(ctx, func() bool {
		if info, ok := d.agent.Workers().PodInfo(cache.UID); ok && info.Failures > maxFailures {
			maxFailures = info.Failures
		}
		return d.rec.count(cache.UID) == 1
	})
	d.expect(fmt.Sprintf("cache finished after %d failed kill attempt(s), retried by the pod workers", maxFailures), cacheDone && maxFailures > 0)
	d.rows = append(d.rows, d.finishedRow(cache, fmt.Sprintf("force-deleted, %d failed kills retried", maxFailures), 0, t0))

	fmt.Fprintln(out, "== again is removed and, while it terminates, recreated with the same UID")
	again, _ := d.view("again")
	t0 = time.Now()
	if err := d.remove("again.yaml"); err != nil {
		return false, err
	}
	terminating := poll(ctx, func() bool {
		info, ok := d.agent.Workers().PodInfo(again.UID)
		return ok && info.Lifecycle == podworker.LifecycleTerminating
	})
	d.expect("again is terminating", terminating)
	if err := d.write("again.yaml", demoManifest("again", 2, "hang")); err != nil {
		return false, err
	}
	restarted := poll(ctx, func() bool {
		v, ok := d.view("again")
		return d.rec.count(again.UID) == 1 && ok && v.UID == again.UID && d.running("again") &&
			d.series()[`kubelet_restarted_pods_total{static="true"}`] == 1
	})
	d.expect("the first incarnation finished, the same UID runs again, kubelet_restarted_pods_total{static=\"true\"} is 1", restarted)
	d.rows = append(d.rows, d.finishedRow(again, "recreated with the same UID: 1st incarnation", 0, t0))

	fmt.Fprintln(out, "== the remaining manifests are removed: every pod must reach finished")
	web, _ := d.view("web")
	t0 = time.Now()
	for _, name := range []string{"web.yaml", "again.yaml", "mesh.yaml"} {
		if err := d.remove(name); err != nil {
			return false, err
		}
	}
	allDone := poll(ctx, func() bool {
		pods, err := rt.GetPods(ctx, true)
		return err == nil && len(pods) == 0 && d.rec.count(web.UID) == 1 && d.rec.count(again.UID) == 2 &&
			d.rec.count(mesh.UID) == 1 && d.agent.Workers().Len() == 0
	})
	d.expect("web, again and mesh finished, the runtime is empty and the workers forgot every pod", allDone)
	d.rows = append(d.rows, d.finishedRow(again, "recreated with the same UID: 2nd incarnation", 1, t0))
	d.rows = append(d.rows, d.finishedRow(web, "manifest removed", 0, t0))
	d.rows = append(d.rows, d.finishedRow(mesh, "manifest removed", 0, t0))

	// Two more housekeeping passes, so the gauges show the empty node.
	n = d.agent.Housekeepings()
	poll(ctx, func() bool { return d.agent.Housekeepings() >= n+2 })
	s := d.series()
	d.expect("all 23 pod-count series are exported", len(s) == 23)
	want := map[string]float64{
		"kubelet_orphaned_runtime_pods_total":         1,
		`kubelet_restarted_pods_total{static="true"}`: 1,
	}
	final := true
	for k, v := range s {
		if v != want[k] {
			final = false
		}
	}
	d.expect("final values: orphaned 1, restarted{static=\"true\"} 1, every gauge 0", final)

	fmt.Fprintln(out)
	fmt.Fprintln(out, "Pods")
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "POD\tUID\tSTORY\tFINISHED\tFINAL PHASE\tTOOK")
	for _, r := range d.rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.pod, r.uid, r.story, r.finished, r.phase, r.took)
	}
	_ = tw.Flush()

	fmt.Fprintln(out)
	fmt.Fprintln(out, "Metrics (the 23 pod-count series; those zero throughout folded)")
	keys := make([]string, 0, len(s))
	zero := 0
	for k, v := range s {
		if v == 0 && atStart[k] == 0 {
			zero++
			continue
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	tw = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERIES\tPODS RUNNING\tAT THE END")
	for _, k := range keys {
		fmt.Fprintf(tw, "%s\t%g\t%g\n", k, atStart[k], s[k])
	}
	fmt.Fprintf(tw, "(%d other series)\t0\t0\n", zero)
	_ = tw.Flush()

	ok := true
	failed := 0
	for _, c := range d.check {
		if !c.ok {
			ok = false
			failed++
		}
	}
	fmt.Fprintln(out)
	if ok {
		fmt.Fprintf(out, "PASS: all %d checks held (%s)\n", len(d.check), time.Since(began).Round(time.Millisecond))
	} else {
		fmt.Fprintf(out, "FAIL: %d of %d checks failed (%s)\n", failed, len(d.check), time.Since(began).Round(time.Millisecond))
	}
	return ok, nil
}

// finishedRow describes the nth recorded finish of pod v; TOOK is the time
// from since to that finish.
func (d *demo) finishedRow(v agent.PodView, story string, nth int, since time.Time) row {
	r := row{pod: v.Namespace + "/" + v.Name, uid: short(v.UID), story: story, finished: "no", phase: "-", took: "-"}
	d.rec.mu.Lock()
	defer d.rec.mu.Unlock()
	i := 0
	for _, f := range d.rec.finished {
		if f.uid != v.UID {
			continue
		}
		if i == nth {
			r.finished, r.phase, r.took = "yes", string(f.phase), f.at.Sub(since).Round(10*time.Millisecond).String()
		}
		i++
	}
	return r
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// meshManifest is manifests/mesh.yaml as a static pod of the demo: what
// service meshes and most charts send. The probes exec "true", which the
// embedded fakecri answers with exit code 0.
const meshManifest = `apiVersion: v1
kind: Pod
metadata:
  name: mesh
  namespace: default
spec:
  terminationGracePeriodSeconds: 2
  initContainers:
  - name: setup
    image: localhost/podlife/pause:1.0
    args: ["exit", "0"]
  - name: proxy
    image: localhost/podlife/pause:1.0
    restartPolicy: Always
    startupProbe:
      exec: {command: ["true"]}
      periodSeconds: 1
  containers:
  - name: app
    image: localhost/podlife/pause:1.0
    readinessProbe:
      exec: {command: ["true"]}
      periodSeconds: 1
    livenessProbe:
      exec: {command: ["true"]}
      periodSeconds: 5
`

// meshNotReady says what of the mesh pod's status is not yet as it should
// end up ("" once it is): setup terminated Completed, proxy running and
// started no later than app, app ready, conditions Initialized and Ready
// True.
func meshNotReady(st v1.PodStatus) string {
	cond := func(t v1.PodConditionType) bool {
		for _, c := range st.Conditions {
			if c.Type == t {
				return c.Status == v1.ConditionTrue
			}
		}
		return false
	}
	find := func(list []v1.ContainerStatus, name string) *v1.ContainerStatus {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
		return nil
	}
	setup, proxy, app := find(st.InitContainerStatuses, "setup"), find(st.InitContainerStatuses, "proxy"), find(st.ContainerStatuses, "app")
	switch {
	case setup == nil || setup.State.Terminated == nil || setup.State.Terminated.Reason != "Completed":
		return "setup not Completed"
	case proxy == nil || proxy.State.Running == nil || proxy.Started == nil || !*proxy.Started:
		return "proxy not started"
	case app == nil || app.State.Running == nil || !app.Ready:
		return "app not ready"
	case app.State.Running.StartedAt.Before(&proxy.State.Running.StartedAt):
		return "app started before proxy"
	case !cond(v1.PodInitialized) || !cond(v1.PodReady):
		return "Initialized or Ready not True"
	}
	return ""
}

func orDone(why string) string {
	if why == "" {
		return "done"
	}
	return why
}
