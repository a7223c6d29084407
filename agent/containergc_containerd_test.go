package agent_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/podlife/podlife/agent"
	"github.com/podlife/podlife/runtime"
	"github.com/podlife/podlife/runtime/cri"
)

// TestContainerGCRestartsContainerd: a container that exits at once under
// restartPolicy Always, restarted 200 times on a real containerd (the
// crash-loop back-off cut to 10 ms) under an agent whose container GC
// passes every second. Sampled all along: the runtime never holds more
// than one dead instance of it besides its newest, and the pod's folder
// never more than two log files and two termination-message files of it
// (before, every restart left its log file behind).
func TestContainerGCRestartsContainerd(t *testing.T) {
	endpoint := os.Getenv(endpointEnv)
	if endpoint == "" {
		t.Skip(endpointEnv + " is not set: skipping the container GC test against a real CRI runtime")
	}
	const restarts = 200
	dir := t.TempDir()
	writeManifest(t, dir, "crash.yaml", manifest("crash", 1, "exit", "1"))
	rt := newRuntimeWith(t, endpoint, func(o *cri.Options) {
		o.BackOffInitial, o.BackOffMax = 10*time.Millisecond, 10*time.Millisecond
	})
	ra := startAgentOn(t, rt, dir, func(o *agent.Options) {
		o.ContainerGCPeriod = time.Second
		o.RelistInterval = 20 * time.Millisecond
	})
	uid := ra.podUID(t, "crash")
	podDir := filepath.Join(rt.VolumeRoot(), string(uid))
	count := func(sub string) int {
		entries, err := os.ReadDir(filepath.Join(podDir, sub, "main"))
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		return len(entries)
	}
	deadline := time.Now().Add(10 * time.Minute)
	maxInstances, maxLogs, maxMessages, samples := 0, 0, 0, 0
	var attempt uint32
	for attempt < restarts {
		if time.Now().After(deadline) {
			t.Fatalf("only %d restarts within 10 minutes", attempt)
		}
		pods, err := rt.GetPods(t.Context(), true)
		if err != nil {
			t.Fatal(err)
		}
		var mine []*runtime.Container
		for _, p := range pods {
			if p.ID == uid {
				mine = p.Containers
			}
		}
		for _, c := range mine {
			attempt = max(attempt, c.Attempt)
		}
		maxInstances = max(maxInstances, len(mine))
		maxLogs = max(maxLogs, count("logs"))
		maxMessages = max(maxMessages, count("containers"))
		samples++
		if maxInstances > 2 || maxLogs > 2 || maxMessages > 2 {
			t.Fatalf("at restart %d: %d instances of the container (want the newest and at most one dead), %d log files, %d termination-message files (want at most 2 each)",
				attempt, maxInstances, maxLogs, maxMessages)
		}
		time.Sleep(5 * time.Millisecond) // sampling, not waiting for a state
	}
	files := 0
	_ = filepath.WalkDir(podDir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files++
		}
		return nil
	})
	t.Logf("%d restarts, %d samples: at most %d instances, %d log files, %d termination-message files; %d files in the pod's folder; %d GC passes",
		attempt, samples, maxInstances, maxLogs, maxMessages, files, ra.ContainerGC().Passes())
	if files > 6 {
		t.Errorf("%d files in the pod's folder after %d restarts, want a bounded few", files, attempt)
	}
}
