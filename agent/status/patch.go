package status

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// patch writes the desired status to target in one PATCH of the status
// subresource. When the server answers Invalid (what a failed UID
// precondition gives) or Conflict, it reads the object once: a new UID
// means the pod is gone; after a Conflict it patches again from the object
// read.
func (m *Manager) patch(ctx context.Context, s snapshot, target *v1.Pod, could, static bool) outcome {
	pods := m.opts.Client.CoreV1().Pods(target.Namespace)
	gone := func(reason string, err error) outcome {
		if static {
			// The mirror pod is gone, not the static pod: write again
			// once the agent has made a new mirror pod.
			return outcome{result: ResultNoMirror, mirrorUID: target.UID}
		}
		return outcome{result: ResultGone, goneReason: reason, err: err}
	}
	for attempt := 0; ; attempt++ {
		desired := desiredStatus(s, target.Status, could)
		if statusEqual(target.Status, desired) {
			return outcome{result: ResultUnchanged, written: &desired}
		}
		body, err := patchBytes(target.UID, target.Status, desired)
		if err != nil {
			return outcome{result: ResultError, err: err}
		}
		resp, err := pods.Patch(ctx, target.Name, types.StrategicMergePatchType, body, metav1.PatchOptions{}, "status")
		if err == nil {
			m.opts.Logger.V(4).Info("pod status written", "pod", podRef(target), "podUID", target.UID, "phase", desired.Phase)
			return outcome{result: ResultWritten, written: &desired, response: kept(resp)}
		}
		if reason, ok := classifyGone(err); ok {
			return gone(reason, err)
		}
		// The API server answers a UID precondition that fails with
		// Invalid ("metadata.uid: field is immutable"); a stale base may
		// give a Conflict. Either way one read tells.
		conflict, invalid := apierrors.IsConflict(err), apierrors.IsInvalid(err)
		if (!conflict && !invalid) || attempt > 0 {
			return outcome{result: ResultError, err: fmt.Errorf("patch status of %s: %w", podRef(target), err)}
		}
		fresh, gerr := pods.Get(ctx, target.Name, metav1.GetOptions{})
		if reason, ok := classifyGone(gerr); ok {
			return gone(reason, gerr)
		}
		if gerr != nil {
			return outcome{result: ResultError, err: fmt.Errorf("patch status of %s: %w; then read it: %w", podRef(target), err, gerr)}
		}
		if fresh.UID != target.UID {
			return gone(GoneUIDChanged, fmt.Errorf("pod %s: %w", podRef(target), errUIDChanged))
		}
		if invalid {
			// The same pod: the status itself is refused. A newer
			// status may be accepted; retry after a back-off.
			return outcome{result: ResultError, err: fmt.Errorf("patch status of %s: %w", podRef(target), err)}
		}
		target = fresh
	}
}

// patchBytes returns the strategic merge patch from the status old to
// desired, carrying metadata.uid so that the server refuses it (Conflict)
// when another pod has the name now.
func patchBytes(uid types.UID, old, desired v1.PodStatus) ([]byte, error) {
	oldJSON, err := json.Marshal(v1.Pod{Status: old})
	if err != nil {
		return nil, fmt.Errorf("encode old status: %w", err)
	}
	newJSON, err := json.Marshal(v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: uid}, Status: desired})
	if err != nil {
		return nil, fmt.Errorf("encode new status: %w", err)
	}
	p, err := strategicpatch.CreateTwoWayMergePatch(oldJSON, newJSON, v1.Pod{})
	if err != nil {
		return nil, fmt.Errorf("create status patch: %w", err)
	}
	return p, nil
}

// nodeConditions are the condition types the node owns: a type among them
// that the new status lacks is removed; other types (PodScheduled,
// DisruptionTarget, readiness gates...) are kept as the API has them.
var nodeConditions = map[v1.PodConditionType]bool{
	v1.PodReadyToStartContainers: true,
	v1.PodInitialized:            true,
	v1.ContainersReady:           true,
	v1.PodReady:                  true,
}

