package agent_test

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/agent"
)

func TestMergeStatus(t *testing.T) {
	running := &v1.PodStatus{Phase: v1.PodRunning, Reason: "r"}
	for _, tc := range []struct {
		name   string
		old    *v1.PodStatus
		phase  v1.PodPhase
		could  bool
		want   v1.PodPhase
		reason string
	}{
		{"running published", running, v1.PodRunning, true, v1.PodRunning, ""},
		{"terminal held back", running, v1.PodFailed, true, v1.PodRunning, "r"},
		{"terminal held back, nothing before", nil, v1.PodSucceeded, true, v1.PodPending, ""},
		{"terminal once stopped", running, v1.PodSucceeded, false, v1.PodSucceeded, ""},
		{"terminal never replaces terminal while running", &v1.PodStatus{Phase: v1.PodFailed}, v1.PodSucceeded, true, v1.PodPending, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := agent.MergeStatus(tc.old, v1.PodStatus{Phase: tc.phase}, tc.could)
			if got.Phase != tc.want || got.Reason != tc.reason {
				t.Errorf("MergeStatus: phase %s reason %q, want %s %q", got.Phase, got.Reason, tc.want, tc.reason)
			}
		})
	}
}

type couldRun map[types.UID]bool

func (c couldRun) CouldHaveRunningContainers(uid types.UID) bool { return c[uid] }

func TestMemoryStatusReporterKeepsTheRule(t *testing.T) {
	could := couldRun{"a": true}
	r := agent.NewMemoryStatusReporter(could)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "a", Name: "a", Namespace: "default"}}
	ctx := context.Background()
	_ = r.SetPodStatus(ctx, pod, nil, v1.PodStatus{Phase: v1.PodRunning})
	_ = r.SetPodStatus(ctx, pod, nil, v1.PodStatus{Phase: v1.PodSucceeded})
	if st, _ := r.Status("a"); st.Phase != v1.PodRunning {
		t.Fatalf("phase while containers could run: %s, want Running", st.Phase)
	}
	could["a"] = false
	_ = r.PodFinished(ctx, pod, nil, v1.PodStatus{Phase: v1.PodSucceeded})
	if st, _ := r.Status("a"); st.Phase != v1.PodSucceeded || !r.Finished("a") {
		t.Fatalf("final phase %s finished %v, want Succeeded true", st.Phase, r.Finished("a"))
	}
}
