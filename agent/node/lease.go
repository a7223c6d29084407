package node

import (
	"context"
	"fmt"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// runLease renews the Node's Lease in kube-node-lease every
// LeaseRenewInterval; after a failure it retries with a jittered back-off
// from 200ms up to MaxBackOff, then returns to the interval (the kubelet's
// lease controller).
func (c *Controller) runLease(ctx context.Context) {
	delay := initialBackOff
	for {
		wait := c.opts.LeaseRenewInterval
		if err := c.renewLeaseBounded(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			c.metrics.leaseRenewal("error")
			wait = c.jitter(delay)
			delay = min(2*delay, c.opts.MaxBackOff)
			c.log.Error(err, "node lease not renewed; retrying", "node", c.opts.NodeName, "retryIn", wait.String())
		} else {
			c.metrics.leaseRenewal("success")
			delay = initialBackOff
		}
		if !c.sleep(ctx, wait) {
			return
		}
	}
}

// renewLeaseBounded is renewLease given at most LeaseDuration, the
// timeout of the kubelet's heartbeat client: a request that hangs (an API
// server that stopped answering without closing the connection) fails and
// is retried, rather than holding the renewals back for good.
func (c *Controller) renewLeaseBounded(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.opts.LeaseDuration)
	defer cancel()
	return c.renewLease(ctx)
}

// renewLease creates the Lease or sets its renew time to now, with the
// Node as its owner so that deleting the Node deletes it. It updates the
// Lease as it last returned it (one request); only when that fails with a
// conflict or when none is known does it read the Lease first.
func (c *Controller) renewLease(ctx context.Context) error {
	leases := c.opts.Client.CoordinationV1().Leases(v1.NamespaceNodeLease)
	now := metav1.NewMicroTime(c.opts.Clock.Now())
	holder := c.opts.NodeName
	seconds := int32(c.opts.LeaseDuration.Seconds())
	lease := c.lastLease // only this goroutine touches it
	if lease == nil {
		got, err := leases.Get(ctx, c.opts.NodeName, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			lease = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: c.opts.NodeName, Namespace: v1.NamespaceNodeLease}}
			lease.Spec = coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &seconds, RenewTime: &now}
			c.setOwner(lease)
			created, err := leases.Create(ctx, lease, metav1.CreateOptions{})
			if err != nil {
				return fmt.Errorf("create lease %s/%s: %w", v1.NamespaceNodeLease, c.opts.NodeName, err)
			}
			c.lastLease = created
			return nil
		case err != nil:
			return fmt.Errorf("read lease %s/%s: %w", v1.NamespaceNodeLease, c.opts.NodeName, err)
		}
		lease = got
	}
	lease = lease.DeepCopy()
	lease.Spec.HolderIdentity = &holder
	lease.Spec.LeaseDurationSeconds = &seconds
	lease.Spec.RenewTime = &now
	c.setOwner(lease)
	updated, err := leases.Update(ctx, lease, metav1.UpdateOptions{})
	if err != nil {
		c.lastLease = nil // read it again next time
		return fmt.Errorf("renew lease %s/%s: %w", v1.NamespaceNodeLease, c.opts.NodeName, err)
	}
	c.lastLease = updated
	return nil
}

// setOwner makes the registered Node the Lease's only owner, as the
// kubelet does.
func (c *Controller) setOwner(lease *coordinationv1.Lease) {
	uid := c.nodeUID()
	if uid == "" {
		return
	}
	lease.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: "v1", Kind: "Node", Name: c.opts.NodeName, UID: uid,
	}}
}
