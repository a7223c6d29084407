// Command cluster runs the same pod workload against one real control plane
// for each engine in turn (podlife's nodeagent, virtual-kubelet v1.14.1, the
// kubelet as kubemark's hollow node), on one node name, and prints a Markdown
// table: time to all Running, time to all gone after the delete, p50/p99
// create→Running per pod, and API requests per pod lifecycle. -volumes
// gives the pods volumes (a ConfigMap, a Secret and the service-account
// token), and -runs repeats every workload, alternating them, with a
// table of medians at the end.
//
//	cd bench && go run ./cmd/cluster -api-dir /tmp/podlife-api -node bench-1 -engines podlife,vk,kubemark -pods 100,300,1000
//	cd bench && go run ./cmd/cluster -engines podlife,kubemark -pods 300 -volumes none,per-pod -runs 3
//
// See bench/README.md ("Against a real control plane").
package main

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/podlife/podlife/bench"
	coordv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

type config struct {
	apiDir      string
	node        string
	engines     []string
	sizes       []int
	timeout     time.Duration
	nodeagent   string
	kubemark    string
	registers   bool
	creators    int
	logDir      string
	podlifeRoot string
	podlifeV    int
	podlifeArgs []string
	// podlifeTmp is the nodeagent's TMPDIR: its volume root is
	// podlifeTmp/podlife-pod-volumes.
	podlifeTmp   string
	kubemarkArgs []string
	volumes      []bench.ClusterVolumes
	runs         int
}

func main() {
	var c config
	var engines, sizes string
	flag.StringVar(&c.apiDir, "api-dir", "/tmp/podlife-api", "control plane folder of scripts/apiserver/start.sh (admin.kubeconfig, node-NAME.kubeconfig)")
	flag.StringVar(&c.node, "node", "bench-1", "node name (its kubeconfig node-NAME.kubeconfig must exist)")
	flag.StringVar(&engines, "engines", "podlife,vk,kubemark", "engines, run one at a time: podlife, vk, kubemark")
	flag.StringVar(&sizes, "pods", "100,300,1000", "pod counts")
	flag.DurationVar(&c.timeout, "timeout", 5*time.Minute, "bound of each phase (all Running; all gone)")
	flag.StringVar(&c.nodeagent, "nodeagent", "", "nodeagent binary (default: built from the repository with go build ./examples/nodeagent)")
	flag.StringVar(&c.podlifeRoot, "podlife-root", "..", "root of the podlife module (to build the nodeagent)")
	flag.StringVar(&c.kubemark, "kubemark", "/var/cache/podlife-apiserver/bin/kubemark", "kubemark binary (see /work/shared/tools/README.md)")
	flag.BoolVar(&c.registers, "podlife-registers-node", false, "the nodeagent registers its Node and renews its Lease; when false the harness makes the Node (Ready, 2000 pods) and renews its Lease")
	flag.IntVar(&c.podlifeV, "podlife-v", 0, "log verbosity of the nodeagent (4 logs every pod's steps with millisecond times)")
	podlifeArgs := flag.String("podlife-args", "", "more nodeagent flags, space-separated (e.g. \"--event-qps 10\")")
	flag.StringVar(&c.podlifeTmp, "podlife-tmpdir", "", "TMPDIR of the nodeagent, whose volume root is TMPDIR/podlife-pod-volumes (default: LOG-DIR/podlife-tmp; secret and projected volumes are then tmpfs mounts, unless it is on a tmpfs)")
	kubemarkArgs := flag.String("kubemark-args", "", "more kubemark flags, space-separated (e.g. \"--v=4\")")
	vols := flag.String("volumes", "none", "workloads, comma-separated, each run in turn at every size: none (no volume, automountServiceAccountToken false), token (the admission's service-account token volume only), per-pod (a ConfigMap and a Secret of each pod's own, and the token volume), shared (one ConfigMap and one Secret for all, and the token volume)")
	flag.IntVar(&c.runs, "runs", 1, "runs of every workload at every size, the workloads alternating; with more than one, a table of medians follows")
	flag.IntVar(&c.creators, "creators", 50, "parallel creators and deleters")
	flag.StringVar(&c.logDir, "log-dir", "", "where engine logs go (default: a temporary folder)")
	flag.Parse()
	c.podlifeArgs = strings.Fields(*podlifeArgs)
	c.kubemarkArgs = strings.Fields(*kubemarkArgs)
	for _, s := range strings.Split(*vols, ",") {
		v, err := bench.ParseClusterVolumes(strings.TrimSpace(s))
		if err != nil {
			fmt.Fprintf(os.Stderr, "bad -volumes: %v\n", err)
			os.Exit(2)
		}
		c.volumes = append(c.volumes, v)
	}
	if c.runs < 1 {
		fmt.Fprintf(os.Stderr, "bad -runs %d\n", c.runs)
		os.Exit(2)
	}
	for _, e := range strings.Split(engines, ",") {
		c.engines = append(c.engines, strings.TrimSpace(e))
	}
	for _, s := range strings.Split(sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			fmt.Fprintf(os.Stderr, "bad -pods %q\n", sizes)
			os.Exit(2)
		}
		c.sizes = append(c.sizes, n)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, c, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "cluster:", err)
		os.Exit(1)
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

