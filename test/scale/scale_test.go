package scale

import (
	"flag"
	"fmt"
	"maps"
	"os"
	goruntime "runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podlife/podlife/agent"
	"github.com/podlife/podlife/metrics"
)

var (
	flagPods          = flag.Int("scale.pods", 2000, "API pods (one container each) the agent holds at once")
	flagPasses        = flag.Int("scale.passes", 5, "housekeeping passes timed once every pod runs (the median is reported)")
	flagLog           = flag.Bool("scale.log", false, "log the agent (V(2)) to the test log")
	flagEvict         = flag.Bool("scale.eviction", true, "run the eviction manager (pressure-free node stats, the runtime's pod stats) beside housekeeping")
	flagHeap          = flag.String("scale.heapprofile", "", "write a heap profile to this file once every pod runs, and the goroutines to its name with .goroutines.txt appended")
	flagRelistWorkers = flag.Int("scale.relistworkers", 0, "agent.Options.RelistWorkers: changed pods a relist inspects at once (0: the agent's default)")
	flagDirect        = flag.Bool("scale.direct", false, "call fakecri through its direct connection (fakecri.Server.Conn, no transport) instead of gRPC over a unix socket")
	flagCPU           = flag.String("scale.cpuprofile", "", "write CPU profiles to this file's name with .steady (the housekeeping and GC passes) and .drain (the drain) appended")
)

// settingsFor returns the agent's timings for n pods: the defaults (2s
// housekeeping, 1s relist) from 10,000 pods on, shorter ones below so that
// the small run stays short under -race.
func settingsFor(n int) settings {
	s := settings{pods: n, housekeeping: agent.DefaultHousekeepingInterval, relist: agent.DefaultRelistInterval, log: *flagLog, eviction: *flagEvict, relistWorkers: *flagRelistWorkers, direct: *flagDirect}
	if n < 10000 {
		s.housekeeping, s.relist = 250*time.Millisecond, 250*time.Millisecond
	}
	return s
}

// timeouts scale with the number of pods (and are generous: the machine is
// shared and the race detector slows everything down).
func timeoutFor(n int) time.Duration { return 2*time.Minute + time.Duration(n)*20*time.Millisecond }