// desiredStatus is the status to write over api (the status in the API
// server as last seen): the newest recorded one under the terminal-phase
// rule, keeping what other components own, with times at the API's
// one-second precision.
func desiredStatus(s snapshot, api v1.PodStatus, could bool) v1.PodStatus {
	old := &api
	if api.Phase == "" && s.written != nil {
		old = s.written
	}
	st := MergeStatus(old, *s.status.DeepCopy(), could)
	if isTerminalPhase(old.Phase) && !isTerminalPhase(st.Phase) {
		// A terminal phase is final: the API server refuses to leave it.
		st.Phase, st.Reason, st.Message = old.Phase, old.Reason, old.Message
	}
	if st.QOSClass == "" {
		st.QOSClass = api.QOSClass
	}
	if st.NominatedNodeName == "" {
		st.NominatedNodeName = api.NominatedNodeName
	}
	if st.ResourceClaimStatuses == nil {
		st.ResourceClaimStatuses = api.ResourceClaimStatuses
	}
	have := map[v1.PodConditionType]bool{}
	for _, c := range st.Conditions {
		have[c.Type] = true
	}
	for _, c := range api.Conditions {
		if !have[c.Type] && !nodeConditions[c.Type] {
			st.Conditions = append(st.Conditions, c)
		}
	}
	normalize(&st)
	return st
}

// MergeStatus returns the status to publish when status replaces old (nil
// when nothing was published yet): status itself, except that while the pod
// could still have running containers a terminal phase is not published and
// the previous phase, reason and message (Pending when none) are kept. It
// is the one rule every status reporter keeps (agent.MergeStatus is this).
func MergeStatus(old *v1.PodStatus, status v1.PodStatus, couldHaveRunningContainers bool) v1.PodStatus {
	if !isTerminalPhase(status.Phase) || !couldHaveRunningContainers {
		return status
	}
	if old != nil && !isTerminalPhase(old.Phase) && old.Phase != "" {
		status.Phase, status.Reason, status.Message = old.Phase, old.Reason, old.Message
	} else {
		status.Phase, status.Reason, status.Message = v1.PodPending, "", ""
	}
	return status
}

func isTerminalPhase(p v1.PodPhase) bool { return p == v1.PodSucceeded || p == v1.PodFailed }

// normalize truncates the times of st to the second, as the API server
// stores them, so that a status read back compares equal to the one
// written.
func normalize(st *v1.PodStatus) {
	trunc := func(t *metav1.Time) {
		if t != nil && !t.IsZero() {
			*t = t.Rfc3339Copy()
		}
	}
	trunc(st.StartTime)
	for i := range st.Conditions {
		trunc(&st.Conditions[i].LastProbeTime)
		trunc(&st.Conditions[i].LastTransitionTime)
	}
	state := func(s *v1.ContainerState) {
		if s.Running != nil {
			trunc(&s.Running.StartedAt)
		}
		if s.Terminated != nil {
			trunc(&s.Terminated.StartedAt)
			trunc(&s.Terminated.FinishedAt)
		}
	}
	for _, list := range [][]v1.ContainerStatus{st.InitContainerStatuses, st.ContainerStatuses, st.EphemeralContainerStatuses} {
		for i := range list {
			state(&list[i].State)
			state(&list[i].LastTerminationState)
		}
	}
}

// statusEqual compares two statuses as the API server would store them:
// times to the second, conditions in any order.
func statusEqual(a, b v1.PodStatus) bool {
	a, b = *a.DeepCopy(), *b.DeepCopy()
	normalize(&a)
	normalize(&b)
	byType := func(cs []v1.PodCondition) {
		sort.SliceStable(cs, func(i, j int) bool { return cs[i].Type < cs[j].Type })
	}
	byType(a.Conditions)
	byType(b.Conditions)
	return apiequality.Semantic.DeepEqual(a, b)
}

// newest returns the newer of two copies of one object (same UID): the pod
// as seen (from the agent's watch, or as given) and the object our last
// PATCH returned. Resource versions are opaque in general; every API server
// with etcd storage makes them increasing integers, and they are compared as
// such; a version that is not one loses. When neither is, our own last write wins: it is at least as new
// as the base it was made from.
// kept is what the manager keeps of a PATCH's answer, the base of the next
// write (Manager.base) for as long as the pod is known: the metadata that
// a write and a deletion read, and the status. The whole object (its spec,
// labels, annotations and managedFields) would be a second copy of every
// pod beside the pod manager's.
func kept(p *v1.Pod) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: p.Name, Namespace: p.Namespace, UID: p.UID, ResourceVersion: p.ResourceVersion,
			DeletionTimestamp: p.DeletionTimestamp, DeletionGracePeriodSeconds: p.DeletionGracePeriodSeconds,
		},
		Status: p.Status,
	}
}

func newest(seen, written *v1.Pod) *v1.Pod {
	if seen == nil {
		return written
	}
	if written == nil || written.UID != seen.UID {
		return seen
	}
	a, errA := strconv.ParseUint(seen.ResourceVersion, 10, 64)
	b, errB := strconv.ParseUint(written.ResourceVersion, 10, 64)
	switch {
	case errA == nil && errB == nil && a > b, errA == nil && errB != nil:
		return seen
	}
	return written
}