// countingRT counts the harness's own requests.
type countingRT struct {
	rt http.RoundTripper
	n  *atomic.Int64
}

func (c countingRT) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.rt.RoundTrip(r)
}

type row struct {
	engine string
	vols   bench.ClusterVolumes
	run    int // 1, 2, ...
	res    bench.ClusterResult
	engReq int
	byKey  map[string]int
	server float64
	own    int64
	load   string
	err    error
}

func run(ctx context.Context, c config, out io.Writer) error {
	adminCfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(c.apiDir, "admin.kubeconfig"))
	if err != nil {
		return fmt.Errorf("admin kubeconfig: %w", err)
	}
	adminCfg.QPS, adminCfg.Burst = 500, 1000
	var own atomic.Int64
	adminCfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return countingRT{rt: rt, n: &own} }
	admin, err := kubernetes.NewForConfig(adminCfg)
	if err != nil {
		return err
	}
	nodeCfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(c.apiDir, "node-"+c.node+".kubeconfig"))
	if err != nil {
		return fmt.Errorf("node kubeconfig: %w", err)
	}
	if c.logDir == "" {
		if c.logDir, err = os.MkdirTemp("", "podlife-clusterbench-"); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(c.logDir, 0o755); err != nil {
		return err
	}
	logf("engine logs in %s", c.logDir)
	var rows []row
	for _, eng := range c.engines {
		if ctx.Err() != nil {
			break
		}
		rs, err := runEngine(ctx, c, eng, admin, &own, nodeCfg)
		if err != nil {
			logf("%s: %v", eng, err)
			rows = append(rows, row{engine: eng, err: err})
		}
		rows = append(rows, rs...)
	}
	printTable(out, rows)
	if c.runs > 1 {
		fmt.Fprintln(out)
		printMedians(out, rows)
	}
	return nil
}

