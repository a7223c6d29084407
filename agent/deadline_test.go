package agent_test

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/podworker/podworkertest"
	"github.com/podlife/podlife/runtime/fakecri"
)

// A pod past its activeDeadlineSeconds fails with reason DeadlineExceeded,
// is stopped, and its final status keeps phase, reason and message; it did
// not fail before the deadline.
func TestActiveDeadlineExceeded(t *testing.T) {
	_, endpoint := startFakeCRI(t, fakecri.Options{Images: []string{testImage}})
	dir := t.TempDir()
	writeManifest(t, dir, "job.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: job
spec:
  activeDeadlineSeconds: 2
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: `+testImage+`
`)
	ra := startAgent(t, endpoint, dir)
	uid := ra.podUID(t, "job")
	waitRunning(t, ra, uid)
	var st v1.PodStatus
	podworkertest.WaitFor(t, waitTimeout, "job finished", func() bool {
		var ok bool
		st, ok = ra.StatusReporter().Status(uid)
		return ok && ra.StatusReporter().Finished(uid)
	})
	if st.Phase != v1.PodFailed || st.Reason != "DeadlineExceeded" || st.Message != "Pod was active on the node longer than the specified deadline" {
		t.Fatalf("final status phase %q reason %q message %q, want Failed for DeadlineExceeded", st.Phase, st.Reason, st.Message)
	}
	if st.StartTime == nil {
		t.Fatal("no startTime")
	}
	var stopped time.Time
	for _, cs := range st.ContainerStatuses {
		if cs.State.Terminated == nil {
			t.Fatalf("container %s not terminated: %+v", cs.Name, cs.State)
		}
		stopped = cs.State.Terminated.FinishedAt.Time
	}
	// Times in a status are to the second: allow for the truncation.
	if d := stopped.Sub(st.StartTime.Time); d < time.Second {
		t.Fatalf("stopped %v after its start, before its 2 s deadline", d)
	}
	if ids := runningContainerIDs(runtimePods(t, ra.rt, false)[uid]); len(ids) != 0 {
		t.Fatalf("containers %v still run", ids)
	}
}
