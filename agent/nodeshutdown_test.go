package agent_test

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/agent"
	"github.com/podlife/podlife/runtime/fakecri"
)

// A pod stopped by a node shutdown keeps its Terminated reason in its
// final status (the one published once it finished), not only in the
// status published when it stopped, and no new static pod starts.
func TestNodeShutdownFinalStatus(t *testing.T) {
	_, endpoint := startFakeCRI(t, fakecri.Options{Images: []string{testImage}})
	dir := t.TempDir()
	writeManifest(t, dir, "web.yaml", manifest("web", 1))
	ra := startAgentWith(t, endpoint, dir, func(o *agent.Options) {
		o.ShutdownGracePeriod = 10 * time.Second
		o.ShutdownGracePeriodCriticalPods = 5 * time.Second
	})
	web := ra.podUID(t, "web")
	waitRunning(t, ra, web)
	if got := ra.NodeShutdown().Budget(); got != 10*time.Second {
		t.Errorf("budget %s, want 10s", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	res, err := ra.ShutdownNode(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Pods != 1 || res.Stopped != 1 {
		t.Errorf("result %+v", res)
	}
	if !ra.StatusReporter().Finished(web) {
		t.Fatal("ShutdownNode returned before the pod's final status was published")
	}
	st, _ := ra.StatusReporter().Status(web)
	if st.Phase != v1.PodFailed || st.Reason != "Terminated" || st.Message != "Pod was terminated in response to imminent node shutdown." {
		t.Errorf("final status: phase %s reason %q message %q, want Failed, Terminated", st.Phase, st.Reason, st.Message)
	}
	found := false
	for _, c := range st.Conditions {
		found = found || (c.Type == v1.DisruptionTarget && c.Status == v1.ConditionTrue && c.Reason == "TerminationByKubelet")
	}
	if !found {
		t.Errorf("final status has no DisruptionTarget condition: %+v", st.Conditions)
	}

	// The stopped pod is not started again.
	ra.waitHousekeepings(t, 2)
	if ids := runningContainerIDs(runtimePods(t, ra.rt, false)[web]); len(ids) > 0 {
		t.Errorf("web runs again after the shutdown: %v", ids)
	}

	// A static pod added now is rejected.
	writeManifest(t, dir, "late.yaml", manifest("late", 1))
	late := ra.podUID(t, "late")
	ra.waitHousekeepings(t, 2)
	st, ok := ra.StatusReporter().Status(late)
	if !ok || st.Phase != v1.PodFailed || st.Reason != "NodeShutdown" {
		t.Errorf("late pod: %v %s %q, want Failed, NodeShutdown", ok, st.Phase, st.Reason)
	}
}

// A critical pods' part without the grace period is an error, not ignored.
func TestNodeShutdownOptions(t *testing.T) {
	_, endpoint := startFakeCRI(t, fakecri.Options{})
	_, err := agent.New(agent.Options{Runtime: newRuntime(t, endpoint), NodeName: "n", ShutdownGracePeriodCriticalPods: time.Second})
	if err == nil || !strings.Contains(err.Error(), "a grace period is required") {
		t.Errorf("New: %v, want the shutdown's options refused", err)
	}
}
