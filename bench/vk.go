package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	"github.com/virtual-kubelet/virtual-kubelet/node"
	"golang.org/x/time/rate"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
)

// DefaultVKWorkers is virtual-kubelet's default --pod-sync-workers.
const DefaultVKWorkers = 10

// fakeWatchBuffer replaces the fake clientset's watch buffer of 100 events,
// which panics ("channel full") when the informer falls behind a burst of
// creates. It must be set before the informers start.
const fakeWatchBuffer = 1 << 17

var setWatchBuffer sync.Once

// VK runs pods on virtual-kubelet's node.PodController, fed by client-go's
// fake clientset through a shared informer factory, with a no-op provider.
//
// Create creates the pod in the fake API server. Delete does what the API
// server does for a graceful deletion with grace period 0: it sets the pod's
// deletionTimestamp and deletionGracePeriodSeconds; the controller then
// deletes the pod from the API server and calls the provider's DeletePod.
//
// Permissive replaces the global 10 qps / burst 100 token bucket of
// client-go's default controller rate limiter (on all three queues) with an
// unlimited one, keeping the per-item exponential failure backoff
// (5ms doubling to 1000s) that retries errors.
type VK struct {
	Permissive bool
	// Workers is the podSyncWorkers argument of Run (default
	// DefaultVKWorkers).
	Workers int

	client *fake.Clientset
	pc     *node.PodController
	done   chan struct{}
}

// Name implements Engine.
func (e *VK) Name() string {
	if e.Permissive {
		return "virtual-kubelet (permissive limiter)"
	}
	return "virtual-kubelet (default)"
}

func permissiveLimiter() workqueue.TypedRateLimiter[any] {
	return workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[any](5*time.Millisecond, 1000*time.Second),
		&workqueue.TypedBucketRateLimiter[any]{Limiter: rate.NewLimiter(rate.Inf, 0)},
	)
}

// Start implements Engine.
func (e *VK) Start(ctx context.Context, h *Hooks) error {
	setWatchBuffer.Do(func() { watch.DefaultChanSize = fakeWatchBuffer })
	e.client = fake.NewSimpleClientset()
	factory := informers.NewSharedInformerFactory(e.client, 0)
	cfg := node.PodControllerConfig{
		PodClient:         e.client.CoreV1(),
		PodInformer:       factory.Core().V1().Pods(),
		EventRecorder:     &record.FakeRecorder{}, // drops events
		Provider:          &vkProvider{h: h, pods: make(map[string]struct{})},
		ConfigMapInformer: factory.Core().V1().ConfigMaps(),
		SecretInformer:    factory.Core().V1().Secrets(),
		ServiceInformer:   factory.Core().V1().Services(),
	}
	if e.Permissive {
		cfg.SyncPodsFromKubernetesRateLimiter = permissiveLimiter()
		cfg.DeletePodsFromKubernetesRateLimiter = permissiveLimiter()
		cfg.SyncPodStatusFromProviderRateLimiter = permissiveLimiter()
	}
	pc, err := node.NewPodController(cfg)
	if err != nil {
		return err
	}
	factory.Start(ctx.Done())
	workers := e.Workers
	if workers <= 0 {
		workers = DefaultVKWorkers
	}
	e.pc, e.done = pc, make(chan struct{})
	go func() {
		defer close(e.done)
		_ = pc.Run(ctx, workers)
		factory.Shutdown()
	}()
	select {
	case <-pc.Ready():
		return nil
	case <-pc.Done():
		return fmt.Errorf("pod controller: %w", pc.Err())
	case <-time.After(30 * time.Second):
		return fmt.Errorf("pod controller not ready after 30s")
	}
}

// Create implements Engine.
func (e *VK) Create(pod *v1.Pod) error {
	_, err := e.client.CoreV1().Pods(pod.Namespace).Create(context.Background(), pod, metav1.CreateOptions{})
	return err
}

// Delete implements Engine.
func (e *VK) Delete(pod *v1.Pod) error {
	return markDeleted(e.client, pod)
}

