// Command fleet compares simulated nodes side by side on one real control
// plane: podlife's fleet (examples/fleet: many podlife agents in one
// process), KWOK (sigs.k8s.io/kwok: statuses written by stages, no
// lifecycle), and the kubelet as kubemark's hollow node (one process per
// node). For each engine and size it measures the time to all nodes
// Ready, to all pods Running and to all gone, create→Running per pod
// (p50, p99), the engine's API requests per pod, and its CPU seconds and
// resident memory per node and per pod, and prints a Markdown table.
//
//	cd bench && go run ./cmd/fleet -api-dir /tmp/podlife-api -engines fleet,kwok,kubemark -sizes 100x3000,1000x10000
//
// Every engine talks to the API server through a counting proxy with the
// admin's credentials (the fleet impersonates its nodes through it). The
// harness binds the pods to the nodes itself (spec.nodeName, round robin),
// so the scheduler's throughput is not measured; it creates them with
// -creators parallel clients and deletes them with -creators parallel deletes.
// The fleet's pod files are on a tmpfs (/dev/shm, its default); their
// size counts in its memory. kubemark runs at most -kubemark-max-nodes hollow nodes (a process each)
// with the same pods per node as the size asks; its per-node and per-pod
// figures come from those.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/podlife/podlife/bench"
)

type size struct{ nodes, pods int }

type config struct {
	apiDir         string
	engines        []string
	sizes          []size
	fleet          string
	podlifeRoot    string
	kwok           string
	kwokStages     string
	kubemark       string
	kubemarkMax    int
	creators       int
	timeout        time.Duration
	settle         time.Duration
	logDir         string
	fleetExtraArgs []string
	fleetPprof     string
	faults         bool
	faultPods      int
	faultDelay     time.Duration
	faultFor       time.Duration
	faultDown      time.Duration
}

