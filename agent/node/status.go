package node

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	"github.com/podlife/podlife/runtime"
)

// Condition reasons and messages, as the kubelet writes them (with podlife
// for kubelet in the messages).
const (
	reasonReady               = "KubeletReady"
	reasonNotReady            = "KubeletNotReady"
	reasonSufficientMemory    = "KubeletHasSufficientMemory"
	reasonNoDiskPressure      = "KubeletHasNoDiskPressure"
	reasonSufficientPID       = "KubeletHasSufficientPID"
	reasonInsufficientMemory  = "KubeletHasInsufficientMemory"
	reasonDiskPressure        = "KubeletHasDiskPressure"
	reasonInsufficientPID     = "KubeletHasInsufficientPID"
	messageInsufficientMemory = "podlife has insufficient memory available"
	messageDiskPressure       = "podlife has disk pressure"
	messageInsufficientPID    = "podlife has insufficient PID available"
	messageReady              = "podlife is posting ready status"
	messageSufficientMemory   = "podlife has sufficient memory available"
	messageNoDiskPressure     = "podlife has no disk pressure"
	messageSufficientPID      = "podlife has sufficient PID available"
	messageRuntimeNotAnswered = "container runtime status check may not have completed yet"
	messageRuntimeDown        = "container runtime is down"
	// runtimeSyncThreshold is how long the Node stays as the runtime's
	// last ready answer left it while its Status calls fail (the
	// kubelet's baseRuntimeSyncThreshold).
	runtimeSyncThreshold = 30 * time.Second
)

// runStatus computes the status every StatusUpdateFrequency and writes it
// when it differs from the Node's in the API server, or when the last write
// is StatusReportFrequency old.
func (c *Controller) runStatus(ctx context.Context) {
	t := c.opts.Clock.NewTicker(c.opts.StatusUpdateFrequency)
	defer t.Stop()
	lastWrite := c.opts.Clock.Now()
	for {
		var reply chan error
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		case reply = <-c.syncs:
		}
		// At most LeaseDuration, as the kubelet's heartbeat client: a
		// request that hangs fails and the next tick tries again.
		uctx, cancel := context.WithTimeout(ctx, c.opts.LeaseDuration)
		wrote, err := c.updateStatus(uctx, c.opts.Clock.Since(lastWrite) >= c.opts.StatusReportFrequency)
		cancel()
		if reply != nil {
			reply <- err // buffered
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			c.metrics.statusWrite("error")
			c.log.Error(err, "node status not updated; will retry", "node", c.opts.NodeName)
			continue
		}
		if wrote {
			lastWrite = c.opts.Clock.Now()
		}
	}
}

