package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/virtual-kubelet/virtual-kubelet/node"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedv1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
)

// RunClusterVK runs virtual-kubelet v1.14.1 as node name against a real API
// server with cfg (the node's credentials; QPS 50 / burst 100 are set here):
// a node.NodeController registering the node with a Lease, and a
// node.PodController on the pods bound to the node with a no-op provider
// that reports each created pod Running and Ready at once (through
// NotifyPods, the way a provider reports statuses). It blocks until ctx is
// done and both controllers have stopped. ready is closed once both are
// ready.
func RunClusterVK(ctx context.Context, cfg *rest.Config, name string, ready chan<- struct{}) error {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 50, 100
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	n := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"type": "virtual-kubelet", "kubernetes.io/hostname": name}},
		Status: v1.NodeStatus{
			Capacity:    v1.ResourceList{v1.ResourcePods: resource.MustParse("2000"), v1.ResourceCPU: resource.MustParse("1000"), v1.ResourceMemory: resource.MustParse("1Ti")},
			Allocatable: v1.ResourceList{v1.ResourcePods: resource.MustParse("2000"), v1.ResourceCPU: resource.MustParse("1000"), v1.ResourceMemory: resource.MustParse("1Ti")},
			Conditions:  []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}},
		},
	}
	nc, err := node.NewNodeController(node.NewNaiveNodeProvider(), n, client.CoreV1().Nodes(),
		node.WithNodeEnableLeaseV1(client.CoordinationV1().Leases("kube-node-lease"), 40))
	if err != nil {
		return fmt.Errorf("node controller: %w", err)
	}

	podFactory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", name).String()
	}))
	// The Node authorizer forbids listing secrets and config maps; the
	// controller only reads them through listers for pods that reference
	// them (none here), so their informers are never started.
	other := informers.NewSharedInformerFactory(client, 0)
	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(&typedv1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	prov := &clusterVKProvider{vkProvider: vkProvider{h: &Hooks{Synced: func(int) {}, Finished: func(int) {}}, pods: make(map[string]struct{})}}
	pc, err := node.NewPodController(node.PodControllerConfig{
		PodClient:         client.CoreV1(),
		PodInformer:       podFactory.Core().V1().Pods(),
		EventRecorder:     broadcaster.NewRecorder(scheme.Scheme, v1.EventSource{Component: "virtual-kubelet", Host: name}),
		Provider:          prov,
		ConfigMapInformer: other.Core().V1().ConfigMaps(),
		SecretInformer:    other.Core().V1().Secrets(),
		ServiceInformer:   other.Core().V1().Services(),
	})
	if err != nil {
		return fmt.Errorf("pod controller: %w", err)
	}
	podFactory.Start(ctx.Done())
	defer podFactory.Shutdown()

	var wg sync.WaitGroup
	errs := make(chan error, 2)
	wg.Add(2)
	go func() { defer wg.Done(); errs <- nc.Run(ctx) }()
	go func() { defer wg.Done(); errs <- pc.Run(ctx, DefaultVKWorkers) }()
	go func() {
		select {
		case <-nc.Ready():
		case <-ctx.Done():
			return
		}
		select {
		case <-pc.Ready():
			close(ready)
		case <-ctx.Done():
		}
	}()
	var first error
	select {
	case <-ctx.Done():
	case first = <-errs:
		cancel()
	}
	wg.Wait()
	if first != nil && ctx.Err() == nil {
		return first
	}
	return nil
}

// clusterVKProvider is the no-op provider of the fake-clientset engine,
// which also reports each created pod Running and Ready through NotifyPods:
// against a real API server someone must write the status, and
// virtual-kubelet writes what its provider notifies.
type clusterVKProvider struct {
	vkProvider
	notify func(*v1.Pod)
}

func (p *clusterVKProvider) NotifyPods(_ context.Context, f func(*v1.Pod)) {
	p.mu.Lock()
	p.notify = f
	p.mu.Unlock()
}

func (p *clusterVKProvider) CreatePod(ctx context.Context, pod *v1.Pod) error {
	if err := p.vkProvider.CreatePod(ctx, pod); err != nil {
		return err
	}
	p.mu.Lock()
	f := p.notify
	p.mu.Unlock()
	if f != nil {
		f(runningPod(pod))
	}
	return nil
}

// runningPod returns a copy of pod with the status of a started pod.
func runningPod(pod *v1.Pod) *v1.Pod {
	p := pod.DeepCopy()
	now := metav1.NewTime(time.Now())
	p.Status.Phase = v1.PodRunning
	p.Status.StartTime = &now
	p.Status.Conditions = []v1.PodCondition{
		{Type: v1.PodInitialized, Status: v1.ConditionTrue, LastTransitionTime: now},
		{Type: v1.ContainersReady, Status: v1.ConditionTrue, LastTransitionTime: now},
		{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: now},
		{Type: v1.PodScheduled, Status: v1.ConditionTrue, LastTransitionTime: now},
	}
	p.Status.ContainerStatuses = nil
	for _, c := range pod.Spec.Containers {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, v1.ContainerStatus{
			Name: c.Name, Image: c.Image, Ready: true,
			State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: now}},
		})
	}
	return p
}