// TestScale creates -scale.pods API pods, waits until every one runs,
// measures the heap, the housekeeping pass and the drain, and checks that
// every pod ran, that housekeeping saw exactly the desired pods and nothing
// else, and that deleting every pod leaves no worker and no runtime object.
func TestScale(t *testing.T) {
	n := *flagPods
	if n <= 0 {
		t.Fatalf("-scale.pods must be positive, got %d", n)
	}
	s := settingsFor(n)
	pods := apiPods(n)
	w := startWorld(t, s)

	// The baseline: the agent runs, empty; the pod objects exist already,
	// so that the heap growth is what the agent and the runtime keep.
	if err := w.push(nil); err != nil { // the API source's first snapshot
		t.Fatal(err)
	}
	if err := waitFor(time.Minute, 10*time.Millisecond, func() (bool, string) {
		return w.a.SourcesReady() && w.a.Housekeepings() > 0, "no housekeeping pass yet"
	}); err != nil {
		t.Fatal(err)
	}
	heap0, g0 := liveHeap()
	calls := callCounts(w)

	// Create.
	start, cpu := time.Now(), cpuSeconds()
	if err := w.push(pods); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(timeoutFor(n), pollFor(n), w.progress(t, "create", func() (bool, string) { return w.allRunning(pods) })); err != nil {
		t.Fatalf("pods did not all run: %v", err)
	}
	created := time.Since(start)
	calls = logCalls(t, w, "creation", calls, n)
	heap1, g1 := liveHeap()
	t.Logf("created %d pods in %s (%.0f pods/s), %.1f CPU-seconds", n, created.Round(time.Millisecond), float64(n)/created.Seconds(), cpuSeconds()-cpu)
	t.Logf("live heap: %.1f MiB for %d running pods = %.0f B/pod (the agent, its CRI client and fakecri, pod objects excluded); goroutines %d -> %d",
		float64(heap1-heap0)/(1<<20), n, float64(heap1-heap0)/float64(n), g0, g1)
	if *flagHeap != "" {
		writeHeapProfile(t, *flagHeap)
	}
	if _, _, terminal := w.rep.counts(); terminal != 0 {
		t.Errorf("%d terminal phases reported for pods that were never deleted", terminal)
	}

	// Housekeeping passes with every pod running, timed (at 10,000 pods
	// and more) once a log rotation pass that began after every pod ran
	// has ended: a pass asks the runtime for the log path of each
	// container it had not seen, a one-time burst of up to n
	// ContainerStatus calls, which would run beside the timed passes.
	if lr := w.a.LogRotation(); lr != nil && n >= 10000 {
		settle, p0 := time.Now(), lr.Passes()
		if err := waitFor(timeoutFor(n), 100*time.Millisecond, func() (bool, string) {
			return lr.Passes() > p0+1, "no log rotation pass ended"
		}); err != nil {
			t.Fatal(err)
		}
		t.Logf("a whole log rotation pass ended %s after every pod ran", time.Since(settle).Round(time.Millisecond))
	}
	stopProfile := startCPUProfile(t, ".steady")
	passes := housekeepingPasses(t, w, *flagPasses, timeoutFor(n))
	durations := make([]time.Duration, len(passes))
	for i, hk := range passes {
		durations[i] = hk.Duration
		checkSteadyPass(t, hk, n)
	}
	t.Logf("housekeeping passes at %d pods: %v; median %s", n, durations, median(durations).Round(time.Microsecond))

	// Container GC passes (agent/gc, which the agent also runs every
	// minute): a fresh relist, the pod workers asked about every pod, the
	// runtime's VolumeRoot read; nothing to remove.
	gcs := make([]time.Duration, *flagPasses)
	for i := range gcs {
		res, err := w.a.ContainerGC().GarbageCollect(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if !res.SourcesReady || res.Containers+res.Sandboxes+res.PodFolders+res.Failed != 0 {
			t.Errorf("container GC pass with %d running pods: %+v", n, res)
		}
		gcs[i] = res.Duration
	}
	t.Logf("container GC passes at %d pods: %v; median %s", n, gcs, median(gcs).Round(time.Microsecond))

	// Eviction manager passes (Run makes one every 10 s; these are extra):
	// every pod's stats, no threshold met, nothing evicted.
	if m := w.a.Eviction(); m != nil {
		if m.Passes() == 0 {
			t.Errorf("the eviction manager made no pass while %d pods ran", n)
		}
		evs := make([]time.Duration, *flagPasses)
		for i := range evs {
			start := time.Now()
			evicted, err := m.Synchronize(t.Context())
			evs[i] = time.Since(start)
			if err != nil || len(evicted) != 0 || len(m.Conditions()) != 0 {
				t.Errorf("eviction pass with %d running pods and room to spare: evicted %d, conditions %v, error %v", n, len(evicted), m.Conditions(), err)
			}
		}
		t.Logf("eviction passes at %d pods: %v; median %s", n, evs, median(evs).Round(time.Microsecond))
	}
	stopProfile()

	// Drain: every pod deleted with grace 0, then removed from the "API
	// server" once finished.
	calls = logCalls(t, w, "wait and the steady passes", calls, n)
	stopProfile = startCPUProfile(t, ".drain")
	start, cpu = time.Now(), cpuSeconds()
	if err := w.push(deleted(pods, 0)); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(timeoutFor(n), pollFor(n), w.progress(t, "drain", func() (bool, string) {
		_, finished, _ := w.rep.counts()
		return finished == n, "not every pod finished"
	})); err != nil {
		_, finished, _ := w.rep.counts()
		t.Fatalf("%v: %d of %d finished", err, finished, n)
	}
	finished := time.Since(start)
	if err := w.push(nil); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(timeoutFor(n), pollFor(n), w.drained); err != nil {
		t.Fatalf("drain: %v", err)
	}
	drained := time.Since(start)
	logCalls(t, w, "drain", calls, n)
	stopProfile()
	t.Logf("drained %d pods: all finished in %s, workers and runtime empty in %s (%.0f pods/s), %.1f CPU-seconds",
		n, finished.Round(time.Millisecond), drained.Round(time.Millisecond), float64(n)/drained.Seconds(), cpuSeconds()-cpu)

	// A pass after the drain sees nothing.
	after := housekeepingPasses(t, w, 1, time.Minute)[0]
	if after.DesiredRegular != 0 || after.ActiveRegular != 0 || after.OrphanedRuntimePods != 0 || total(after.WorkingPods) != 0 {
		t.Errorf("housekeeping after the drain: %+v", after)
	}
	heap2, g2 := liveHeap()
	t.Logf("live heap after the drain: %+.1f MiB from the baseline; goroutines %d", float64(heap2-heap0)/(1<<20), g2)
	goruntime.KeepAlive(pods)
}

// housekeepingPasses waits for k passes that start after the call and
// returns what each did.
func housekeepingPasses(t *testing.T, w *world, k int, within time.Duration) []agent.HousekeepingResult {
	t.Helper()
	since := time.Now()
	var out []agent.HousekeepingResult
	last := w.a.Housekeepings()
	err := waitFor(within, 5*time.Millisecond, func() (bool, string) {
		if c := w.a.Housekeepings(); c != last {
			last = c
			if hk, ok := w.a.LastHousekeeping(); ok && !hk.Start.Before(since) {
				out = append(out, hk)
			}
		}
		return len(out) >= k, "too few housekeeping passes"
	})
	if err != nil {
		t.Fatalf("%v: %d of %d", err, len(out), k)
	}
	return out
}

// checkSteadyPass checks a pass made while n API pods run and nothing else
// happens.
func checkSteadyPass(t *testing.T, hk agent.HousekeepingResult, n int) {
	t.Helper()
	sync := hk.WorkingPods[metrics.WorkingPodKeyFor(metrics.LifecycleSync, false, true, false)]
	if hk.DesiredRegular != n || hk.ActiveRegular != n || hk.DesiredStatic != 0 || sync != n || total(hk.WorkingPods) != n ||
		hk.OrphanedRuntimePods != 0 || hk.RestartedRegular != 0 || hk.TerminalPodsToDelete != 0 || hk.DeadPodsRemoved != 0 {
		t.Errorf("housekeeping pass with %d running pods: %+v", n, hk)
	}
	if hk.Duration <= 0 {
		t.Errorf("housekeeping pass took %s", hk.Duration)
	}
}

// callCounts returns how many times fakecri served each CRI method so far.
func callCounts(w *world) map[string]int {
	counts := map[string]int{}
	for _, desc := range []grpc.ServiceDesc{runtimeapi.RuntimeService_ServiceDesc, runtimeapi.ImageService_ServiceDesc} {
		for _, m := range desc.Methods {
			if c := w.srv.CallCount(m.MethodName); c > 0 {
				counts[m.MethodName] = c
			}
		}
	}
	return counts
}

// logCalls logs the CRI calls fakecri served since before (its counts
// then), per pod and by method, and returns its counts now.
func logCalls(t *testing.T, w *world, phase string, before map[string]int, n int) map[string]int {
	t.Helper()
	now := callCounts(w)
	var b strings.Builder
	all := 0
	for _, m := range slices.Sorted(maps.Keys(now)) {
		if d := now[m] - before[m]; d > 0 {
			all += d
			fmt.Fprintf(&b, ", %s %.2f", m, float64(d)/float64(n))
		}
	}
	t.Logf("CRI calls per pod during the %s: %.2f%s", phase, float64(all)/float64(n), b.String())
	return now
}

func total(c metrics.WorkingPodCounts) int {
	n := 0
	for _, v := range c {
		n += v
	}
	return n
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// pollFor is the polling interval of the waits: a full check of n pods
// costs about n/10 µs.
// progress wraps a condition waited for in phase: every 10 s of waiting
// it logs how far the pods got (reported running and finished, known to
// the workers, the runtime's sandboxes and containers) and the process's
// CPU seconds, so that a slow phase shows whether it runs at a steady
// rate or waits.
func (w *world) progress(t *testing.T, phase string, cond func() (bool, string)) func() (bool, string) {
	start := time.Now()
	next := start.Add(10 * time.Second)
	cpu0 := cpuSeconds()
	return func() (bool, string) {
		if now := time.Now(); now.After(next) {
			next = now.Add(10 * time.Second)
			running, finished, _ := w.rep.counts()
			sb, c := w.srv.Counts()
			t.Logf("%s +%s: running %d, finished %d, workers %d, sandboxes %d, containers %d, CPU %.1f s",
				phase, now.Sub(start).Round(time.Second), running, finished, w.a.Workers().Len(), sb, c, cpuSeconds()-cpu0)
		}
		return cond()
	}
}

// cpuSeconds is the user and system CPU time of the process so far.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

func pollFor(n int) time.Duration {
	return max(20*time.Millisecond, time.Duration(n)*5*time.Microsecond)
}

func writeHeapProfile(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := pprof.WriteHeapProfile(f); err != nil {
		t.Fatal(err)
	}
	// And what every goroutine is doing then (the in-flight work holds
	// part of the heap).
	g, err := os.Create(path + ".goroutines.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if err := pprof.Lookup("goroutine").WriteTo(g, 1); err != nil {
		t.Fatal(err)
	}
}

// startCPUProfile starts a CPU profile into -scale.cpuprofile with suffix
// appended, if the flag is set, and returns what stops it (also called at
// cleanup; stopping twice is harmless).
func startCPUProfile(t *testing.T, suffix string) (stop func()) {
	t.Helper()
	if *flagCPU == "" {
		return func() {}
	}
	f, err := os.Create(*flagCPU + suffix)
	if err != nil {
		t.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		t.Fatal(err)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			pprof.StopCPUProfile()
			if err := f.Close(); err != nil {
				t.Error(err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// liveHeap returns the live heap after a GC, and the number of goroutines.
func liveHeap() (heap int64, goroutines int) {
	var ms goruntime.MemStats
	goruntime.GC()
	goruntime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc), goruntime.NumGoroutine()
}
