package agent_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/agent"
	"github.com/podlife/podlife/podworker/podworkertest"
	"github.com/podlife/podlife/runtime/fakecri"
)

// TestStartedStatusPublishedWithoutARelist: the status published right after
// SyncPod started the containers says Running, without waiting for the
// relister (which here lists once, at start, and never again).
func TestStartedStatusPublishedWithoutARelist(t *testing.T) {
	ra, _, uid := startWeb(t, func(o *agent.Options) {
		o.RelistInterval = time.Hour
		o.RelistKickInterval = -1
		o.ResyncInterval = time.Hour
	})
	podworkertest.WaitFor(t, waitTimeout, "pod Running in the published status", func() bool {
		st, ok := ra.StatusReporter().Status(uid)
		return ok && st.Phase == v1.PodRunning && len(st.ContainerStatuses) == 1 &&
			st.ContainerStatuses[0].State.Running != nil
	})
}

// TestWaitingWorkerKicksARelist: with a relist period of an hour, a pod
// removed from its source still goes through terminating, terminated and
// finished, because each pod worker waiting for a status newer than its
// last sync asks the relister for one.
func TestWaitingWorkerKicksARelist(t *testing.T) {
	ra, dir, uid := startWeb(t, func(o *agent.Options) {
		o.RelistInterval = time.Hour
		o.ResyncInterval = time.Hour
	})
	waitRunning(t, ra, uid)
	if err := os.Remove(filepath.Join(dir, "web.yaml")); err != nil {
		t.Fatal(err)
	}
	waitGone(t, ra, uid)
}

// TestTerminatedSyncNeedsNoRelist: the terminated sync runs on the status
// that the terminating sync read after its kill, without waiting for a
// relist that began after the kill: here every listing fails once the pod
// is killed, and the pod still reaches its terminated sync, which removes
// its sandbox and containers. Before, the terminated sync waited for such a
// relist (here for StatusWaitTimeout, an hour).
func TestTerminatedSyncNeedsNoRelist(t *testing.T) {
	ra, dir, uid := startWeb(t, func(o *agent.Options) {
		o.StatusWaitTimeout = time.Hour
	})
	waitRunning(t, ra, uid)
	ra.rt.blindAfterKill.Store(true)
	removeManifest(t, dir, "web.yaml")
	podworkertest.WaitFor(t, waitTimeout, "pod removed from the runtime by its terminated sync", func() bool {
		if !ra.rt.blind.Load() {
			return false // not killed yet
		}
		pods, err := ra.rt.Runtime.GetPods(context.Background(), true)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pods {
			if p.ID == uid {
				return false
			}
		}
		return true
	})
}

// startWeb starts an agent on a fakecri of its own, with one static pod,
// web (grace 30 s), in its manifest folder, and options changed by edit;
// it returns the agent, the folder and web's UID.
func startWeb(t *testing.T, edit func(*agent.Options)) (*runningAgent, string, types.UID) {
	t.Helper()
	_, endpoint := startFakeCRI(t, fakecri.Options{})
	dir := t.TempDir()
	writeManifest(t, dir, "web.yaml", manifest("web", 30))
	ra := startAgentWith(t, endpoint, dir, edit)
	return ra, dir, ra.podUID(t, "web")
}
