package agent

import (
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/podmanager"
	"github.com/podlife/podlife/podworker"
)

// PodView is where one pod stands, for /debug/pods, logs and tests. It is a
// snapshot; the JSON names are stable.
type PodView struct {
	UID       types.UID `json:"uid"`
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	// Lifecycle is the pod worker's fine-grained state (waiting, syncing,
	// terminating, terminated, finished), "rejected" for a pod admission
	// refused, or "unknown" for a desired pod no worker knows yet.
	Lifecycle string `json:"lifecycle"`
	// WorkerState is the coarse state: sync, terminating or terminated
	// ("" when no worker knows the pod).
	WorkerState string `json:"workerState,omitempty"`
	// Phase and Reason are the published status.
	Phase  v1.PodPhase `json:"phase,omitempty"`
	Reason string      `json:"reason,omitempty"`
	// Desired: the pod is in the pod manager. Orphan: a worker runs it but
	// it is no longer desired. RuntimeOnly: found only in the runtime.
	Desired     bool `json:"desired"`
	Orphan      bool `json:"orphan"`
	RuntimeOnly bool `json:"runtimeOnly"`
	Static      bool `json:"static"`
	// GracePeriod is the effective grace period in seconds once terminating.
	GracePeriod int64 `json:"gracePeriodSeconds,omitempty"`
	// Since is when the pod entered its lifecycle state; TimeInState how
	// long ago that was (both zero when unknown).
	Since       time.Time     `json:"since,omitzero"`
	TimeInState time.Duration `json:"timeInStateNanoseconds,omitempty"`
	// Failures counts consecutive failed Syncer calls.
	Failures int `json:"failures,omitempty"`
	// NextAttempt is when the worker will sync the pod again by itself
	// (resync or retry); zero when none is scheduled.
	NextAttempt time.Time `json:"nextAttempt,omitzero"`
}

// Pods returns a view of every pod the agent knows — desired pods, pods the
// workers still terminate, runtime-only pods — sorted by namespace, name and
// UID.
func (a *Agent) Pods() []PodView {
	now := a.clock.Now()
	views := map[types.UID]*PodView{}
	for _, pod := range a.pods.GetPods() {
		views[pod.UID] = &PodView{UID: pod.UID, Namespace: pod.Namespace, Name: pod.Name,
			Desired: true, Static: podmanager.IsStaticPod(pod), Lifecycle: "unknown"}
	}
	a.mu.Lock()
	for uid, t := range a.tracked {
		if _, ok := views[uid]; !ok {
			views[uid] = &PodView{UID: uid, Namespace: t.namespace, Name: t.name, RuntimeOnly: t.runtimeOnly}
		}
	}
	for uid := range a.rejected {
		if v, ok := views[uid]; ok {
			v.Lifecycle = "rejected"
		}
	}
	a.mu.Unlock()

	out := make([]PodView, 0, len(views))
	for uid, v := range views {
		if info, ok := a.workers.PodInfo(uid); ok {
			v.Lifecycle = info.Lifecycle.String()
			v.WorkerState = info.State.String()
			v.Static = info.Static
			v.RuntimeOnly = !info.HasConfig
			v.Orphan = !v.Desired
			v.GracePeriod = info.GracePeriod
			v.Failures = info.Failures
			if info.Lifecycle != podworker.LifecycleFinished {
				v.NextAttempt = info.NextAttempt
			}
			v.Since = latest(info.SyncedAt, info.StartedAt, info.TerminatingAt, info.TerminatedAt)
			if !v.Since.IsZero() {
				v.TimeInState = now.Sub(v.Since)
			}
		} else if !v.Desired {
			continue // forgotten by the workers, not yet pruned
		}
		if st, ok := a.status.Status(uid); ok {
			v.Phase, v.Reason = st.Phase, st.Reason
		}
		out = append(out, *v)
	}
	slices.SortFunc(out, func(x, y PodView) int {
		if c := strings.Compare(x.Namespace, y.Namespace); c != 0 {
			return c
		}
		if c := strings.Compare(x.Name, y.Name); c != 0 {
			return c
		}
		return strings.Compare(string(x.UID), string(y.UID))
	})
	return out
}

func latest(ts ...time.Time) time.Time {
	var l time.Time
	for _, t := range ts {
		if t.After(l) {
			l = t
		}
	}
	return l
}
