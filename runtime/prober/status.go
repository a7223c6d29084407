package prober

import (
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Started reports whether the running instance of a container has started:
// its startup probe passed, or it has none. False when the container is not
// running, or the pod or container is unknown.
func (m *Manager) Started(uid types.UID, container string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.containerLocked(uid, container)
	return c != nil && c.id != "" && c.started
}

// Readiness returns the readiness of the running instance of a container:
// known is false when the container has no readiness probe (or is unknown);
// otherwise ready is true once the probe passed (successThreshold times in a
// row) and until it fails failureThreshold times. A container that is not
// running or has not started is not ready.
func (m *Manager) Readiness(uid types.UID, container string) (ready, known bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.containerLocked(uid, container)
	if c == nil || c.probes[Readiness] == nil {
		return false, false
	}
	return c.id != "" && c.started && c.probes[Readiness].result == Success, true
}

// Result returns the published result of a probe of the running instance
// of a container: Unknown when the container has no such probe, is not
// running, or is unknown. Result(uid, name, Startup) == Failure means the
// instance failed its startup probe and must be killed; it stays so until a
// new instance, so a sync that failed to kill it can see it again.
func (m *Manager) Result(uid types.UID, container string, probe ProbeType) Result {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.containerLocked(uid, container)
	if c == nil || c.id == "" || probe < Startup || probe > Readiness || c.probes[probe] == nil {
		return Unknown
	}
	return c.probes[probe].result
}

// Unhealthy returns the running instances of a pod's containers that failed
// their liveness or startup probe and must be killed (restarted by the
// restart policy), each as the Update that said so (with its output and the
// probe's grace period). An instance stays in the list until SetContainers
// shows a new one, so a sync that failed to kill it finds it again.
func (m *Manager) Unhealthy(uid types.UID) []Update {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.pods[uid]
	if p == nil {
		return nil
	}
	var out []Update
	for _, c := range p.containers {
		if c.id == "" {
			continue
		}
		for _, t := range []ProbeType{Startup, Liveness} {
			if w := c.probes[t]; w != nil && w.result == Failure && w.published.ContainerID == c.id {
				u := w.published
				if u.TerminationGracePeriodSeconds != nil {
					g := *u.TerminationGracePeriodSeconds
					u.TerminationGracePeriodSeconds = &g
				}
				out = append(out, u)
				break
			}
		}
	}
	slices.SortFunc(out, func(a, b Update) int { return strings.Compare(a.ContainerName, b.ContainerName) })
	return out
}

// Liveness returns the published liveness of the running instance of a
// container: Success until its probe fails failureThreshold times in a row,
// then Failure until a new instance (so a sync that failed to kill it sees
// it again). Unknown when the container has no liveness probe, is not
// running, or is unknown.
func (m *Manager) Liveness(uid types.UID, container string) Result {
	return m.Result(uid, container, Liveness)
}

// UpdatePodStatus sets Started and Ready of the container statuses of a
// pod, and of its sidecars' (restartable init containers), as the kubelet
// does: a container is started when it runs and its startup probe passed (or
// it has none); ready when started and its readiness probe passed (or it has
// none). A status whose ContainerID is not the instance last given to
// SetContainers is neither (the manager has not seen that instance yet).
// Statuses of other init containers are left alone. Call SetContainers
// first.
func (m *Manager) UpdatePodStatus(uid types.UID, status *v1.PodStatus) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.pods[uid]
	set := func(cs *v1.ContainerStatus) {
		started, ready := false, false
		if cs.State.Running != nil {
			var c *containerState
			if p != nil {
				c = p.containers[cs.Name]
			}
			switch {
			case c == nil:
				started, ready = true, true // no probes known: running is enough
			case sameInstance(cs.ContainerID, c.id) && c.started:
				started = true
				ready = c.probes[Readiness] == nil || c.probes[Readiness].result == Success
			}
		}
		cs.Started = &started
		cs.Ready = ready
	}
	for i := range status.ContainerStatuses {
		set(&status.ContainerStatuses[i])
	}
	for i := range status.InitContainerStatuses {
		cs := &status.InitContainerStatuses[i]
		if p != nil && p.containers[cs.Name] != nil {
			set(cs)
		}
	}
}

// sameInstance reports whether a status's "type://id" names the instance id.
func sameInstance(statusID, id string) bool {
	if id == "" {
		return false
	}
	return statusID == id || strings.HasSuffix(statusID, "://"+id)
}
