package node

import (
	"context"
	"strconv"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// nodeWatch keeps the Controller's own Node, as the API server has it, in
// a store fed by a list and a watch of that one object (a field selector
// on its name, which the Node authorizer allows a node's credentials), so
// that the status loop reads it without a request, as the kubelet's node
// lister does.
type nodeWatch struct {
	store  cache.Store
	synced cache.InformerSynced
}

// startNodeWatch starts the informer of the Node; it stops when ctx ends,
// and run returns once it has.
func (c *Controller) startNodeWatch(ctx context.Context) (w *nodeWatch, run func()) {
	selector := fields.OneTermEqualSelector("metadata.name", c.opts.NodeName).String()
	nodes := c.opts.Client.CoreV1().Nodes()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (kruntime.Object, error) {
			o.FieldSelector = selector
			return nodes.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = selector
			return nodes.Watch(ctx, o)
		},
	}
	// The wrapper lets the reflector fall back to list+watch for clients
	// without streaming-list support (such as the fake clientset).
	inf := cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(lw, c.opts.Client), &v1.Node{}, 0, cache.Indexers{})
	return &nodeWatch{store: inf.GetStore(), synced: inf.HasSynced}, func() { inf.Run(ctx.Done()) }
}

// get returns the Node as the watch last saw it, or false when the watch
// has not listed yet or has no Node (deleted, or not seen yet): the caller
// then reads it from the API server.
func (w *nodeWatch) get(name string) (*v1.Node, bool) {
	if w == nil || !w.synced() {
		return nil, false
	}
	o, ok, err := w.store.GetByKey(name)
	if err != nil || !ok {
		return nil, false
	}
	n, ok := o.(*v1.Node)
	return n, ok
}

// newerNode returns the newer of two copies of the Node by resource
// version (integers on every etcd-backed API server); a version that is
// not one loses, and b wins a tie. Either may be nil.
func newerNode(a, b *v1.Node) *v1.Node {
	if a == nil {
		return b
	}
	if b == nil {
		return a
	}
	ra, errA := strconv.ParseUint(a.ResourceVersion, 10, 64)
	rb, errB := strconv.ParseUint(b.ResourceVersion, 10, 64)
	if errA == nil && (errB != nil || ra > rb) {
		return a
	}
	return b
}
