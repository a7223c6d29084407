package volume

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// objectKey names a ConfigMap or Secret a pod's volumes use.
type objectKey struct {
	secret          bool // else a ConfigMap
	namespace, name string
}

func (k objectKey) String() string {
	kind := "configmap"
	if k.secret {
		kind = "secret"
	}
	return kind + " " + k.namespace + "/" + k.name
}

// watchedObject is one object's watch, shared by the pods that use it.
type watchedObject struct {
	pods     map[types.UID]bool
	cancel   context.CancelFunc
	informer cache.SharedIndexInformer
}

// objectWatcher keeps one watch per ConfigMap or Secret that the node's
// pods use, each with a field selector metadata.name=NAME (the Node
// authorizer lets a node read only the objects its pods refer to, so it
// cannot watch a whole namespace), reference-counted by pod: the watch
// starts with the first pod using the object and stops with the last.
// Every change calls onChange.
type objectWatcher struct {
	client   kubernetes.Interface
	onChange func()

	mu sync.Mutex
	// ctx is Run's; nil before Run and after it ends.
	ctx  context.Context
	wg   *sync.WaitGroup
	objs map[objectKey]*watchedObject
}

// syncTimeout bounds the wait for an object's first listing.
const syncTimeout = 10 * time.Second

// errNotRunning: the manager's Run has not started (or has ended).
var errNotRunning = errors.New("volume manager is not running")

// use records that pod uses key and starts its watch if it is new.
func (w *objectWatcher) use(key objectKey, pod types.UID) (cache.SharedIndexInformer, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if o, ok := w.objs[key]; ok {
		o.pods[pod] = true
		return o.informer, nil
	}
	if w.ctx == nil {
		return nil, errNotRunning
	}
	ctx, cancel := context.WithCancel(w.ctx)
	inf := cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(w.listWatch(ctx, key), w.client), exampleObject(key), 0, cache.Indexers{})
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { w.onChange() },
		UpdateFunc: func(any, any) { w.onChange() },
		DeleteFunc: func(any) { w.onChange() },
	})
	w.objs[key] = &watchedObject{pods: map[types.UID]bool{pod: true}, cancel: cancel, informer: inf}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		inf.RunWithContext(ctx)
	}()
	return inf, nil
}

func exampleObject(key objectKey) k8sruntime.Object {
	if key.secret {
		return &v1.Secret{}
	}
	return &v1.ConfigMap{}
}

func (w *objectWatcher) listWatch(ctx context.Context, key objectKey) *cache.ListWatch {
	sel := "metadata.name=" + key.name
	return &cache.ListWatch{
		ListWithContextFunc: func(_ context.Context, o metav1.ListOptions) (k8sruntime.Object, error) {
			o.FieldSelector = sel
			if key.secret {
				return w.client.CoreV1().Secrets(key.namespace).List(ctx, o)
			}
			return w.client.CoreV1().ConfigMaps(key.namespace).List(ctx, o)
		},
		WatchFuncWithContext: func(_ context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = sel
			if key.secret {
				return w.client.CoreV1().Secrets(key.namespace).Watch(ctx, o)
			}
			return w.client.CoreV1().ConfigMaps(key.namespace).Watch(ctx, o)
		},
	}
}

// get is the object from its watch, once the watch has listed it
// (waiting at most until ctx ends): nil and a NotFound error when it does
// not exist.
func (w *objectWatcher) get(ctx context.Context, key objectKey, pod types.UID) (k8sruntime.Object, error) {
	inf, err := w.use(key, pod)
	if err != nil {
		return nil, err
	}
	// Wait on the informer's synced channel, not cache.WaitForCacheSync,
	// which polls every 100 ms: a pod waits so for each of its objects
	// in turn.
	sctx, cancel := context.WithTimeout(ctx, syncTimeout)
	defer cancel()
	synced := inf.HasSyncedChecker()
	select {
	case <-synced.Done():
	case <-sctx.Done():
		if !cache.IsDone(synced) {
			return nil, fmt.Errorf("%s: not read from the API server yet: %w", key, sctx.Err())
		}
	}
	obj, exists, err := inf.GetStore().GetByKey(key.namespace + "/" + key.name)
	if err != nil {
		return nil, err
	}
	if !exists {
		res := schema.GroupResource{Resource: "configmaps"}
		if key.secret {
			res.Resource = "secrets"
		}
		return nil, apierrors.NewNotFound(res, key.name)
	}
	return obj.(k8sruntime.Object), nil
}

// release drops pod's uses; watches no pod uses any more stop.
func (w *objectWatcher) release(pod types.UID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for key, o := range w.objs {
		delete(o.pods, pod)
		if len(o.pods) == 0 {
			o.cancel()
			delete(w.objs, key)
		}
	}
}

// watching is the number of objects watched (for tests and metrics).
func (w *objectWatcher) watching() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.objs)
}
