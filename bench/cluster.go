package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// ClusterWorkload creates Pods pods bound to Node in a fresh namespace of a
// real API server (with the admin client), each with the volumes Volumes
// asks for (whose ConfigMaps and Secrets it creates first), all at once
// from Creators goroutines, waits until a watch sees every one Running and Ready, then
// deletes them all at once and waits until the watch sees every one gone.
// Times are the watch's: a pod's create→Running is the time the watch saw it
// Running minus the time the watch saw it added, so no clock but the
// harness's is involved.
type ClusterWorkload struct {
	Admin    kubernetes.Interface
	Node     string
	Pods     int
	Creators int           // default 50
	Image    string        // default localhost/podlife/pause:1.0
	Timeout  time.Duration // per phase (Running, gone); default 5m
	Grace    int64         // terminationGracePeriodSeconds; default 2
	// Volumes: which volumes each pod mounts (default VolumesNone: none,
	// not even the service-account token). Their ConfigMaps and Secrets
	// are created before the clock starts.
	Volumes ClusterVolumes
	Logf    func(format string, args ...any)
	// BeforeDelete, when set, is called once every pod was seen Running
	// (or the wait timed out), right before the deletes: a caller counting
	// requests splits them there into the create and the delete phase.
	BeforeDelete func()
}

// ClusterResult is what one ClusterWorkload run measured.
type ClusterResult struct {
	Pods, Running, Gone int
	ToRunning, ToGone   time.Duration // from the first create / delete call to the last pod seen
	P50, P99            time.Duration // create→Running per pod (watch-observed at both ends)
	CreateCalls         time.Duration // how long the creators took to create every pod
	// TokenVolumes is how many of the created pods the ServiceAccount
	// admission gave a token volume (Run checks it: all of them or none,
	// as Volumes asks).
	TokenVolumes int
}

// RunningComplete reports whether every pod was seen Running.
func (r ClusterResult) RunningComplete() bool { return r.Running == r.Pods }

// GoneComplete reports whether every pod was seen gone.
func (r ClusterResult) GoneComplete() bool { return r.Gone == r.Pods }

func (w *ClusterWorkload) withDefaults() {
	if w.Creators <= 0 {
		w.Creators = 50
	}
	if w.Image == "" {
		w.Image = "localhost/podlife/pause:1.0"
	}
	if w.Timeout <= 0 {
		w.Timeout = 5 * time.Minute
	}
	if w.Grace <= 0 {
		w.Grace = 2
	}
	if w.Logf == nil {
		w.Logf = func(string, ...any) {}
	}
}

type podTimes struct {
	added, running, gone time.Time
}

