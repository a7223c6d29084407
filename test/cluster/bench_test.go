package cluster_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/podlife/podlife/agent"
	"github.com/podlife/podlife/agent/node"
	"github.com/podlife/podlife/agent/status"
	"github.com/podlife/podlife/test/apitest"
)

// BenchmarkBoundPods creates N pods bound to one podlife node at once,
// waits until every one is Running and Ready in the API, deletes them all
// at once (grace 2 s) and waits until every one is gone, as the
// "300 pods" rows of docs/benchmarks.md. The agent runs in this process
// on fakecri with the node's credentials at the kubelet's client limits
// (QPS 50, burst 100); times are observed through a watch.
//
//	PODLIFE_API_DIR=/tmp/podlife-api go test ./test/cluster -run XXX -bench BoundPods -benchtime 1x
func BenchmarkBoundPods(b *testing.B) {
	for _, n := range []int{100, 300, 1000} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			for range b.N {
				benchBoundPods(b, n)
			}
		})
	}
}

func benchBoundPods(b *testing.B, n int) {
	api := apitest.New(b)
	const name = "bench-1"
	clearNode(b, api, name)
	ns := api.Namespace(b)

	// The agent, its requests counted.
	cfg, err := node.LoadClientConfig(api.NodeKubeconfig(b, name), 0, 0)
	if err != nil {
		b.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	counted, err := status.InstrumentConfig(cfg, reg, "bench")
	if err != nil {
		b.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(counted)
	if err != nil {
		b.Fatal(err)
	}
	// Events on a client of their own, as the kubelet and the nodeagent
	// do; its requests are counted too.
	ereg := prometheus.NewRegistry()
	ecounted, err := status.InstrumentConfig(cfg, ereg, "bench")
	if err != nil {
		b.Fatal(err)
	}
	eclient, err := kubernetes.NewForConfig(ecounted)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if km := os.Getenv(kubemarkEnv); km != "" {
		// The kubelet itself: kubemark's hollow node, the kubelet's code on
		// a fake runtime, with the real kubelet's client limits.
		api.DeleteNode(name)
		cmd := exec.CommandContext(ctx, km, "--morph=kubelet", "--name="+name, "--kubeconfig="+api.NodeKubeconfig(b, name),
			"--kubelet-port=10350", "--kubelet-read-only-port=0", "--use-host-image-service=false",
			"--kube-api-qps=50", "--kube-api-burst=100", fmt.Sprintf("--max-pods=%d", n+10))
		logf, err := os.Create(filepath.Join(b.TempDir(), "kubemark.log"))
		if err != nil {
			b.Fatal(err)
		}
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		defer func() { cancel(); _ = cmd.Wait(); api.DeleteNode(name) }()
	} else {
		tn := newNode(b, api, name, nil)
		a, err := agent.New(agent.Options{Runtime: tn.rt, NodeName: name, Cluster: &agent.Cluster{Client: client, EventClient: eclient}, Logger: logr.Discard()})
		if err != nil {
			b.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- a.Run(ctx) }()
		defer func() { cancel(); <-done }()
	}
	waitReady(b, api, name, 120*time.Second)

	// An informer observes every pod's progress: a plain watch can be
	// closed by the API server (a watcher that falls behind during the
	// creation burst is dropped) and would silently stop counting; the
	// informer lists and watches again.
	var mu sync.Mutex
	created, running, gone := map[string]time.Time{}, map[string]time.Time{}, map[string]time.Time{}
	observe := func(p *v1.Pod, deleted bool) {
		now := time.Now()
		mu.Lock()
		defer mu.Unlock()
		if _, seen := created[p.Name]; !seen {
			created[p.Name] = now
		}
		if deleted {
			if _, seen := gone[p.Name]; !seen {
				gone[p.Name] = now
			}
			return
		}
		if _, seen := running[p.Name]; !seen && isRunningReady(p) {
			running[p.Name] = now
		}
	}
	factory := informers.NewSharedInformerFactoryWithOptions(api.Admin, 0, informers.WithNamespace(ns))
	inf := factory.Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { observe(o.(*v1.Pod), false) },
		UpdateFunc: func(_, o any) { observe(o.(*v1.Pod), false) },
		DeleteFunc: func(o any) {
			if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
				o = d.Obj
			}
			if p, ok := o.(*v1.Pod); ok {
				observe(p, true)
			}
		},
	}); err != nil {
		b.Fatal(err)
	}
	stop := make(chan struct{})
	factory.Start(stop)
	defer func() { close(stop); factory.Shutdown() }()
	if !cache.WaitForCacheSync(stop, inf.HasSynced) {
		b.Fatal("pod informer did not sync")
	}
	count := func(m map[string]time.Time) int {
		mu.Lock()
		defer mu.Unlock()
		return len(m)
	}
	requests := func() float64 {
		mfs, _ := reg.Gather()
		emfs, _ := ereg.Gather()
		var sum float64
		for _, mf := range append(mfs, emfs...) {
			if strings.HasSuffix(mf.GetName(), "api_requests_total") {
				for _, m := range mf.GetMetric() {
					sum += m.GetCounter().GetValue()
				}
			}
		}
		return sum
	}
	admin := adminFast(b, api)
	reqBefore := requests()
	serverBefore := serverRequests(b, api)

	b.ResetTimer()
	start := time.Now()
	if err := each(n, func(i int) error {
		_, err := admin.CoreV1().Pods(ns).Create(ctx, pod(fmt.Sprintf("p%04d", i), name, 2), metav1.CreateOptions{})
		return err
	}); err != nil {
		b.Fatal(err)
	}
	api.Eventually(b, 10*time.Minute, "all Running", func() (bool, error) { return count(running) == n, nil })
	allRunning := time.Since(start)
	delStart := time.Now()
	if err := each(n, func(i int) error {
		return admin.CoreV1().Pods(ns).Delete(ctx, fmt.Sprintf("p%04d", i), metav1.DeleteOptions{})
	}); err != nil {
		b.Fatal(err)
	}
	api.Eventually(b, 10*time.Minute, "all gone", func() (bool, error) { return count(gone) == n, nil })
	allGone := time.Since(delStart)
	b.StopTimer()

	mu.Lock()
	lat := make([]time.Duration, 0, n)
	for p, r := range running {
		lat = append(lat, r.Sub(created[p]))
	}
	mu.Unlock()
	slices.Sort(lat)
	b.ReportMetric(allRunning.Seconds(), "s-all-running")
	b.ReportMetric(allGone.Seconds(), "s-all-gone")
	b.ReportMetric(float64(lat[len(lat)/2].Milliseconds()), "ms-p50-running")
	b.ReportMetric(float64(lat[len(lat)*99/100].Milliseconds()), "ms-p99-running")
	if os.Getenv(kubemarkEnv) == "" {
		b.ReportMetric((requests()-reqBefore)/float64(n), "requests/pod")
	}
	// Every request the API server served meanwhile, less the workload's
	// own creates and deletes, per pod: comparable across engines (the
	// controllers add the same small share to each).
	b.ReportMetric((serverRequests(b, api)-serverBefore-float64(2*n))/float64(n), "server-requests/pod")
}

