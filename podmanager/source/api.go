package source

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/podlife/podlife/podmanager"
)

// APIOptions configures an API source.
type APIOptions struct {
	// Client talks to the API server. Required.
	Client kubernetes.Interface
	// NodeName selects the pods bound to this node (spec.nodeName).
	// Required.
	NodeName string
	// ResyncPeriod, when positive, re-sends the full snapshot this often
	// even without changes. Default 0: never.
	ResyncPeriod time.Duration
	// Logger: V(4) per snapshot. The zero value discards.
	Logger logr.Logger
	// OnError is called for pods that are not bound to NodeName (a server
	// that ignores the field selector). Optional.
	OnError func(error)
}

func (o APIOptions) validate() error {
	if o.Client == nil {
		return errors.New("source: APIOptions.Client is required")
	}
	if o.NodeName == "" {
		return errors.New("source: APIOptions.NodeName is required")
	}
	if o.ResyncPeriod < 0 {
		return fmt.Errorf("source: APIOptions.ResyncPeriod %v is negative", o.ResyncPeriod)
	}
	return nil
}

// API is the source of the pods the API server binds to this node, mirror
// pods included. It lists and watches pods with the field selector
// spec.nodeName=<NodeName> through a client-go reflector (the list/watch
// half of an informer), keeps them in a store and sends the store's full
// content on every change. Pods are passed on as the API server returns
// them: no defaulting, no validation.
type API struct {
	opts APIOptions
	sink Sink
	rep  *reporter
}

// NewAPI returns an API source writing to sink (usually
// Config.Sink(podmanager.APISource)). It starts nothing.
func NewAPI(sink Sink, opts APIOptions) (*API, error) {
	if sink == nil {
		return nil, errors.New("source: NewAPI: sink is required")
	}
	if err := opts.validate(); err != nil {
		return nil, err
	}
	return &API{opts: opts, sink: sink, rep: newReporter(podmanager.APISource, "pod", opts.Logger, opts.OnError)}, nil
}

// Errors returns how many pods have been rejected so far.
func (a *API) Errors() uint64 { return a.rep.errors() }

// Run lists and watches until ctx is done, then returns ctx's error or the
// sink's error. The reflector retries list and watch failures with backoff
// on its own.
func (a *API) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	selector := fields.OneTermEqualSelector("spec.nodeName", a.opts.NodeName).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, options metav1.ListOptions) (kruntime.Object, error) {
			options.FieldSelector = selector
			return a.opts.Client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, options)
		},
		WatchFuncWithContext: func(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
			options.FieldSelector = selector
			return a.opts.Client.CoreV1().Pods(metav1.NamespaceAll).Watch(ctx, options)
		},
	}
	push := func(objs []interface{}) {
		pods := make([]*v1.Pod, 0, len(objs))
		for _, obj := range objs {
			pod, ok := obj.(*v1.Pod)
			if !ok {
				continue
			}
			if pod.Spec.NodeName != a.opts.NodeName {
				a.rep.report(podmanager.FullName(pod), errorf(ErrInvalidPod, "bound to node %q, not %q", pod.Spec.NodeName, a.opts.NodeName))
				continue
			}
			// The store's objects are replaced, never modified, by the
			// reflector, and nothing else reads them: the Config may own
			// them, and an unchanged pod is the same object next time.
			pods = append(pods, pod)
		}
		a.opts.Logger.V(4).Info("api source snapshot", "node", a.opts.NodeName, "pods", len(pods))
		if err := a.sink.Set(ctx, pods); err != nil {
			cancel(err)
		}
	}
	store := withoutManagedFields{cache.NewUndeltaStore(push, cache.MetaNamespaceKeyFunc)}
	// The wrapper lets the reflector fall back to list+watch for clients
	// without streaming-list support (such as the fake clientset).
	reflector := cache.NewReflectorWithOptions(cache.ToListWatcherWithWatchListSemantics(lw, a.opts.Client), &v1.Pod{}, store, cache.ReflectorOptions{
		Name:         "podlife-api-source",
		ResyncPeriod: a.opts.ResyncPeriod,
	})
	reflector.RunWithContext(ctx)
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		return cause
	}
	return ctx.Err()
}

// withoutManagedFields stores, for each pod the reflector hands over, a
// shallow copy of its own: without the managedFields (the agent never
// reads them, and they are the largest part of a pod's metadata, several
// KB) and with its own annotations map (the sink stamps annotations on the
// pods it gets). The client's object is never changed: a client may share
// it (the fake clientset's watch delivers the objects its tracker keeps,
// and reads them meanwhile).
type withoutManagedFields struct{ *cache.UndeltaStore }

func ownCopy(obj any) any {
	pod, ok := obj.(*v1.Pod)
	if !ok {
		return obj
	}
	own := *pod
	own.ManagedFields = nil
	own.Annotations = maps.Clone(pod.Annotations)
	return &own
}

// Add implements cache.Store.
func (s withoutManagedFields) Add(obj any) error {
	return s.UndeltaStore.Add(ownCopy(obj))
}

// Update implements cache.Store.
func (s withoutManagedFields) Update(obj any) error {
	return s.UndeltaStore.Update(ownCopy(obj))
}

// Replace implements cache.Store.
func (s withoutManagedFields) Replace(list []any, resourceVersion string) error {
	trimmed := make([]any, len(list))
	for i, obj := range list {
		trimmed[i] = ownCopy(obj)
	}
	return s.UndeltaStore.Replace(trimmed, resourceVersion)
}