func podRunningReady(p *v1.Pod) bool {
	if p.Status.Phase != v1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// Run runs the workload in namespace ns (created, and deleted at the end).
func (w *ClusterWorkload) Run(ctx context.Context, ns string) (ClusterResult, error) {
	w.withDefaults()
	res := ClusterResult{Pods: w.Pods}
	if _, err := w.Admin.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return res, fmt.Errorf("create namespace: %w", err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		zero := int64(0)
		_ = w.Admin.CoreV1().Pods(ns).DeleteCollection(cctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{})
		_ = w.Admin.CoreV1().Namespaces().Delete(cctx, ns, metav1.DeleteOptions{})
	}()

	var (
		mu      sync.Mutex
		times   = make(map[string]*podTimes, w.Pods)
		running int
		gone    int
		allRun  = make(chan struct{})
		allGone = make(chan struct{})
	)
	get := func(name string) *podTimes {
		t := times[name]
		if t == nil {
			t = &podTimes{}
			times[name] = t
		}
		return t
	}
	observe := func(p *v1.Pod) {
		now := time.Now()
		mu.Lock()
		defer mu.Unlock()
		t := get(p.Name)
		if t.added.IsZero() {
			t.added = now
		}
		if t.running.IsZero() && podRunningReady(p) {
			t.running = now
			running++
			if running == w.Pods {
				close(allRun)
			}
		}
	}
	factory := informers.NewSharedInformerFactoryWithOptions(w.Admin, 0, informers.WithNamespace(ns))
	inf := factory.Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { observe(o.(*v1.Pod)) },
		UpdateFunc: func(_, o any) { observe(o.(*v1.Pod)) },
		DeleteFunc: func(o any) {
			p, ok := o.(*v1.Pod)
			if !ok {
				d, ok := o.(cache.DeletedFinalStateUnknown)
				if !ok {
					return
				}
				if p, ok = d.Obj.(*v1.Pod); !ok {
					return
				}
			}
			now := time.Now()
			mu.Lock()
			defer mu.Unlock()
			t := get(p.Name)
			if t.gone.IsZero() {
				t.gone = now
				gone++
				if gone == w.Pods {
					close(allGone)
				}
			}
		},
	}); err != nil {
		return res, fmt.Errorf("pod informer: %w", err)
	}
	names := make([]string, w.Pods)
	for i := range names {
		names[i] = fmt.Sprintf("bench-%d", i)
	}
	if err := w.prepareNamespace(ctx, ns, names); err != nil {
		return res, err
	}

	ictx, stop := context.WithCancel(ctx)
	defer func() { stop(); factory.Shutdown() }()
	factory.Start(ictx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return res, fmt.Errorf("pod informer: %w", ctx.Err())
	}

	var tokenVolumes atomic.Int64
	start := time.Now()
	if err := w.parallel(ctx, names, func(ctx context.Context, name string) error {
		p, err := w.Admin.CoreV1().Pods(ns).Create(ctx, clusterPod(name, w.Node, w.Image, w.Grace, w.Volumes), metav1.CreateOptions{})
		if err == nil && hasTokenVolume(p) {
			tokenVolumes.Add(1)
		}
		return err
	}); err != nil {
		return res, fmt.Errorf("create pods: %w", err)
	}
	res.CreateCalls = time.Since(start)
	res.TokenVolumes = int(tokenVolumes.Load())
	want := 0
	if w.Volumes.token() {
		want = w.Pods
	}
	if res.TokenVolumes != want {
		return res, fmt.Errorf("%d of %d pods got a token volume from the admission, want %d (volumes %s)", res.TokenVolumes, w.Pods, want, w.Volumes)
	}
	w.Logf("%d pods created in %v", w.Pods, res.CreateCalls.Round(time.Millisecond))
	res.Running, res.ToRunning = w.wait(ctx, allRun, &mu, &running, start, "Running")
	if w.BeforeDelete != nil {
		w.BeforeDelete()
	}

	delStart := time.Now()
	if err := w.parallel(ctx, names, func(ctx context.Context, name string) error {
		err := w.Admin.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}); err != nil {
		return res, fmt.Errorf("delete pods: %w", err)
	}
	res.Gone, res.ToGone = w.wait(ctx, allGone, &mu, &gone, delStart, "gone")

	mu.Lock()
	var lat []time.Duration
	for _, t := range times {
		if !t.running.IsZero() && !t.added.IsZero() {
			lat = append(lat, t.running.Sub(t.added))
		}
	}
	mu.Unlock()
	res.P50, res.P99 = Percentile(lat, 50), Percentile(lat, 99)
	return res, nil
}

// wait waits for done or the phase timeout, logging progress every 10 s, and
// returns the count reached and the time from start to the last one seen
// (or to the timeout).
func (w *ClusterWorkload) wait(ctx context.Context, done <-chan struct{}, mu *sync.Mutex, n *int, start time.Time, what string) (int, time.Duration) {
	deadline := time.NewTimer(w.Timeout)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return w.Pods, time.Since(start)
		case <-tick.C:
			mu.Lock()
			c := *n
			mu.Unlock()
			w.Logf("%d/%d %s after %v", c, w.Pods, what, time.Since(start).Round(time.Second))
			continue
		case <-deadline.C:
		case <-ctx.Done():
		}
		mu.Lock()
		c := *n
		mu.Unlock()
		w.Logf("timeout: %d/%d %s after %v", c, w.Pods, what, time.Since(start).Round(time.Second))
		return c, time.Since(start)
	}
}

func (w *ClusterWorkload) parallel(ctx context.Context, names []string, f func(context.Context, string) error) error {
	ch := make(chan string)
	errs := make(chan error, w.Creators)
	var wg sync.WaitGroup
	for range w.Creators {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var first error
			for name := range ch {
				if err := f(ctx, name); err != nil && first == nil {
					first = fmt.Errorf("%s: %w", name, err)
				}
			}
			errs <- first
		}()
	}
	for _, n := range names {
		ch <- n
	}
	close(ch)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
