package envvars

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// ErrServicesNotSynced is WatchingReader.Services' error before its watch
// has read the Services once: the kubelet's message. The container is
// not created then, and the next sync tries again.
var ErrServicesNotSynced = errors.New("services have not yet been read at least once, cannot construct envvars")

// WatchingReader is a ClientReader whose Services come from one list and
// watch of every Service of the cluster (what the Node authorizer lets a
// node do), as the kubelet's service lister: a container start costs no
// request for them, whatever the number of pods. ConfigMaps and Secrets
// are read as ClientReader reads them.
//
// Run keeps the Services current. Before its first list, Services waits
// for it while Run runs, at most SyncWait, then fails with
// ErrServicesNotSynced, as the kubelet does (whose own wait is the sync
// loop's: pods that reach it before the list are retried later).
type WatchingReader struct {
	ClientReader
	// SyncWait bounds how long Services waits for the first list while
	// Run runs (pods bound to a node that just started). Set it before
	// use. NewWatchingReader sets DefaultServicesSyncWait; 0: no wait.
	SyncWait time.Duration

	informer cache.SharedIndexInformer
	running  atomic.Bool
}

// DefaultServicesSyncWait is WatchingReader.SyncWait's default.
const DefaultServicesSyncWait = 10 * time.Second

var _ Reader = (*WatchingReader)(nil)

// NewWatchingReader returns a reader of client's objects. It talks to no
// server until Run.
func NewWatchingReader(client kubernetes.Interface) (*WatchingReader, error) {
	if client == nil {
		return nil, errors.New("envvars: NewWatchingReader: client is nil")
	}
	services := client.CoreV1().Services(metav1.NamespaceAll)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (k8sruntime.Object, error) {
			return services.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return services.Watch(ctx, o)
		},
	}
	// The wrapper lets the reflector fall back to list+watch for clients
	// without streaming-list support (such as the fake clientset).
	inf := cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(lw, client), &v1.Service{}, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	// Only the spec's ports and cluster IP are read: managed fields are
	// the biggest part of a Service and are dropped before storing.
	if err := inf.SetTransform(func(obj any) (any, error) {
		if s, ok := obj.(*v1.Service); ok {
			s.ManagedFields = nil
		}
		return obj, nil
	}); err != nil {
		return nil, fmt.Errorf("envvars: NewWatchingReader: %w", err)
	}
	return &WatchingReader{ClientReader: ClientReader{Client: client}, SyncWait: DefaultServicesSyncWait, informer: inf}, nil
}

// Run lists and watches the Services until ctx ends.
func (r *WatchingReader) Run(ctx context.Context) error {
	r.running.Store(true)
	defer r.running.Store(false)
	r.informer.RunWithContext(ctx)
	return nil
}

// HasSynced reports whether the Services have been listed once.
func (r *WatchingReader) HasSynced() bool { return r.informer.HasSynced() }

// Services implements Reader from the watched Services; the slice and
// the Services are the reader's, not to be modified.
func (r *WatchingReader) Services(ctx context.Context, namespace string) ([]*v1.Service, error) {
	if !r.informer.HasSynced() {
		if !r.running.Load() || r.SyncWait <= 0 {
			return nil, ErrServicesNotSynced
		}
		wctx, cancel := context.WithTimeout(ctx, r.SyncWait)
		defer cancel()
		if !cache.WaitForCacheSync(wctx.Done(), r.informer.HasSynced) {
			return nil, ErrServicesNotSynced
		}
	}
	objs, err := r.informer.GetIndexer().ByIndex(cache.NamespaceIndex, namespace)
	if err != nil {
		return nil, err
	}
	out := make([]*v1.Service, 0, len(objs))
	for _, o := range objs {
		if s, ok := o.(*v1.Service); ok {
			out = append(out, s)
		}
	}
	return out, nil
}