func main() {
	var c config
	var engines, sizes, fleetArgs string
	flag.StringVar(&c.apiDir, "api-dir", "/tmp/podlife-api", "control plane folder of scripts/apiserver/start.sh")
	flag.StringVar(&engines, "engines", "fleet,kwok,kubemark", "engines, one at a time: fleet, kwok, kubemark")
	flag.StringVar(&sizes, "sizes", "100x3000,1000x10000", "NODESxPODS, comma-separated")
	flag.StringVar(&c.fleet, "fleet", "", "fleet binary (default: go build ./examples/fleet)")
	flag.StringVar(&c.podlifeRoot, "podlife-root", "..", "root of the podlife module (to build the fleet)")
	flag.StringVar(&fleetArgs, "fleet-args", "", "more fleet flags, space-separated")
	flag.StringVar(&c.fleetPprof, "fleet-pprof", "", "the fleet serves its profiles on this address; the harness saves its heap (after a GC) and goroutines with the pods running, in LOG-DIR/fleet-heap-NODESxPODS.pb.gz and fleet-goroutines-NODESxPODS.txt")
	flag.StringVar(&c.kwok, "kwok", "/var/cache/podlife-kwok/bin/kwok", "kwok binary (v0.8.0, scripts/kwok/build.sh)")
	flag.StringVar(&c.kwokStages, "kwok-stages", "/var/cache/podlife-kwok/stages", "folder of the Stage files KWOK runs with (scripts/kwok/build.sh copies its \"fast\" ones there)")
	flag.StringVar(&c.kubemark, "kubemark", "/var/cache/podlife-apiserver/bin/kubemark", "kubemark binary")
	flag.IntVar(&c.kubemarkMax, "kubemark-max-nodes", 10, "most hollow nodes (one process each)")
	flag.IntVar(&c.creators, "creators", 50, "parallel pod creators")
	flag.DurationVar(&c.timeout, "timeout", 10*time.Minute, "bound of each phase")
	flag.DurationVar(&c.settle, "settle", 15*time.Second, "wait before each memory reading")
	flag.BoolVar(&c.faults, "faults", false, "with the pods running, slow the engine's API down (-fault-delay on each request for -fault-for), then kill the API server and start it again (away -fault-down before it starts again), and report the nodes' Leases and Ready conditions; -fault-pods pods are created at the start of each")
	flag.IntVar(&c.faultPods, "fault-pods", 100, "pods created at the start of each fault")
	flag.DurationVar(&c.faultDelay, "fault-delay", 3*time.Second, "what each request waits at the proxy while the API is slow")
	flag.DurationVar(&c.faultFor, "fault-for", time.Minute, "how long the API is slow")
	flag.DurationVar(&c.faultDown, "fault-down", 10*time.Second, "how long the killed API server stays away before it starts again (its start adds to that)")
	flag.StringVar(&c.logDir, "log-dir", "", "engine logs (default: a temporary folder)")
	flag.Parse()
	c.fleetExtraArgs = strings.Fields(fleetArgs)
	for _, e := range strings.Split(engines, ",") {
		c.engines = append(c.engines, strings.TrimSpace(e))
	}
	for _, s := range strings.Split(sizes, ",") {
		n, p, ok := strings.Cut(strings.TrimSpace(s), "x")
		nodes, err1 := strconv.Atoi(n)
		pods, err2 := strconv.Atoi(p)
		if !ok || err1 != nil || err2 != nil || nodes < 1 || pods < 1 {
			fmt.Fprintf(os.Stderr, "bad -sizes %q: want NODESxPODS,...\n", sizes)
			os.Exit(2)
		}
		c.sizes = append(c.sizes, size{nodes, pods})
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, c, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "fleet bench:", err)
		os.Exit(1)
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

// result is one engine at one size.
type result struct {
	engine               string
	nodes, pods          int // as run (kubemark: fewer)
	nodesReady           time.Duration
	allRunning, allGone  time.Duration
	p50, p99, max        time.Duration
	requestsPerPod       float64
	cpuIdle              float64 // CPU seconds from start to all Ready and settled
	cpuCreate, cpuDelete float64 // CPU seconds in each phase
	rssIdle, rssPods     int64   // bytes, settled
	perNode, perPod      float64 // bytes
	processes            int
	faults               *faultResult // with -faults
	err                  error
}

func run(ctx context.Context, c config, out io.Writer) error {
	adminPath := filepath.Join(c.apiDir, "admin.kubeconfig")
	adminCfg, err := clientcmd.BuildConfigFromFlags("", adminPath)
	if err != nil {
		return err
	}
	adminCfg.QPS, adminCfg.Burst = 1000, 2000
	admin, err := kubernetes.NewForConfig(adminCfg)
	if err != nil {
		return err
	}
	// The watches get a connection of their own: sharing the creators'
	// HTTP/2 connection, they fall behind and the API server ends them.
	watchCfg := rest.CopyConfig(adminCfg)
	watchCfg.NextProtos = []string{"http/1.1"}
	watcher, err := kubernetes.NewForConfig(watchCfg)
	if err != nil {
		return err
	}
	if c.logDir == "" {
		if c.logDir, err = os.MkdirTemp("", "podlife-fleetbench-"); err != nil {
			return err
		}
	}
	logf("logs in %s", c.logDir)
	if slices.Contains(c.engines, "fleet") && c.fleet == "" {
		c.fleet = filepath.Join(c.logDir, "fleet")
		cmd := exec.CommandContext(ctx, "go", "build", "-o", c.fleet, "./examples/fleet")
		cmd.Dir, cmd.Stdout, cmd.Stderr = c.podlifeRoot, os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("build the fleet: %w", err)
		}
	}
	var results []result
	for _, s := range c.sizes {
		for _, eng := range c.engines {
			if ctx.Err() != nil {
				break
			}
			r := runOne(ctx, c, eng, s, admin, watcher)
			if r.err != nil {
				logf("%s %dx%d: %v", eng, s.nodes, s.pods, r.err)
			}
			results = append(results, r)
			printTable(os.Stderr, results)
		}
	}
	printTable(out, results)
	if c.faults {
		fmt.Fprintln(out)
		printFaults(out, results)
	}
	return nil
}

