package server

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"
)

// The node's figures from a /proc of the test's making, timed by the
// given clock.
func TestProcNodeStats(t *testing.T) {
	root := t.TempDir()
	write := func(name, data string) {
		if err := os.WriteFile(filepath.Join(root, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// user nice system idle iowait irq softirq steal guest guest_nice
	write("stat", "cpu  100 20 30 5000 70 1 2 3 9 9\ncpu0 1 2 3 4 5 6 7 8 9 9\nbtime 1700000000\n")
	write("meminfo", "MemTotal:       1000 kB\nMemFree:         200 kB\nMemAvailable:    600 kB\n")
	now := time.Date(2026, 12, 4, 18, 0, 0, 0, time.UTC)
	ns, err := ProcNodeStats{Root: root, Clock: testingclock.NewFakeClock(now)}.NodeStats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := *ns.CPU.UsageCoreNanoSeconds, uint64(100+20+30+1+2+3)*(1e9/userHZ); got != want {
		t.Errorf("cpu %d ns, want %d", got, want)
	}
	if !ns.CPU.Time.Time.Equal(now) || !ns.Memory.Time.Time.Equal(now) {
		t.Errorf("times %v, %v; want the clock's %v", ns.CPU.Time, ns.Memory.Time, now)
	}
	if ns.StartTime.Unix() != 1700000000 {
		t.Errorf("start time %v", ns.StartTime)
	}
	if *ns.Memory.WorkingSetBytes != 400<<10 || *ns.Memory.UsageBytes != 800<<10 || *ns.Memory.AvailableBytes != 600<<10 {
		t.Errorf("memory ws %d usage %d available %d", *ns.Memory.WorkingSetBytes, *ns.Memory.UsageBytes, *ns.Memory.AvailableBytes)
	}
}
