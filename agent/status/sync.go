package status

import (
	"context"
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/podmanager"
)

// Reasons a pod is dropped as gone, the values of the metric's reason
// label.
const (
	GoneNotFound   = "not_found"
	GoneForbidden  = "forbidden"
	GoneUIDChanged = "uid_changed"
)

// Results of a write, the values of the metric's result label.
const (
	ResultWritten   = "written"   // one PATCH changed the status
	ResultUnchanged = "unchanged" // the API already had it: no request
	ResultNoMirror  = "no_mirror" // a static pod without mirror pod yet
	ResultGone      = "gone"      // the API object is gone: dropped
	ResultError     = "error"     // failed: retried after a back-off
)

// snapshot is what a worker needs of an entry, copied under the lock.
type snapshot struct {
	e              *entry
	uid            types.UID
	pod, mirror    *v1.Pod
	status         v1.PodStatus // read-only: owned by the entry
	version        uint64
	finished       bool
	deleted        bool
	writtenVersion uint64
	written        *v1.PodStatus
	lastResponse   *v1.Pod
	goneMirrorUID  types.UID
}

// outcome is what a write did.
type outcome struct {
	result     string
	goneReason string
	written    *v1.PodStatus // the status now in the API server
	response   *v1.Pod       // the object the PATCH returned
	mirrorUID  types.UID     // static pods: the mirror found gone
	deleted    bool
	err        error
}

func (m *Manager) syncPod(ctx context.Context, uid types.UID) {
	m.mu.Lock()
	e, ok := m.pods[uid]
	if !ok {
		m.mu.Unlock()
		return
	}
	if !e.holdUntil.IsZero() {
		// Held after the dispatcher took it from the queue: the hold's end
		// (or the status that follows) queues it again.
		e.inFlight = false
		m.mu.Unlock()
		return
	}
	s := e.snapshot(uid)
	m.mu.Unlock()

	start := m.opts.Clock.Now()
	ctx, cancel := context.WithTimeout(ctx, m.opts.RequestTimeout)
	out := m.write(ctx, s)
	cancel()
	m.metrics.observeWrite(out.result, m.opts.Clock.Since(start))
	m.finish(s, out)
}

// snapshot copies what a write needs, under Manager.mu.
func (e *entry) snapshot(uid types.UID) snapshot {
	return snapshot{
		e: e, uid: uid, pod: e.pod, mirror: e.mirror, status: e.status, version: e.version,
		finished: e.finished, deleted: e.deleted, written: e.written, writtenVersion: e.writtenVersion,
		lastResponse: e.lastResponse, goneMirrorUID: e.goneMirrorUID,
	}
}

// finish records the outcome of a write of s and queues the pod again when
// a newer status arrived meanwhile, or schedules its retry. It logs after
// unlocking.
func (m *Manager) finish(s snapshot, out outcome) {
	jitter := 0.0
	if out.result == ResultError {
		jitter = m.opts.Rand() // a callback: never under the lock
	}
	log := m.opts.Logger.WithValues("pod", podRef(s.pod), "podUID", s.uid)
	m.mu.Lock()
	e, ok := m.pods[s.uid]
	if !ok || e != s.e {
		m.mu.Unlock()
		return // forgotten (and maybe recorded again) meanwhile
	}
	e.inFlight = false
	switch out.result {
	case ResultGone:
		e.gone = true
		m.mu.Unlock()
		m.metrics.dropped(out.goneReason)
		log.V(2).Info("pod gone from the API server; its status is no longer written", "reason", out.goneReason, "err", out.err)
		return
	case ResultError:
		if out.written != nil {
			e.written = out.written
		}
		if out.response != nil {
			e.lastResponse = out.response
		}
		e.failures++
		failures := e.failures
		d := m.backoffDelay(failures, jitter)
		e.retryAt = m.opts.Clock.Now().Add(d)
		m.backoff[s.uid] = e
		m.signal()
		m.mu.Unlock()
		log.V(2).Info("writing pod status failed; will retry", "err", out.err, "failures", failures, "retryIn", d)
		return
	case ResultNoMirror:
		if out.mirrorUID != "" {
			e.goneMirrorUID = out.mirrorUID
		}
	default:
		e.written = out.written
		if out.response != nil {
			e.lastResponse = out.response
		}
		e.deleted = e.deleted || out.deleted
	}
	e.failures = 0
	e.writtenVersion = s.version
	if e.version != s.version {
		m.enqueueLocked(s.uid, e)
	}
	m.mu.Unlock()
}