// runOne runs engine eng at size s; watcher is the client that follows the
// pods (a connection of its own).
func runOne(ctx context.Context, c config, eng string, s size, admin, watcher kubernetes.Interface) (r result) {
	r = result{engine: eng, nodes: s.nodes, pods: s.pods}
	if eng == "kubemark" && s.nodes > c.kubemarkMax {
		r.pods = s.pods * c.kubemarkMax / s.nodes
		r.nodes = c.kubemarkMax
	}
	prefix := "fb-" + eng + "-"
	names := make([]string, r.nodes)
	for i := range names {
		names[i] = prefix + strconv.Itoa(i)
	}
	cleanup := func() { deleteNodes(context.WithoutCancel(ctx), admin, names) }
	cleanup()
	defer cleanup()

	adminCfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(c.apiDir, "admin.kubeconfig"))
	if err != nil {
		r.err = err
		return r
	}
	proxy, err := bench.StartCountingProxy(adminCfg)
	if err != nil {
		r.err = err
		return r
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		_ = proxy.Close(sctx)
	}()
	kubeconfig := filepath.Join(c.logDir, eng+".kubeconfig")
	if err := proxy.WriteKubeconfig(kubeconfig); err != nil {
		r.err = err
		return r
	}

	start := time.Now()
	var procs []*bench.Process
	filesIn := "" // a folder on a tmpfs whose files count as the engine's memory
	defer func() {
		for _, p := range procs {
			p.Stop(30 * time.Second)
		}
	}()
	switch eng {
	case "fleet":
		// The fleet's pod files in memory, as by default; their size counts
		// as the fleet's memory.
		root := filepath.Join("/dev/shm", "podlife-fleetbench-root")
		_ = os.RemoveAll(root)
		defer os.RemoveAll(root)
		filesIn = root
		args := append([]string{"--kubeconfig", kubeconfig, "--nodes", strconv.Itoa(r.nodes), "--prefix", prefix,
			"--root-dir", root}, c.fleetExtraArgs...)
		if c.fleetPprof != "" {
			args = append(args, "--pprof-address", c.fleetPprof)
		}
		p, err := startProcess(c, "fleet", nil, c.fleet, args...)
		if err != nil {
			r.err = err
			return r
		}
		procs = append(procs, p)
	case "kwok":
		if err := createKwokNodes(ctx, admin, names); err != nil {
			r.err = err
			return r
		}
		stages, err := filepath.Glob(filepath.Join(c.kwokStages, "*.yaml"))
		if err != nil || len(stages) == 0 {
			r.err = fmt.Errorf("no KWOK stages in %s (%v): run scripts/kwok/build.sh", c.kwokStages, err)
			return r
		}
		p, err := startProcess(c, "kwok", nil, c.kwok, "--kubeconfig", kubeconfig, "--config", strings.Join(stages, ","),
			"--manage-all-nodes=false", "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
			"--node-lease-duration-seconds=40", "--cidr=10.64.0.0/12")
		if err != nil {
			r.err = err
			return r
		}
		procs = append(procs, p)
	case "kubemark":
		tmp := filepath.Join(c.logDir, "kubemark-tmp")
		for i, name := range names {
			port := 20000 + i
			p, err := startProcess(c, "kubemark-"+name, []string{"TMPDIR=" + tmp}, c.kubemark,
				"--morph=kubelet", "--name="+name, "--kubeconfig="+kubeconfig,
				"--kubelet-port="+strconv.Itoa(port), "--kubelet-read-only-port=0", "--use-host-image-service=false",
				"--kube-api-qps=50", "--kube-api-burst=100", "--max-pods=350")
			if err != nil {
				r.err = err
				return r
			}
			procs = append(procs, p)
		}
	default:
		r.err = fmt.Errorf("unknown engine %q", eng)
		return r
	}
	r.processes = len(procs)
	if err := waitNodesReady(ctx, admin, names, c.timeout); err != nil {
		r.err = err
		return r
	}
	r.nodesReady = time.Since(start)
	logf("%s: %d nodes Ready in %v", eng, r.nodes, r.nodesReady.Round(time.Millisecond))
	sleep(ctx, c.settle)
	r.cpuIdle = cpuSeconds(procs)
	r.rssIdle = rss(procs) + filesSize(filesIn)

	ns := fmt.Sprintf("fleetbench-%s-%d", eng, time.Now().Unix()%100000)
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		r.err = err
		return r
	}
	defer func() {
		_ = admin.CoreV1().Namespaces().Delete(context.WithoutCancel(ctx), ns, metav1.DeleteOptions{})
	}()
	for i := 0; ; i++ { // the service account controller makes "default"
		if _, err := admin.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{}); err == nil || i > 100 {
			break
		}
		sleep(ctx, 100*time.Millisecond)
	}
	tctx, stopTracking := context.WithCancel(ctx)
	defer stopTracking()
	tracker, err := trackPods(tctx, watcher, ns)
	if err != nil {
		r.err = err
		return r
	}
	reqBefore := proxy.Snapshot()
	cpuBefore := cpuSeconds(procs)
	lat, allRunning, err := createAndWait(ctx, c, admin, tracker, ns, names, 0, r.pods)
	r.allRunning = allRunning
	if err != nil {
		r.err = err
		return r
	}
	slices.Sort(lat)
	r.p50, r.p99, r.max = lat[len(lat)/2], lat[min(len(lat)-1, len(lat)*99/100)], lat[len(lat)-1]
	r.cpuCreate = cpuSeconds(procs) - cpuBefore
	logf("%s: %d pods Running in %v (p50 %v, p99 %v, max %v)", eng, r.pods, allRunning.Round(time.Millisecond), r.p50, r.p99, r.max)
	tracker.mu.Lock()
	for name, d := range tracker.running {
		if d > 5*time.Second {
			logf("%s: %s Running %v after its creation", eng, name, d.Round(time.Millisecond))
		}
	}
	tracker.mu.Unlock()
	sleep(ctx, c.settle)
	r.rssPods = rss(procs) + filesSize(filesIn)
	if eng == "fleet" && c.fleetPprof != "" {
		path := filepath.Join(c.logDir, fmt.Sprintf("fleet-heap-%dx%d.pb.gz", r.nodes, r.pods))
		_ = saveURL(ctx, "http://"+c.fleetPprof+"/debug/pprof/goroutine?debug=1", filepath.Join(c.logDir, fmt.Sprintf("fleet-goroutines-%dx%d.txt", r.nodes, r.pods)))
		if err := saveURL(ctx, "http://"+c.fleetPprof+"/debug/pprof/heap?gc=1", path); err != nil {
			logf("fleet heap profile: %v", err)
		} else {
			logf("fleet heap profile with the pods running: %s", path)
		}
	}

	pods := r.pods
	var faultRequests map[string]int // the requests during the faults, not counted per pod
	if c.faults {
		before := proxy.Snapshot()
		fr, created := faults(ctx, c, admin, tracker, proxy, procs, ns, names, r.pods)
		faultRequests, _ = bench.Diff(before, proxy.Snapshot())
		r.faults, pods = &fr, pods+created
	}

	cpuBefore = cpuSeconds(procs)
	if r.allGone, err = deleteAndWait(ctx, c, admin, tracker, ns, pods); err != nil {
		r.err = err
		return r
	}
	r.cpuDelete = cpuSeconds(procs) - cpuBefore
	requests, _ := bench.Diff(reqBefore, proxy.Snapshot())
	total := 0
	for k, n := range requests {
		requests[k] = n - faultRequests[k]
		total += requests[k]
	}
	r.requestsPerPod = float64(total) / float64(pods)
	logf("%s: all gone in %v; requests %s", eng, r.allGone.Round(time.Millisecond), bench.FormatCounts(requests))
	if faultRequests != nil {
		logf("%s: requests during the faults %s", eng, bench.FormatCounts(faultRequests))
	}
	r.perNode = float64(r.rssIdle) / float64(r.nodes)
	r.perPod = float64(r.rssPods-r.rssIdle) / float64(r.pods)
	return r
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// createKwokNodes creates the Nodes KWOK manages, as its documentation
// shows them.
func createKwokNodes(ctx context.Context, admin kubernetes.Interface, names []string) error {
	res := v1.ResourceList{v1.ResourceCPU: resource.MustParse("32"), v1.ResourceMemory: resource.MustParse("256Gi"), v1.ResourcePods: resource.MustParse("110")}
	return parallel(ctx, 20, len(names), func(i int) error {
		n := &v1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: names[i],
				Annotations: map[string]string{"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
				Labels:      map[string]string{"kubernetes.io/hostname": names[i], "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64", "type": "kwok"}},
			Status: v1.NodeStatus{Capacity: res, Allocatable: res},
		}
		_, err := admin.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
		return err
	})
}

