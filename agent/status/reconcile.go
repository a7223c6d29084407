package status

import "k8s.io/apimachinery/pkg/types"

// reconcile is the full pass of every ReconcileInterval: it queues every
// pod whose status in the API server (as last seen) differs from the one
// the Manager would write now, and every finished pod being deleted that is
// still there. That repairs drift (another writer, a lost write), releases
// a terminal phase held back while containers could run, and writes the
// status of a static pod once its mirror pod exists. Pods queued, being
// written or backing off are left alone: they are written anyway.
func (m *Manager) reconcile() {
	defer m.reconciles.Add(1)
	m.mu.Lock()
	snaps := make([]snapshot, 0, len(m.pods))
	for uid, e := range m.pods {
		if e.gone || e.queued || e.inFlight || !e.retryAt.IsZero() || !e.holdUntil.IsZero() {
			continue
		}
		snaps = append(snaps, e.snapshot(uid))
	}
	m.mu.Unlock()

	due := map[types.UID]*entry{}
	for _, s := range snaps {
		if m.needsWrite(s) {
			due[s.uid] = s.e
		}
	}
	if len(due) == 0 {
		return
	}
	m.mu.Lock()
	for uid, e := range due {
		if m.pods[uid] == e {
			m.enqueueLocked(uid, e)
		}
	}
	m.mu.Unlock()
	m.metrics.reconciled(len(due))
	m.opts.Logger.V(4).Info("reconcile queued pods whose status differs in the API server", "pods", len(due))
}

// needsWrite reports whether a write of s would do something.
func (m *Manager) needsWrite(s snapshot) bool {
	static := isStatic(s.pod)
	target := m.base(s, static)
	if target == nil {
		return false
	}
	if s.written != nil && target == s.lastResponse && s.writtenVersion == s.version &&
		!(isTerminalPhase(s.status.Phase) && !isTerminalPhase(s.written.Phase)) &&
		!(s.finished && !s.deleted && !static) {
		// Nothing new on either side since our last write: no terminal
		// phase held back, no deletion to make, and the API object as
		// last seen is the one that write returned.
		return false
	}
	could := m.opts.PodStates.CouldHaveRunningContainers(s.uid)
	desired := desiredStatus(s, target.Status, could)
	if !statusEqual(target.Status, desired) {
		return true
	}
	return !static && s.finished && !s.deleted && !could && isTerminalPhase(desired.Phase) && beingDeleted(s.pod, target)
}
