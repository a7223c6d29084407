package node_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/utils/clock"

	"github.com/podlife/podlife/agent/node"
)

// hangingClient is a clientset whose Lease updates and Node status patches
// hang, while armed, until their context ends: an API server that stopped
// answering without closing the connection. (The fake clientset's reactors
// cannot see a request's context.)
type hangingClient struct {
	kubernetes.Interface
	leases, statuses *atomic.Int32 // requests left to hang
}

func (c hangingClient) CoordinationV1() coordinationv1client.CoordinationV1Interface {
	return hangingCoordination{c.Interface.CoordinationV1(), c.leases}
}

func (c hangingClient) CoreV1() corev1client.CoreV1Interface {
	return hangingCore{c.Interface.CoreV1(), c.statuses}
}

type hangingCoordination struct {
	coordinationv1client.CoordinationV1Interface
	hang *atomic.Int32
}

func (c hangingCoordination) Leases(ns string) coordinationv1client.LeaseInterface {
	return hangingLeases{c.CoordinationV1Interface.Leases(ns), c.hang}
}

type hangingLeases struct {
	coordinationv1client.LeaseInterface
	hang *atomic.Int32
}

func (l hangingLeases) Update(ctx context.Context, lease *coordinationv1.Lease, o metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	if l.hang.Add(-1) >= 0 {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return l.LeaseInterface.Update(ctx, lease, o)
}

type hangingCore struct {
	corev1client.CoreV1Interface
	hang *atomic.Int32
}

func (c hangingCore) Nodes() corev1client.NodeInterface {
	return hangingNodes{c.CoreV1Interface.Nodes(), c.hang}
}

type hangingNodes struct {
	corev1client.NodeInterface
	hang *atomic.Int32
}

func (n hangingNodes) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, o metav1.PatchOptions, sub ...string) (*v1.Node, error) {
	if len(sub) == 1 && sub[0] == "status" && n.hang.Add(-1) >= 0 {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return n.NodeInterface.Patch(ctx, name, pt, data, o, sub...)
}

// A Lease renewal or a status write that hangs gives up after the Lease's
// duration (the kubelet's heartbeat client's timeout) and is tried again:
// one request that never ends does not stop the heartbeats for good.
func TestHungHeartbeatsAreRetried(t *testing.T) {
	var leases, statuses atomic.Int32
	h := newHarness(t, func(o *node.Options) {
		o.Client = hangingClient{Interface: o.Client, leases: &leases, statuses: &statuses}
		o.Clock = clock.RealClock{}
		o.LeaseDuration, o.LeaseRenewInterval = time.Second, 100*time.Millisecond
		o.StatusUpdateFrequency, o.StatusReportFrequency = 100*time.Millisecond, 100*time.Millisecond
	})
	h.start()
	h.waitRegistered()
	renewed := func() time.Time {
		if l := h.lease(); l != nil && l.Spec.RenewTime != nil {
			return l.Spec.RenewTime.Time
		}
		return time.Time{}
	}
	h.eventually("the Lease created", 0, func() bool { return !renewed().IsZero() })
	heartbeat := func() time.Time { return cond(h.node(), v1.NodeReady).LastHeartbeatTime.Time }
	h.eventually("the status written", 0, func() bool { return !heartbeat().IsZero() })

	leases.Store(1)
	statuses.Store(1)
	h.eventually("the hung renewal and status write begun", 0, func() bool { return leases.Load() <= 0 && statuses.Load() <= 0 })
	hung := time.Now()
	h.eventually("the Lease renewed after the hung renewal", 0, func() bool { return renewed().After(hung) })
	h.eventually("the status written after the hung write", 0, func() bool { return heartbeat().After(hung) })
}