func deleteNodes(ctx context.Context, admin kubernetes.Interface, names []string) {
	_ = parallel(ctx, 20, len(names), func(i int) error {
		_ = admin.CoordinationV1().Leases(v1.NamespaceNodeLease).Delete(ctx, names[i], metav1.DeleteOptions{})
		err := admin.CoreV1().Nodes().Delete(ctx, names[i], metav1.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
}

// parallel runs f(0..n-1) on k goroutines; the first error wins.
func parallel(ctx context.Context, k, n int, f func(i int) error) error {
	var next atomic.Int64
	var first error
	var once sync.Once
	var wg sync.WaitGroup
	for range k {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := f(i); err != nil {
					once.Do(func() { first = err })
				}
			}
		}()
	}
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return first
}

func waitNodesReady(ctx context.Context, admin kubernetes.Interface, names []string, timeout time.Duration) error {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	deadline := time.Now().Add(timeout)
	for {
		list, err := admin.CoreV1().Nodes().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		ready := 0
		if err == nil {
			for _, n := range list.Items {
				if !want[n.Name] {
					continue
				}
				for _, c := range n.Status.Conditions {
					if c.Type == v1.NodeReady && c.Status == v1.ConditionTrue {
						ready++
					}
				}
			}
		}
		if ready == len(names) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d nodes Ready after %v", ready, len(names), timeout)
		}
		sleep(ctx, 250*time.Millisecond)
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// podTracker follows the pods of a namespace through an informer (whose
// reflector lists again when the API server ends a watch): when each was
// first seen Running, and which are gone.
type podTracker struct {
	mu      sync.Mutex
	created map[string]time.Time     // by name: when the harness created it
	running map[string]time.Duration // by name: create→first seen Running
	present map[string]bool          // in the informer's store
	changed chan struct{}            // capacity 1: something changed
}

func trackPods(ctx context.Context, watcher kubernetes.Interface, ns string) (*podTracker, error) {
	t := &podTracker{created: map[string]time.Time{}, running: map[string]time.Duration{}, present: map[string]bool{}, changed: make(chan struct{}, 1)}
	factory := informers.NewSharedInformerFactoryWithOptions(watcher, 0, informers.WithNamespace(ns))
	inf := factory.Core().V1().Pods().Informer()
	seen := func(obj any) {
		p, ok := obj.(*v1.Pod)
		if !ok {
			return
		}
		now := time.Now()
		t.mu.Lock()
		t.present[p.Name] = true
		if _, done := t.running[p.Name]; !done && p.Status.Phase == v1.PodRunning {
			if t0, ok := t.created[p.Name]; ok {
				t.running[p.Name] = now.Sub(t0)
			}
		}
		t.mu.Unlock()
		t.signal()
	}
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    seen,
		UpdateFunc: func(_, obj any) { seen(obj) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if p, ok := obj.(*v1.Pod); ok {
				t.mu.Lock()
				delete(t.present, p.Name)
				t.mu.Unlock()
				t.signal()
			}
		},
	})
	if err != nil {
		return nil, err
	}
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return nil, errors.New("the pod informer did not sync")
	}
	return t, nil
}