// kubemarkEnv names the kubemark binary that BenchmarkBoundPods runs
// instead of podlife (see docs/benchmarks.md).
const kubemarkEnv = "PODLIFE_BENCH_KUBEMARK"

// serverRequests sums the API server's apiserver_request_total.
func serverRequests(tb testing.TB, api *apitest.API) float64 {
	tb.Helper()
	raw, err := api.Admin.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		tb.Fatalf("API server metrics: %v", err)
	}
	var sum float64
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		f := strings.Fields(line)
		if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
			sum += v
		}
	}
	return sum
}

// adminFast is an admin client without client-side rate limits, so that
// the workload is created at once.
func adminFast(tb testing.TB, api *apitest.API) kubernetes.Interface {
	cfg := rest.CopyConfig(api.AdminConfig)
	cfg.QPS, cfg.Burst = 1000, 2000
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// each runs f(0..n-1) on 32 goroutines and returns the first error.
func each(n int, f func(i int) error) error {
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	next := make(chan int)
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := f(i); err != nil {
					once.Do(func() { first = err })
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return first
}

// clearNode force-deletes every pod still bound to the node (a previous
// run's, interrupted) and waits until none is left, so that the engine
// under test serves only this run's pods.
func clearNode(tb testing.TB, api *apitest.API, node string) {
	tb.Helper()
	ctx := context.Background()
	sel := metav1.ListOptions{FieldSelector: "spec.nodeName=" + node}
	zero := int64(0)
	api.Eventually(tb, 5*time.Minute, "no pod bound to "+node, func() (bool, error) {
		list, err := api.Admin.CoreV1().Pods("").List(ctx, sel)
		if err != nil {
			return false, err
		}
		for _, p := range list.Items {
			_ = api.Admin.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		}
		return len(list.Items) == 0, fmt.Errorf("%d pods left", len(list.Items))
	})
}
