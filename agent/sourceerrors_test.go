package agent_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"

	"github.com/podlife/podlife/agent"
	"github.com/podlife/podlife/podworker/podworkertest"
	"github.com/podlife/podlife/runtime/fakecri"
)

// A rejected manifest is logged once, in one line, however often the
// folder is re-read, and counted once by source and reason; a change of
// its content is logged and counted again.
func TestRejectedManifestLoggedOncePerChange(t *testing.T) {
	_, endpoint := startFakeCRI(t, fakecri.Options{})
	var mu sync.Mutex
	var lines []string
	log := funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, prefix+" "+args)
	}, funcr.Options{Verbosity: 0})
	rejections := func() int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, l := range lines {
			if strings.Contains(l, "bad.yaml") {
				n++
			}
		}
		return n
	}
	dir := t.TempDir()
	writeManifest(t, dir, "web.yaml", manifest("web", 1))
	writeManifest(t, dir, "bad.yaml", "apiVersion: v1\nkind: Pod\nmetadata: [not, a, map\n")
	ra := startAgentWith(t, endpoint, dir, func(o *agent.Options) {
		o.Logger = log
		o.ManifestResyncInterval = 50 * time.Millisecond
	})
	waitRunning(t, ra, ra.podUID(t, "web"))
	rejected := func(reason string) float64 {
		mfs, err := ra.reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() != "kubelet_pod_source_rejected_total" {
				continue
			}
			for _, m := range mf.GetMetric() {
				l := map[string]string{}
				for _, p := range m.GetLabel() {
					l[p.GetName()] = p.GetValue()
				}
				if l["source"] == "file" && l["reason"] == reason {
					return m.GetCounter().GetValue()
				}
			}
		}
		return 0
	}
	podworkertest.WaitFor(t, waitTimeout, "the bad manifest counted", func() bool { return rejected("decode") == 1 })
	// Many re-reads later, still one line and one count.
	before := ra.Housekeepings()
	ra.waitHousekeepings(t, 10) // 10 x 100 ms: about 20 re-reads at 50 ms
	if ra.Housekeepings() < before+10 {
		t.Fatal("housekeeping did not advance")
	}
	if n, c := rejections(), rejected("decode"); n != 1 || c != 1 {
		t.Fatalf("after many re-reads: %d log lines about bad.yaml, counted %v; want 1 and 1", n, c)
	}
	// A new bad content is a change.
	writeManifest(t, dir, "bad.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: bad}\nspec:\n  terminationGracePeriodSeconds: -5\n  containers: [{name: c, image: i}]\n")
	podworkertest.WaitFor(t, waitTimeout, "the new rejection counted", func() bool { return rejected("invalid") == 1 })
	if n := rejections(); n != 2 {
		t.Errorf("%d log lines about bad.yaml, want 2", n)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, l := range lines {
		if strings.Contains(l, "bad.yaml") && strings.Contains(l, "invalid") && !strings.Contains(l, "spec.terminationGracePeriodSeconds: must be greater than or equal to 0, got -5") {
			t.Errorf("the rejection does not name the field: %s", l)
		}
	}
}