func (t *podTracker) signal() {
	select {
	case t.changed <- struct{}{}:
	default:
	}
}

// wait waits until cond (called with t.mu held) holds.
func (t *podTracker) wait(ctx context.Context, timeout time.Duration, cond func() bool) bool {
	deadline := time.After(timeout)
	for {
		t.mu.Lock()
		ok := cond()
		t.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-t.changed:
		case <-time.After(time.Second):
		case <-deadline:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// createAndWait creates n pods, p-FROM to p-(FROM+n-1), bound round robin
// to nodes, and waits until every one was seen Running; it returns each
// pod's create→Running and the time from the first create to the last
// Running.
func createAndWait(ctx context.Context, c config, admin kubernetes.Interface, t *podTracker, ns string, nodes []string, from, n int) ([]time.Duration, time.Duration, error) {
	start := time.Now()
	errc := make(chan error, 1)
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("p-%06d", from+i)
	}
	go func() {
		grace := int64(30)
		errc <- parallel(ctx, c.creators, n, func(i int) error {
			name := names[i]
			p := &v1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "fleetbench"}},
				Spec: v1.PodSpec{
					NodeName:                      nodes[(from+i)%len(nodes)],
					TerminationGracePeriodSeconds: &grace,
					Containers:                    []v1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}},
					Tolerations:                   []v1.Toleration{{Operator: v1.TolerationOpExists}},
				},
			}
			t.mu.Lock()
			t.created[name] = time.Now()
			t.mu.Unlock()
			_, err := admin.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
			return err
		})
	}()
	if err := <-errc; err != nil {
		return nil, 0, fmt.Errorf("create: %w", err)
	}
	var got int
	if !t.wait(ctx, c.timeout, func() bool {
		got = 0
		for _, name := range names {
			if _, ok := t.running[name]; ok {
				got++
			}
		}
		return got == n
	}) {
		return nil, 0, fmt.Errorf("%d of %d pods Running after %v", got, n, c.timeout)
	}
	all := time.Since(start)
	t.mu.Lock()
	defer t.mu.Unlock()
	lat := make([]time.Duration, 0, n)
	for _, name := range names {
		lat = append(lat, t.running[name])
	}
	return lat, all, nil
}

