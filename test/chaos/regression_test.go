package chaos

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/podlife/podlife/podworker/podworkertest"
	"github.com/podlife/podlife/runtime/fakecri"
)

// TestDeadRemainsOfUnknownPodsAreRemoved: what is left, dead, of a pod that
// no pod worker knows (exited containers, a stopped sandbox) must not stay in
// the runtime. The soak found it after agent restarts: a pod the old agent had
// killed but not yet removed, or whose sandbox died while no agent ran, was
// never cleaned up, because housekeeping only looked at running pods for
// orphans (fixed in agent housekeeping, removeDeadRemains).
func TestDeadRemainsOfUnknownPodsAreRemoved(t *testing.T) {
	srv := fakecri.New(fakecri.Options{Images: []string{testImage}})
	sockDir, err := os.MkdirTemp("", "chaos")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(sockDir)
	endpoint, err := srv.StartUnix(filepath.Join(sockDir, "cri.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	checker, err := newCRI(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	defer checker.Close()
	inv := newInvariants(checker, newTrace(10))
	dir := t.TempDir()
	st := &staticSlot{idx: 1, present: true, version: 1, grace: 1}
	if err := writeManifest(dir, st); err != nil {
		t.Fatal(err)
	}

	// A first agent runs the pod.
	ar, err := startAgent(endpoint, dir, timingsFor(1), inv, nil, logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	if err := ar.push(nil); err != nil { // the API source is ready: no API pods
		t.Fatal(err)
	}
	podworkertest.WaitFor(t, 10*time.Second, "pod running", func() bool {
		pods, err := checker.GetPods(context.Background(), false)
		return err == nil && len(pods) == 1 && len(pods[0].Containers) == 1
	})
	// The agent stops; while none runs, the pod's sandbox dies and its
	// manifest is removed.
	if err := ar.stop(); err != nil {
		t.Fatal(err)
	}
	pods, err := checker.GetPods(context.Background(), false)
	if err != nil || len(pods) != 1 {
		t.Fatalf("runtime pods: %v, %v", pods, err)
	}
	if err := srv.StopSandbox(pods[0].Sandboxes[0].ID.ID); err != nil {
		t.Fatal(err)
	}
	if err := removeManifest(dir, st); err != nil {
		t.Fatal(err)
	}

	// A new agent must clean up what is left of it.
	ar, err = startAgent(endpoint, dir, timingsFor(1), inv, nil, logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	if err := ar.push(nil); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := ar.stop(); err != nil {
			t.Error(err)
		}
	}()
	if err := podworkertest.Poll(10*time.Second, func() bool {
		all, err := checker.GetPods(context.Background(), true)
		return err == nil && len(all) == 0
	}); err != nil {
		all, _ := checker.GetPods(context.Background(), true)
		for _, rp := range all {
			t.Errorf("%v: runtime still holds %s (%s): %s", err, rp.FullName(), rp.ID, describe(rp))
		}
	}
}