func markDeleted(client *fake.Clientset, pod *v1.Pod) error {
	pods := client.CoreV1().Pods(pod.Namespace)
	cur, err := pods.Get(context.Background(), pod.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	now := metav1.Now()
	zero := int64(0)
	cur.DeletionTimestamp, cur.DeletionGracePeriodSeconds = &now, &zero
	_, err = pods.Update(context.Background(), cur, metav1.UpdateOptions{})
	return err
}

// Housekeep implements Engine (virtual-kubelet has no equivalent).
func (e *VK) Housekeep([]*v1.Pod) {}

// Idle implements Engine: the controller's three queues are empty.
func (e *VK) Idle() bool { return e.Quiet() }

// Quiet implements Engine: the controller's three queues are empty.
func (e *VK) Quiet() bool {
	return e.pc.SyncPodsFromKubernetesQueueLen() == 0 &&
		e.pc.DeletePodsFromKubernetesQueueLen() == 0 &&
		e.pc.SyncPodStatusFromProviderQueueLen() == 0
}

// Stop implements Engine.
func (e *VK) Stop() { <-e.done }

// vkProvider is a no-op node.PodLifecycleHandler. It remembers which pods
// it holds (GetPod must find a pod for the controller to call DeletePod
// once the pod is gone from the API server) and reports to the hooks. It
// implements node.PodNotifier but never notifies: a no-op provider has no
// status to report, and a provider without NotifyPods would be wrapped by
// virtual-kubelet in a poller that fetches every pod's status every 5s.
type vkProvider struct {
	h *Hooks

	mu   sync.Mutex
	pods map[string]struct{} // by name; all pods are in Namespace
}

var (
	_ node.PodLifecycleHandler = (*vkProvider)(nil)
	_ node.PodNotifier         = (*vkProvider)(nil)
)

func (p *vkProvider) CreatePod(_ context.Context, pod *v1.Pod) error {
	if p.h.Faults.Fail() {
		return fmt.Errorf("create pod %s: %w", pod.Name, ErrInjected)
	}
	p.mu.Lock()
	_, had := p.pods[pod.Name]
	p.pods[pod.Name] = struct{}{}
	p.mu.Unlock()
	if !had {
		p.h.Synced(podIndex(pod.Name))
	}
	return nil
}

func (p *vkProvider) UpdatePod(context.Context, *v1.Pod) error { return nil }

func (p *vkProvider) DeletePod(_ context.Context, pod *v1.Pod) error {
	if p.h.Faults.Fail() {
		return fmt.Errorf("delete pod %s: %w", pod.Name, ErrInjected)
	}
	p.mu.Lock()
	_, had := p.pods[pod.Name]
	delete(p.pods, pod.Name)
	p.mu.Unlock()
	if !had {
		return errdefs.NotFoundf("pod %s", pod.Name)
	}
	p.h.Finished(podIndex(pod.Name))
	return nil
}

func (p *vkProvider) GetPod(_ context.Context, namespace, name string) (*v1.Pod, error) {
	p.mu.Lock()
	_, ok := p.pods[name]
	p.mu.Unlock()
	if !ok {
		return nil, errdefs.NotFoundf("pod %s/%s", namespace, name)
	}
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}, nil
}

func (p *vkProvider) GetPodStatus(_ context.Context, namespace, name string) (*v1.PodStatus, error) {
	p.mu.Lock()
	_, ok := p.pods[name]
	p.mu.Unlock()
	if !ok {
		return nil, errdefs.NotFoundf("pod %s/%s", namespace, name)
	}
	return &v1.PodStatus{Phase: v1.PodRunning}, nil
}

func (p *vkProvider) GetPods(context.Context) ([]*v1.Pod, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pods := make([]*v1.Pod, 0, len(p.pods))
	for name := range p.pods {
		pods = append(pods, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace}})
	}
	return pods, nil
}

func (p *vkProvider) NotifyPods(context.Context, func(*v1.Pod)) {}