func runEngine(ctx context.Context, c config, eng string, admin kubernetes.Interface, own *atomic.Int64, nodeCfg *rest.Config) ([]row, error) {
	if err := deleteNode(ctx, admin, c.node); err != nil {
		return nil, err
	}
	defer func() { _ = deleteNode(context.WithoutCancel(ctx), admin, c.node) }()
	proxy, err := bench.StartCountingProxy(nodeCfg)
	if err != nil {
		return nil, err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		_ = proxy.Close(sctx)
	}()
	ectx, cancel := context.WithCancel(ctx)
	defer cancel()
	var info engineInfo
	stopEngine, err := startEngine(ectx, c, eng, proxy, admin, &info)
	if err != nil {
		return nil, err
	}
	defer stopEngine()
	if err := waitNodeReady(ctx, admin, c.node, 2*time.Minute); err != nil {
		return nil, err
	}
	time.Sleep(3 * time.Second) // let the engine's informers sync (not a measured wait)
	var rows []row
	for i, n := range c.sizes {
		complete := true
		for run := 1; run <= c.runs && complete; run++ {
			for _, vols := range c.volumes {
				if ctx.Err() != nil {
					return rows, ctx.Err()
				}
				r := runOnce(ctx, c, eng, n, vols, admin, own, proxy, info)
				r.run = run
				rows = append(rows, r)
				if r.err != nil || !r.res.RunningComplete() || !r.res.GoneComplete() {
					complete = false
					break
				}
			}
		}
		if !complete {
			if i < len(c.sizes)-1 {
				logf("%s: incomplete at %d pods; larger workloads skipped", eng, n)
			}
			break
		}
	}
	return rows, nil
}

// runOnce runs the workload of n pods with vols once on the running
// engine eng and returns its row.
func runOnce(ctx context.Context, c config, eng string, n int, vols bench.ClusterVolumes, admin kubernetes.Interface, own *atomic.Int64, proxy *bench.CountingProxy, info engineInfo) row {
	metricsURL := info.metricsURL
	r := row{engine: eng, vols: vols}
	r.load = loadavg()
	before, err := serverRequests(ctx, admin)
	if err != nil {
		r.err = err
		return r
	}
	ownBefore := own.Load()
	pBefore := proxy.Snapshot()
	fBefore := proxy.Failed()
	opsBefore := runtimeOps(ctx, metricsURL)
	procs := cpuProcesses(c.apiDir, eng, info.pid)
	cpuBefore := readCPU(procs)
	var cpuMid cpuReading
	var pMid map[string]int
	var opsMid map[string]float64
	what := fmt.Sprintf(" %d pods, volumes %s: ", n, vols)
	w := &bench.ClusterWorkload{Admin: admin, Node: c.node, Pods: n, Creators: c.creators, Timeout: c.timeout, Volumes: vols,
		Logf: func(f string, a ...any) { logf(eng+what+f, a...) },
		BeforeDelete: func() {
			cpuMid = readCPU(procs)
			pMid = proxy.Snapshot()
			opsMid = runtimeOps(ctx, metricsURL)
		}}
	ns := fmt.Sprintf("clusterbench-%s-%d-%s-%d", eng, n, vols, time.Now().Unix()%100000)
	r.res, r.err = w.Run(ctx, ns)
	// Let the last status writes and deletes of the engine land.
	time.Sleep(2 * time.Second)
	r.byKey, r.engReq = bench.Diff(pBefore, proxy.Snapshot())
	r.own = own.Load() - ownBefore
	after, err := serverRequests(ctx, admin)
	if err == nil {
		r.server = after - before - float64(own.Load()-ownBefore)
	}
	failed, _ := bench.Diff(fBefore, proxy.Failed())
	logf("%s%+v; err %v; engine requests %d (%s); failed (status 400 and above): %s; load %s", eng+what, r.res, r.err, r.engReq, bench.FormatCounts(r.byKey), bench.FormatCounts(failed), r.load)
	if pMid != nil {
		createPhase, nc := bench.Diff(pBefore, pMid)
		deletePhase, nd := bench.Diff(pMid, proxy.Snapshot())
		logf("%screate phase %d (%s); delete phase %d (%s)", eng+what, nc, bench.FormatCounts(createPhase), nd, bench.FormatCounts(deletePhase))
	}
	if cpuMid.when.After(cpuBefore.when) {
		logf("%sCPU in the create phase (to all Running): %s", eng+what, cpuMid.sub(cpuBefore, procs))
	}
	if opsBefore != nil && opsMid != nil {
		if opsAfter := runtimeOps(ctx, metricsURL); opsAfter != nil {
			logf("%sCRI calls per pod: create phase %s; delete phase %s", eng+what, perPod(opsBefore, opsMid, n), perPod(opsMid, opsAfter, n))
		}
	}
	return r
}