// backoffDelay is BackoffBase·2^(failures-1), at most BackoffMax, plus
// jitter (in [0, 1)) times half of it.
func (m *Manager) backoffDelay(failures int, jitter float64) time.Duration {
	d := m.opts.BackoffBase
	for i := 1; i < failures && d < m.opts.BackoffMax; i++ {
		d *= 2
	}
	d = min(d, m.opts.BackoffMax)
	return d + time.Duration(jitter*float64(d)/2)
}

// write brings the API object of the pod (its mirror pod for a static pod)
// in line with the newest recorded status, in one PATCH, then deletes a
// finished pod being deleted.
func (m *Manager) write(ctx context.Context, s snapshot) outcome {
	static := isStatic(s.pod)
	target := m.base(s, static)
	if target == nil {
		return outcome{result: ResultNoMirror}
	}
	could := m.opts.PodStates.CouldHaveRunningContainers(s.uid)
	out := m.patch(ctx, s, target, could, static)
	if out.result == ResultError || out.result == ResultGone || out.result == ResultNoMirror {
		return out
	}
	if static || !s.finished || s.deleted || could || !isTerminalPhase(out.written.Phase) {
		return out
	}
	if !beingDeleted(s.pod, target, out.response) {
		return out
	}
	// The terminal status is in the API server and the pod worker is done
	// with the pod: the object may go now.
	uid := target.UID
	err := m.opts.Client.CoreV1().Pods(target.Namespace).Delete(ctx, target.Name, metav1.DeleteOptions{
		GracePeriodSeconds: new(int64),
		Preconditions:      &metav1.Preconditions{UID: &uid},
	})
	switch {
	case err == nil, apierrors.IsNotFound(err), apierrors.IsConflict(err), apierrors.IsForbidden(err):
		// Gone, or another incarnation under the name: either way this
		// one is no more.
		out.deleted = true
		m.metrics.deleted()
		m.opts.Logger.V(2).Info("finished pod deleted from the API server", "pod", podRef(target), "podUID", uid)
		return out
	default:
		// The status is written: the retry only deletes.
		out.result, out.err = ResultError, fmt.Errorf("delete finished pod %s: %w", podRef(target), err)
		return out
	}
}

// base returns the API object to write to, as last seen: for a regular pod
// the newest of the pod as the agent last saw it and the object our last
// PATCH returned; for a static pod its mirror pod (nil: none yet).
func (m *Manager) base(s snapshot, static bool) *v1.Pod {
	if static {
		mirror := s.mirror
		if m.opts.Pods != nil {
			mirror, _ = m.opts.Pods.GetMirrorPodByPod(s.pod)
		}
		if mirror == nil || mirror.UID == s.goneMirrorUID {
			return nil
		}
		return newest(mirror, s.lastResponse)
	}
	seen := s.pod
	if m.opts.Pods != nil {
		if p, ok := m.opts.Pods.GetPodByUID(s.uid); ok {
			seen = p
		}
	}
	return newest(seen, s.lastResponse)
}

func beingDeleted(pods ...*v1.Pod) bool {
	for _, p := range pods {
		if p != nil && p.DeletionTimestamp != nil {
			return true
		}
	}
	return false
}

// classifyGone tells whether err says the object is gone, and why.
func classifyGone(err error) (string, bool) {
	switch {
	case apierrors.IsNotFound(err):
		return GoneNotFound, true
	case apierrors.IsForbidden(err):
		// The Node authorizer's answer for a pod that is gone or bound
		// elsewhere.
		return GoneForbidden, true
	}
	return "", false
}

var errUIDChanged = errors.New("another pod has the name now")

func podRef(pod *v1.Pod) string {
	if pod == nil {
		return ""
	}
	return pod.Namespace + "/" + pod.Name
}

func isStatic(pod *v1.Pod) bool { return podmanager.IsStaticPod(pod) }