// APIOnly is not a lifecycle engine but the floor under virtual-kubelet:
// the fake clientset and a pod informer with an event handler that reports
// an added pod as synced and a deleted one as finished (Delete marks the pod
// deleted, the handler then deletes it from the API server, as the
// controller does). Its memory is subtracted from virtual-kubelet's, so that
// the fake API server's copy and the informer's cached copy of each pod
// count as pod objects, which every figure excludes.
type APIOnly struct {
	client *fake.Clientset
	done   chan struct{}
	synced cache.InformerSynced
}

// Name implements Engine.
func (e *APIOnly) Name() string { return "fake API server + informer only" }

// Start implements Engine.
func (e *APIOnly) Start(ctx context.Context, h *Hooks) error {
	setWatchBuffer.Do(func() { watch.DefaultChanSize = fakeWatchBuffer })
	e.client = fake.NewSimpleClientset()
	factory := informers.NewSharedInformerFactory(e.client, 0)
	inf := factory.Core().V1().Pods().Informer()
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { h.Synced(podIndex(obj.(*v1.Pod).Name)) },
		UpdateFunc: func(_, obj any) {
			pod := obj.(*v1.Pod)
			if pod.DeletionTimestamp != nil {
				_ = e.client.CoreV1().Pods(pod.Namespace).Delete(context.Background(), pod.Name, metav1.DeleteOptions{})
			}
		},
		DeleteFunc: func(obj any) {
			if pod, ok := obj.(*v1.Pod); ok {
				h.Finished(podIndex(pod.Name))
			}
		},
	})
	if err != nil {
		return err
	}
	e.done = make(chan struct{})
	factory.Start(ctx.Done())
	go func() { <-ctx.Done(); factory.Shutdown(); close(e.done) }()
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return fmt.Errorf("informer did not sync")
	}
	return nil
}

// Create implements Engine.
func (e *APIOnly) Create(pod *v1.Pod) error {
	_, err := e.client.CoreV1().Pods(pod.Namespace).Create(context.Background(), pod, metav1.CreateOptions{})
	return err
}

// Delete implements Engine.
func (e *APIOnly) Delete(pod *v1.Pod) error { return markDeleted(e.client, pod) }

// Housekeep implements Engine.
func (e *APIOnly) Housekeep([]*v1.Pod) {}

// Idle implements Engine.
func (e *APIOnly) Idle() bool { return true }

// Quiet implements Engine.
func (e *APIOnly) Quiet() bool { return true }

// Stop implements Engine.
func (e *APIOnly) Stop() { <-e.done }

// APIServerOnly is the fake API server alone, with no informer: Create and
// Delete write to the fake clientset and report the pod synced or finished
// at once. Its memory, subtracted from virtual-kubelet's, leaves the
// controller plus the informer's cached copy of every pod.
type APIServerOnly struct {
	client *fake.Clientset
	h      *Hooks
}

// Name implements Engine.
func (e *APIServerOnly) Name() string { return "fake API server only" }

// Start implements Engine.
func (e *APIServerOnly) Start(_ context.Context, h *Hooks) error {
	e.client, e.h = fake.NewSimpleClientset(), h
	return nil
}

// Create implements Engine.
func (e *APIServerOnly) Create(pod *v1.Pod) error {
	_, err := e.client.CoreV1().Pods(pod.Namespace).Create(context.Background(), pod, metav1.CreateOptions{})
	if err == nil {
		e.h.Synced(podIndex(pod.Name))
	}
	return err
}

// Delete implements Engine.
func (e *APIServerOnly) Delete(pod *v1.Pod) error {
	err := e.client.CoreV1().Pods(pod.Namespace).Delete(context.Background(), pod.Name, metav1.DeleteOptions{})
	if err == nil {
		e.h.Finished(podIndex(pod.Name))
	}
	return err
}

// Housekeep implements Engine.
func (e *APIServerOnly) Housekeep([]*v1.Pod) {}

// Idle implements Engine.
func (e *APIServerOnly) Idle() bool { return true }

// Quiet implements Engine.
func (e *APIServerOnly) Quiet() bool { return true }

// Stop implements Engine.
func (e *APIServerOnly) Stop() {}