// deleteAndWait deletes every pod of ns (-creators deletes at once; one
// DeleteCollection of thousands of pods outlasts the API server's request
// timeout) and waits for them all to be gone.
func deleteAndWait(ctx context.Context, c config, admin kubernetes.Interface, t *podTracker, ns string, n int) (time.Duration, error) {
	start := time.Now()
	err := parallel(ctx, c.creators, n, func(i int) error {
		err := admin.CoreV1().Pods(ns).Delete(ctx, fmt.Sprintf("p-%06d", i), metav1.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("delete: %w", err)
	}
	var left int
	if !t.wait(ctx, c.timeout, func() bool { left = len(t.present); return left == 0 }) {
		return 0, fmt.Errorf("%d of %d pods left after %v", left, n, c.timeout)
	}
	return time.Since(start), nil
}

// startProcess starts an engine's process, its output in LOG-DIR/NAME.log.
func startProcess(c config, name string, env []string, bin string, args ...string) (*bench.Process, error) {
	return bench.StartProcess(filepath.Join(c.logDir, name+".log"), env, bin, args...)
}

// cpuSeconds is the user and system CPU time of the processes so far.
func cpuSeconds(procs []*bench.Process) float64 {
	total := 0.0
	for _, p := range procs {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.Pid))
		if err != nil {
			continue
		}
		// The fields after the command's ")": state is the 3rd field of
		// stat, utime and stime the 14th and 15th.
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		if len(f) < 13 {
			continue
		}
		u, _ := strconv.ParseFloat(f[11], 64)
		st, _ := strconv.ParseFloat(f[12], 64)
		total += (u + st) / 100 // USER_HZ
	}
	return total
}

// rss is the resident memory of the processes, in bytes.
func rss(procs []*bench.Process) int64 {
	var total int64
	for _, p := range procs {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.Pid))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				total += kb << 10
			}
		}
	}
	return total
}

// saveURL writes what url answers to path.
func saveURL(ctx context.Context, url, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// filesSize is what the files under dir (on a tmpfs) take: their sizes in
// whole pages.
func filesSize(dir string) int64 {
	if dir == "" {
		return 0
	}
	var total int64
	_ = filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if info, err := d.Info(); err == nil && info.Mode().IsRegular() {
			total += (info.Size() + 4095) &^ 4095
		}
		return nil
	})
	return total
}

func printTable(out io.Writer, rs []result) {
	fmt.Fprintln(out, "| engine | nodes | pods | processes | nodes Ready | all Running | p50 / p99 / max create→Running | all gone | API requests per pod | CPU s: to Ready / create / delete | RSS idle (per node) | RSS with pods (per pod) |")
	fmt.Fprintln(out, "|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range rs {
		if r.err != nil {
			fmt.Fprintf(out, "| %s | %d | %d | %d | failed: %v |||||||| \n", r.engine, r.nodes, r.pods, r.processes, r.err)
			continue
		}
		fmt.Fprintf(out, "| %s | %d | %d | %d | %.1f s | %.1f s | %v / %v / %v | %.1f s | %.1f | %.1f / %.1f / %.1f | %.0f MiB (%.0f KiB) | %.0f MiB (%.1f KiB) |\n",
			r.engine, r.nodes, r.pods, r.processes, r.nodesReady.Seconds(), r.allRunning.Seconds(),
			r.p50.Round(time.Millisecond), r.p99.Round(time.Millisecond), r.max.Round(time.Millisecond), r.allGone.Seconds(), r.requestsPerPod,
			r.cpuIdle, r.cpuCreate, r.cpuDelete,
			float64(r.rssIdle)/(1<<20), r.perNode/1024, float64(r.rssPods)/(1<<20), r.perPod/1024)
	}
}
