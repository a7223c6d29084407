package agent_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/podlife/podlife/agent"
	"github.com/podlife/podlife/podworker/podworkertest"
	"github.com/podlife/podlife/runtime/cri"
	"github.com/podlife/podlife/runtime/fakecri"
)

// Container garbage collection under an agent on fakecri: a pod folder
// left by an earlier agent (no pod, nothing in the runtime) is swept as
// soon as the sources are ready, the folder of the running static pod
// stays, and a crash-looping container keeps at most one dead instance
// besides its newest, with its files.
func TestContainerGCUnderAgent(t *testing.T) {
	_, endpoint := startFakeCRI(t, fakecri.Options{})
	dir := t.TempDir()
	writeManifest(t, dir, "web", manifest("web", 1))
	writeManifest(t, dir, "crash", manifest("crash", 1, "exit", "1"))
	rt := newRuntimeWith(t, endpoint, func(o *cri.Options) { o.BackOffInitial, o.BackOffMax = 50*time.Millisecond, 50*time.Millisecond })
	orphan := filepath.Join(rt.VolumeRoot(), "0b7c1c4e-leftover")
	if err := os.MkdirAll(filepath.Join(orphan, "logs", "c"), 0o755); err != nil {
		t.Fatal(err)
	}
	ra := startAgentOn(t, rt, dir, func(o *agent.Options) {
		o.ContainerGCPeriod = time.Hour // the sweep at start only
	})
	m := ra.ContainerGC()
	if m == nil {
		t.Fatal("no container GC on a CRI runtime")
	}
	podworkertest.WaitFor(t, waitTimeout, "the leftover folder swept", func() bool {
		_, err := os.Stat(orphan)
		return os.IsNotExist(err)
	})
	web := ra.podUID(t, "web")
	if _, err := os.Stat(filepath.Join(rt.VolumeRoot(), string(web))); err != nil {
		t.Fatalf("the running pod's folder: %v", err)
	}
	// A pass by hand keeps the crash-looping container's newest dead
	// instance.
	crash := ra.podUID(t, "crash")
	podworkertest.WaitFor(t, waitTimeout, "the crash-looping container to restart", func() bool {
		pods, err := rt.GetPods(t.Context(), true)
		if err != nil {
			return false
		}
		for _, p := range pods {
			for _, c := range p.Containers {
				if p.ID == crash && c.Attempt >= 2 {
					return true
				}
			}
		}
		return false
	})
	if _, err := m.GarbageCollect(t.Context()); err != nil {
		t.Fatal(err)
	}
	logs, err := os.ReadDir(filepath.Join(rt.VolumeRoot(), string(crash), "logs", "main"))
	if err != nil || len(logs) == 0 || len(logs) > 2 {
		t.Fatalf("log files of the crash-looping container: %d, %v; want 1 or 2", len(logs), err)
	}
}

func TestContainerGCOff(t *testing.T) {
	_, endpoint := startFakeCRI(t, fakecri.Options{})
	ra := startAgentOn(t, newRuntime(t, endpoint), t.TempDir(), func(o *agent.Options) { o.ContainerGCPeriod = -1 })
	if ra.ContainerGC() != nil {
		t.Fatal("container GC with a negative period")
	}
}