// runtimeOps reads the CRI calls made so far from the nodeagent's /metrics
// (nil when there is no URL or it cannot be read).
func runtimeOps(ctx context.Context, url string) map[string]float64 {
	if url == "" {
		return nil
	}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, url, nil)
	if err != nil {
		return nil
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	ops, err := bench.RuntimeOperations(resp.Body)
	if err != nil {
		return nil
	}
	return ops
}

// perPod formats the calls made between two readings, per pod, busiest
// operation first: "9.1 (container_status 2.0, list_podsandbox 2.0, ...)".
func perPod(before, after map[string]float64, pods int) string {
	type op struct {
		name string
		n    float64
	}
	var ops []op
	total := 0.0
	for name, v := range after {
		if d := v - before[name]; d > 0 {
			ops = append(ops, op{name, d / float64(pods)})
			total += d / float64(pods)
		}
	}
	slices.SortFunc(ops, func(a, b op) int { return cmp.Or(cmp.Compare(b.n, a.n), strings.Compare(a.name, b.name)) })
	parts := make([]string, len(ops))
	for i, o := range ops {
		parts[i] = fmt.Sprintf("%s %.1f", o.name, o.n)
	}
	return fmt.Sprintf("%.1f (%s)", total, strings.Join(parts, ", "))
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func serverRequests(ctx context.Context, admin kubernetes.Interface) (float64, error) {
	b, err := admin.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return 0, fmt.Errorf("GET /metrics: %w", err)
	}
	return bench.RequestTotal(bytes.NewReader(b))
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// startEngine starts one engine on the node and returns how to stop it.
// engineInfo is what startEngine tells of the engine it started.
type engineInfo struct {
	metricsURL string // podlife's /metrics (its CRI calls); "" for the others
	pid        int    // the engine's process; 0 when it runs in the harness
}

func startEngine(ctx context.Context, c config, eng string, proxy *bench.CountingProxy, admin kubernetes.Interface, info *engineInfo) (func(), error) {
	kubeconfig := filepath.Join(c.logDir, eng+".kubeconfig")
	if err := proxy.WriteKubeconfig(kubeconfig); err != nil {
		return nil, err
	}
	switch eng {
	case "vk":
		ready := make(chan struct{})
		done := make(chan error, 1)
		vctx, cancel := context.WithCancel(ctx)
		go func() { done <- bench.RunClusterVK(vctx, proxy.Config(), c.node, ready) }()
		select {
		case <-ready:
		case err := <-done:
			cancel()
			return nil, fmt.Errorf("virtual-kubelet: %w", err)
		case <-time.After(time.Minute):
			cancel()
			return nil, errors.New("virtual-kubelet not ready after 1m")
		}
		return func() { cancel(); <-done }, nil
	case "podlife":
		bin := c.nodeagent
		if bin == "" {
			bin = filepath.Join(c.logDir, "nodeagent")
			logf("building the nodeagent")
			cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./examples/nodeagent")
			cmd.Dir = c.podlifeRoot
			cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
			if err := cmd.Run(); err != nil {
				return nil, fmt.Errorf("build nodeagent: %w", err)
			}
		}
		manifests := filepath.Join(c.logDir, "manifests")
		if err := os.MkdirAll(manifests, 0o755); err != nil {
			return nil, err
		}
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		stopNode := func() {}
		if !c.registers {
			if stopNode, err = handMadeNode(ctx, admin, c.node); err != nil {
				return nil, err
			}
		}
		args := append([]string{"--kubeconfig", kubeconfig, "--node-name", c.node,
			"--manifests", manifests, "--listen", "127.0.0.1:" + strconv.Itoa(port), "-v", strconv.Itoa(c.podlifeV)}, c.podlifeArgs...)
		info.metricsURL = "http://127.0.0.1:" + strconv.Itoa(port) + "/metrics"
		tmp := c.podlifeTmp
		if tmp == "" {
			tmp = filepath.Join(c.logDir, "podlife-tmp")
		}
		if err := os.MkdirAll(tmp, 0o755); err != nil {
			stopNode()
			return nil, err
		}
		stop, pid, err := startProcess(c, eng, []string{"TMPDIR=" + tmp}, bin, args...)
		info.pid = pid
		if err != nil {
			stopNode()
			return nil, err
		}
		return func() { stop(); stopNode() }, nil
	case "kubemark":
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		// Its root folder (volumes included) is made in TMPDIR.
		tmp := filepath.Join(c.logDir, "kubemark-tmp")
		if err := os.MkdirAll(tmp, 0o755); err != nil {
			return nil, err
		}
		args := append([]string{"--morph=kubelet", "--name=" + c.node, "--kubeconfig=" + kubeconfig,
			"--kubelet-port=" + strconv.Itoa(port), "--kubelet-read-only-port=0", "--use-host-image-service=false",
			"--kube-api-qps=50", "--kube-api-burst=100", "--max-pods=1100"}, c.kubemarkArgs...)
		stop, pid, err := startProcess(c, eng, []string{"TMPDIR=" + tmp}, c.kubemark, args...)
		info.pid = pid
		return stop, err
	}
	return nil, fmt.Errorf("unknown engine %q (podlife, vk, kubemark)", eng)
}

// startProcess starts bin with args and the harness's environment plus
// env, its output in LOG-DIR/ENGINE.log.
func startProcess(c config, eng string, env []string, bin string, args ...string) (func(), int, error) {
	logPath := filepath.Join(c.logDir, eng+".log")
	p, err := bench.StartProcess(logPath, env, bin, args...)
	if err != nil {
		return nil, 0, err
	}
	logf("%s started (pid %d), log %s", eng, p.Pid, logPath)
	return func() { p.Stop(15 * time.Second) }, p.Pid, nil
}

// handMadeNode creates the Node as admin (Ready, 2000 pods) and renews its
// Lease every 10 s until the returned stop is called, for an engine that
// does not register its node.
func handMadeNode(ctx context.Context, admin kubernetes.Interface, name string) (func(), error) {
	now := metav1.Now()
	res := v1.ResourceList{v1.ResourcePods: resource.MustParse("2000"), v1.ResourceCPU: resource.MustParse("1000"), v1.ResourceMemory: resource.MustParse("1Ti")}
	n := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}},
	}
	created, err := admin.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("create node: %w", err)
	}
	created.Status = v1.NodeStatus{Capacity: res, Allocatable: res,
		Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: now, LastTransitionTime: now}}}
	if _, err := admin.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		return nil, fmt.Errorf("node status: %w", err)
	}
	dur := int32(40)
	holder := name
	lctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		leases := admin.CoordinationV1().Leases("kube-node-lease")
		for {
			t := metav1.NewMicroTime(time.Now())
			l, err := leases.Get(lctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				_, _ = leases.Create(lctx, &coordv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name},
					Spec: coordv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &dur, RenewTime: &t}}, metav1.CreateOptions{})
			} else if err == nil {
				l.Spec.RenewTime = &t
				_, _ = leases.Update(lctx, l, metav1.UpdateOptions{})
			}
			select {
			case <-lctx.Done():
				return
			case <-time.After(10 * time.Second):
			}
		}
	}()
	return func() { cancel(); <-done }, nil
}

func waitNodeReady(ctx context.Context, admin kubernetes.Interface, name string, d time.Duration) error {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		n, err := admin.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			for _, c := range n.Status.Conditions {
				if c.Type == v1.NodeReady && c.Status == v1.ConditionTrue {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	return fmt.Errorf("node %s not Ready after %v", name, d)
}

func deleteNode(ctx context.Context, admin kubernetes.Interface, name string) error {
	if err := admin.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete node: %w", err)
	}
	if err := admin.CoordinationV1().Leases("kube-node-lease").Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete lease: %w", err)
	}
	return nil
}
