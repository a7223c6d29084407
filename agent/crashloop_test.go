package agent_test

import (
	"strings"
	"testing"

	"github.com/podlife/podlife/podworker/podworkertest"
	"github.com/podlife/podlife/runtime/fakecri"
)

// A container that keeps failing waits in CrashLoopBackOff, with the
// kubelet's message, while the runtime defers its restart.
func TestCrashLoopBackOffReason(t *testing.T) {
	_, endpoint := startFakeCRI(t, fakecri.Options{})
	dir := t.TempDir()
	writeManifest(t, dir, "crash.yaml", manifest("crash", 1, "exit", "1"))
	ra := startAgent(t, endpoint, dir)
	uid := ra.podUID(t, "crash")
	podworkertest.WaitFor(t, waitTimeout, "CrashLoopBackOff", func() bool {
		st, ok := ra.StatusReporter().Status(uid)
		if !ok || len(st.ContainerStatuses) != 1 {
			return false
		}
		w := st.ContainerStatuses[0].State.Waiting
		return w != nil && w.Reason == "CrashLoopBackOff" && strings.HasPrefix(w.Message, "back-off ") &&
			strings.Contains(w.Message, "restarting failed container=main pod=crash-node1_default(")
	})
}