// SyncStatus computes the Node's status and writes it now when it changed
// (the kubelet's syncNodeStatus, which its node shutdown manager calls to
// publish the Ready condition at once), and returns the write's error. It
// waits for the Node's registration, and for the status update under way;
// it returns ctx's error when ctx ends first, or when Run is not running.
func (c *Controller) SyncStatus(ctx context.Context) error {
	select {
	case <-c.registered:
	case <-ctx.Done():
		return ctx.Err()
	}
	reply := make(chan error, 1)
	select {
	case c.syncs <- reply:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-reply:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// updateStatus takes the Node as the API server has it (from the watch;
// with a GET only when the watch has none), computes its status and writes
// it if it changed or force is set. A Node deleted meanwhile is registered
// again.
func (c *Controller) updateStatus(ctx context.Context, force bool) (bool, error) {
	cur, ok := c.watch.get(c.opts.NodeName)
	if ok {
		// Our own last write may be newer than what the watch delivered.
		cur = newerNode(cur, c.Node())
	} else {
		var err error
		cur, err = c.opts.Client.CoreV1().Nodes().Get(ctx, c.opts.NodeName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			c.log.Info("node deleted from the API server; registering it again", "node", c.opts.NodeName)
			return true, c.register(ctx)
		}
		if err != nil {
			return false, fmt.Errorf("read node %s: %w", c.opts.NodeName, err)
		}
	}
	cur = cur.DeepCopy() // the watch's objects are shared: never modified
	c.setNode(cur)
	status, err := c.computeStatus(ctx, &cur.Status)
	if err != nil {
		return false, err
	}
	if !force && !statusChanged(&cur.Status, &status) {
		return false, nil
	}
	return true, c.writeStatus(ctx, status)
}

// computeStatus builds the Node's status from Options, the machine, the
// runtime and the Provider. prev is the status the Node has (nil at
// registration): a condition keeps its lastTransitionTime while its status
// stays the same.
func (c *Controller) computeStatus(ctx context.Context, prev *v1.NodeStatus) (v1.NodeStatus, error) {
	now := metav1.NewTime(c.opts.Clock.Now())
	capacity, allocatable := c.resources()
	addresses := c.opts.Addresses
	if len(addresses) == 0 {
		addresses = c.machine.addresses
	}
	info := c.machine.info
	info.KubeletVersion = c.opts.KubeletVersion
	ready, notReadyMessage := true, ""
	if c.opts.Runtime != nil {
		rctx, cancel := context.WithTimeout(ctx, runtimeCallTimeout)
		if v, err := c.opts.Runtime.Version(rctx); err == nil {
			info.ContainerRuntimeVersion = v.RuntimeName + "://" + v.RuntimeVersion
		} else if prev != nil {
			info.ContainerRuntimeVersion = prev.NodeInfo.ContainerRuntimeVersion
		}
		st, err := c.opts.Runtime.Status(rctx)
		cancel()
		ready, notReadyMessage = c.runtimeReadiness(st, err)
	}
	status := v1.NodeStatus{
		Capacity:        capacity,
		Allocatable:     allocatable,
		Addresses:       append([]v1.NodeAddress(nil), addresses...),
		NodeInfo:        info,
		DaemonEndpoints: v1.NodeDaemonEndpoints{KubeletEndpoint: v1.DaemonEndpoint{Port: c.opts.DaemonEndpointPort}},
		Conditions:      append(c.pressureConditions(), readyCondition(ready, notReadyMessage)),
	}
	if c.opts.Images != nil {
		status.Images = c.opts.Images()
	}
	if c.opts.Provider != nil {
		if err := c.opts.Provider.ConfigureNode(ctx, &status); err != nil {
			return v1.NodeStatus{}, fmt.Errorf("provider: %w", err)
		}
	}
	for i := range status.Conditions {
		cond := &status.Conditions[i]
		cond.LastHeartbeatTime = now
		cond.LastTransitionTime = now
		if prev == nil {
			continue
		}
		for _, p := range prev.Conditions {
			if p.Type == cond.Type && p.Status == cond.Status && !p.LastTransitionTime.IsZero() {
				cond.LastTransitionTime = p.LastTransitionTime
			}
		}
	}
	return status, nil
}

// pressureConditions are MemoryPressure, DiskPressure and PIDPressure as
// Options.Pressure says (all False without it), with the kubelet's
// reasons and messages.
func (c *Controller) pressureConditions() []v1.NodeCondition {
	var mem, disk, pid bool
	if p := c.opts.Pressure; p != nil {
		mem, disk, pid = p.IsUnderMemoryPressure(), p.IsUnderDiskPressure(), p.IsUnderPIDPressure()
	}
	pick := func(on bool, t v1.NodeConditionType, onReason, onMessage, offReason, offMessage string) v1.NodeCondition {
		if on {
			return condition(t, true, onReason, onMessage)
		}
		return condition(t, false, offReason, offMessage)
	}
	return []v1.NodeCondition{
		pick(mem, v1.NodeMemoryPressure, reasonInsufficientMemory, messageInsufficientMemory, reasonSufficientMemory, messageSufficientMemory),
		pick(disk, v1.NodeDiskPressure, reasonDiskPressure, messageDiskPressure, reasonNoDiskPressure, messageNoDiskPressure),
		pick(pid, v1.NodePIDPressure, reasonInsufficientPID, messageInsufficientPID, reasonSufficientPID, messageSufficientPID),
	}
}

// runtimeReadiness is the kubelet's runtime state: the Ready condition's
// status and, when not ready, its message. An answer of the runtime
// decides at once (one that says it is not ready makes the Node not
// ready); a Status call that fails (an error, no answer in time) changes
// nothing, until the last ready answer is older than
// runtimeSyncThreshold: "container runtime is down". Before any ready
// answer: "container runtime status check may not have completed yet".
// A runtime slow to answer once, on a busy machine, does not make the
// Node not ready.
func (c *Controller) runtimeReadiness(st *runtime.Status, err error) (bool, string) {
	now := c.opts.Clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.log.Error(err, "container runtime sanity check failed", "node", c.opts.NodeName)
	} else {
		ready, problem := c.runtimeReady(st)
		c.runtimeProblem = problem
		if ready {
			c.lastRuntimeSync = now
		}
	}
	var errs []string
	switch {
	case c.lastRuntimeSync.IsZero():
		errs = append(errs, messageRuntimeNotAnswered)
	case !c.lastRuntimeSync.Add(runtimeSyncThreshold).After(now):
		errs = append(errs, messageRuntimeDown)
	}
	if c.runtimeProblem != "" {
		errs = append(errs, c.runtimeProblem)
	}
	switch len(errs) {
	case 0:
		return true, ""
	case 1:
		return false, errs[0]
	}
	return false, "[" + strings.Join(errs, ", ") + "]"
}

// runtimeReady reads a runtime's answer: whether it is ready and, when
// not, why.
func (c *Controller) runtimeReady(st *runtime.Status) (bool, string) {
	var problems []string
	for _, t := range []string{runtime.ConditionRuntimeReady, runtime.ConditionNetworkReady} {
		if t == runtime.ConditionNetworkReady && !c.opts.RequireNetworkReady {
			continue
		}
		cond := st.Condition(t)
		switch {
		case cond == nil:
			problems = append(problems, t+" missing")
		case !cond.Status:
			problems = append(problems, fmt.Sprintf("%s=false reason:%s message:%s", t, cond.Reason, cond.Message))
		}
	}
	if len(problems) == 0 {
		return true, ""
	}
	return false, fmt.Sprintf("container runtime is not ready: %v", problems)
}

func condition(t v1.NodeConditionType, on bool, reason, message string) v1.NodeCondition {
	s := v1.ConditionFalse
	if on {
		s = v1.ConditionTrue
	}
	return v1.NodeCondition{Type: t, Status: s, Reason: reason, Message: message}
}

func readyCondition(ready bool, message string) v1.NodeCondition {
	if ready {
		return condition(v1.NodeReady, true, reasonReady, messageReady)
	}
	return condition(v1.NodeReady, false, reasonNotReady, message)
}

// statusChanged reports whether want differs from have in anything the
// Controller writes, heartbeat times aside.
func statusChanged(have, want *v1.NodeStatus) bool {
	if !apiequality.Semantic.DeepEqual(have.Capacity, want.Capacity) ||
		!apiequality.Semantic.DeepEqual(have.Allocatable, want.Allocatable) ||
		!apiequality.Semantic.DeepEqual(have.Addresses, want.Addresses) ||
		have.NodeInfo != want.NodeInfo || have.DaemonEndpoints != want.DaemonEndpoints ||
		!apiequality.Semantic.DeepEqual(have.Images, want.Images) {
		return true
	}
	for _, w := range want.Conditions {
		found := false
		for _, h := range have.Conditions {
			if h.Type == w.Type {
				found = true
				if h.Status != w.Status || h.Reason != w.Reason || h.Message != w.Message {
					return true
				}
			}
		}
		if !found {
			return true
		}
	}
	return false
}

// writeStatus writes status to the Node's status subresource as a
// strategic merge patch from the Node as last read: only what changed is
// sent, and fields other writers own are left alone.
func (c *Controller) writeStatus(ctx context.Context, status v1.NodeStatus) error {
	base := c.Node()
	if base == nil {
		return fmt.Errorf("write status of node %s: not registered", c.opts.NodeName)
	}
	oldJSON, err := json.Marshal(v1.Node{Status: base.Status})
	if err != nil {
		return err
	}
	newJSON, err := json.Marshal(v1.Node{Status: status})
	if err != nil {
		return err
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(oldJSON, newJSON, v1.Node{})
	if err != nil {
		return fmt.Errorf("node status patch: %w", err)
	}
	out, err := c.opts.Client.CoreV1().Nodes().Patch(ctx, c.opts.NodeName, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil {
		return fmt.Errorf("write status of node %s: %w", c.opts.NodeName, err)
	}
	prevReady := readyOf(&base.Status)
	c.setNode(out)
	c.metrics.statusWrite("success")
	if r := readyOf(&out.Status); r != prevReady {
		c.log.Info("node Ready condition changed", "node", c.opts.NodeName, "ready", r)
	}
	c.log.V(4).Info("node status written", "node", c.opts.NodeName, "bytes", len(patch))
	return nil
}

func readyOf(s *v1.NodeStatus) v1.ConditionStatus {
	for _, c := range s.Conditions {
		if c.Type == v1.NodeReady {
			return c.Status
		}
	}
	return v1.ConditionUnknown
}
