package logrotate_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podlife/podlife/agent/logrotate"
	"github.com/podlife/podlife/podworker/podworkertest"
)

var start = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// setup returns a fake runtime, a fake clock at start and a Manager over
// them with opts (Runtime, Clock and Logger filled in).
func setup(t *testing.T, opts logrotate.Options) (*fakeRuntime, *clocktesting.FakeClock, *logRecorder, *logrotate.Manager) {
	t.Helper()
	fr := newFakeRuntime()
	clk := clocktesting.NewFakeClock(start)
	rec := &logRecorder{}
	opts.Runtime, opts.Clock, opts.Logger = fr, clk, rec.logger()
	m, err := logrotate.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return fr, clk, rec, m
}

// rotate runs one pass and checks its result.
func rotate(t *testing.T, m *logrotate.Manager, want logrotate.Result) {
	t.Helper()
	got, err := m.Rotate(context.Background())
	if err != nil {
		t.Fatalf("Rotate: %v", err)
	}
	if got != want {
		t.Fatalf("Rotate: %+v, want %+v", got, want)
	}
}

func size(t *testing.T, path string) int64 {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return info.Size()
}

// A log below MaxSize stays; one that reached it is renamed with the
// time of the rotation and the runtime reopens a new, empty file.
func TestRotateAtMaxSize(t *testing.T) {
	fr, _, _, m := setup(t, logrotate.Options{MaxSize: 1000, MaxFiles: 3})
	dir := t.TempDir()
	path := fr.run(t, dir, "chatty", "main")
	appendLog(t, path, 0, 9) // 900 bytes
	rotate(t, m, logrotate.Result{Containers: 1})
	if got := files(t, filepath.Dir(path)); !cmp.Equal(got, []string{"0.log"}) {
		t.Fatalf("files below MaxSize: %v", got)
	}
	appendLog(t, path, 9, 1) // 1000 bytes
	rotate(t, m, logrotate.Result{Containers: 1, Rotated: 1})
	if got, want := files(t, filepath.Dir(path)), []string{"0.log", "0.log.20260102-030405"}; !cmp.Equal(got, want) {
		t.Fatalf("files after the rotation: %v, want %v", got, want)
	}
	if got := size(t, path); got != 0 {
		t.Errorf("the reopened log has %d bytes, want 0", got)
	}
	if got := size(t, path+".20260102-030405"); got != 1000 {
		t.Errorf("the rotated log has %d bytes, want 1000", got)
	}
	if _, reopens := fr.counts("chatty-main"); reopens != 1 {
		t.Errorf("%d reopens, want 1", reopens)
	}
}

// A chatty container: its log reaches MaxSize between every two passes.
// At most MaxFiles files are ever on disk, all rotated ones but the newest
// compressed, and what they hold together is the newest part of the log,
// in order, without a gap; the log reader (k8s.io/cri-client, as kubectl
// logs) returns the newest lines.
func TestChattyContainerKeepsAtMostMaxFiles(t *testing.T) {
	const maxFiles = 4
	fr, clk, rec, m := setup(t, logrotate.Options{MaxSize: 1000, MaxFiles: maxFiles})
	dir := t.TempDir()
	path := fr.run(t, dir, "chatty", "main")
	next := 0
	for pass := range 12 {
		appendLog(t, path, next, 12) // 1200 bytes
		next += 12
		clk.Step(logrotate.DefaultInterval)
		rotate(t, m, logrotate.Result{Containers: 1, Rotated: 1})

		names := files(t, filepath.Dir(path))
		if len(names) > maxFiles {
			t.Fatalf("pass %d: %d files, want at most %d: %v", pass, len(names), maxFiles, names)
		}
		var plain []string
		for _, n := range names[1:] { // names[0] is 0.log
			if !strings.HasSuffix(n, ".gz") {
				plain = append(plain, n)
			}
		}
		if len(plain) != 1 || plain[0] != names[len(names)-1] {
			t.Fatalf("pass %d: uncompressed rotated files %v, want only the newest of %v", pass, plain, names)
		}
	}
	// Lines written after the last rotation go to the reopened file.
	appendLog(t, path, next, 5)
	next += 5

	// Everything kept, oldest first, is a run of lines ending at the last
	// one written.
	names := files(t, filepath.Dir(path))
	var all []string
	for _, n := range append(names[1:], names[0]) {
		all = append(all, readLines(t, filepath.Join(filepath.Dir(path), n))...)
	}
	if len(all) < (maxFiles-1)*12 {
		t.Fatalf("kept %d lines, want at least %d", len(all), (maxFiles-1)*12)
	}
	first := next - len(all)
	for i, l := range all {
		if want := fmt.Sprintf("line %06d ", first+i); !strings.Contains(l, want) {
			t.Fatalf("kept line %d is %q, want %q: the kept log has a gap or is out of order", i, l, want)
		}
	}

	got := readLog(t, path, 3)
	if want := fmt.Sprintf("line %06d", next-3); !strings.HasPrefix(got, want) || strings.Count(got, "\n") != 3 {
		t.Errorf("the reader's last 3 lines:\n%s\nwant 3 lines from %q", got, want)
	}
	if errs := rec.errors(); len(errs) != 0 {
		t.Errorf("errors logged: %v", errs)
	}
}

// readLines returns the lines of a log file, gunzipped if it ends in .gz.
func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if b, err = io.ReadAll(zr); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines
}

// A runtime that refuses to reopen the log: the log is renamed back, so
// readers still find it; the rotation is retried once per pass (never in
// a loop) and the failure logged once, not at every pass; once the
// runtime accepts, the log rotates and the recovery is logged.
func TestReopenRefused(t *testing.T) {
	reg := prometheus.NewRegistry()
	fr, clk, rec, m := setup(t, logrotate.Options{MaxSize: 1000, Registerer: reg})
	dir := t.TempDir()
	path := fr.run(t, dir, "chatty", "main")
	appendLog(t, path, 0, 20)
	fr.setReopenErr(errRefused)
	for range 5 {
		clk.Step(logrotate.DefaultInterval)
		rotate(t, m, logrotate.Result{Containers: 1, Failed: 1})
		if got := files(t, filepath.Dir(path)); !cmp.Equal(got, []string{"0.log"}) {
			t.Fatalf("files after a refused reopen: %v, want the log back in place", got)
		}
		if got := size(t, path); got != 2000 {
			t.Fatalf("the log has %d bytes, want its 2000", got)
		}
	}
	if _, reopens := fr.counts("chatty-main"); reopens != 5 {
		t.Errorf("%d reopens in 5 passes, want 5 (one retry a pass)", reopens)
	}
	if n := rec.count(-1, "container log rotation failed"); n != 1 {
		t.Errorf("the failure was logged %d times as an error, want once", n)
	}
	if n := rec.count(4, "container log rotation still failing"); n != 4 {
		t.Errorf("%d V(4) lines for the next failures, want 4", n)
	}

	fr.setReopenErr(nil)
	clk.Step(logrotate.DefaultInterval)
	rotate(t, m, logrotate.Result{Containers: 1, Rotated: 1})
	if n := rec.count(2, "container log rotation works again"); n != 1 {
		t.Errorf("the recovery was logged %d times, want once", n)
	}
	expected := `
# HELP kubelet_container_log_rotation_failures_total Number of container log checks or rotations that failed (each is retried at the next pass).
# TYPE kubelet_container_log_rotation_failures_total counter
kubelet_container_log_rotation_failures_total 5
# HELP kubelet_container_log_rotations_total Number of container log files rotated.
# TYPE kubelet_container_log_rotations_total counter
kubelet_container_log_rotations_total 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(expected)); err != nil {
		t.Error(err)
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Errorf("metric lint: %v %v", problems, err)
	}
}

// Files the rotation must delete or compress but cannot (here folders in
// their place: a folder with a file in it cannot be removed, a folder
// cannot be read) fail the rotation before the log is renamed; it is
// retried at each pass, logged once, and succeeds once they are fixed.
func TestOldFilesThatCannotBeRemovedOrCompressed(t *testing.T) {
	for _, tc := range []struct {
		name     string
		maxFiles int
		plant    func(t *testing.T, dir string) (fix func())
	}{
		{
			name: "removal refused", maxFiles: 2,
			plant: func(t *testing.T, dir string) func() {
				stuck := filepath.Join(dir, "0.log.20260101-000000", "inside")
				mkdirFile(t, stuck)
				return func() { _ = os.Remove(stuck) }
			},
		},
		{
			name: "compression refused", maxFiles: 5,
			plant: func(t *testing.T, dir string) func() {
				stuck := filepath.Join(dir, "0.log.20260101-000000")
				if err := os.Mkdir(stuck, 0o755); err != nil {
					t.Fatal(err)
				}
				return func() {
					_ = os.Remove(stuck)
					_ = os.WriteFile(stuck, []byte("2026-01-01T00:00:00Z stdout F old\n"), 0o640)
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fr, clk, rec, m := setup(t, logrotate.Options{MaxSize: 1000, MaxFiles: tc.maxFiles})
			path := fr.run(t, t.TempDir(), "chatty", "main")
			dir := filepath.Dir(path)
			fix := tc.plant(t, dir)
			appendLog(t, path, 0, 10)
			for range 3 {
				clk.Step(logrotate.DefaultInterval)
				rotate(t, m, logrotate.Result{Containers: 1, Failed: 1})
				if got := size(t, path); got != 1000 {
					t.Fatalf("the log has %d bytes, want its 1000 (not rotated)", got)
				}
			}
			if n := rec.count(-1, "container log rotation failed"); n != 1 {
				t.Errorf("logged %d times as an error, want once", n)
			}
			for _, n := range files(t, dir) {
				if strings.HasSuffix(n, ".tmp") || strings.HasSuffix(n, ".gz") {
					t.Errorf("%s left behind by a failed compression", n)
				}
			}
			fix()
			clk.Step(logrotate.DefaultInterval)
			rotate(t, m, logrotate.Result{Containers: 1, Rotated: 1})
			if got := len(files(t, dir)); got > tc.maxFiles {
				t.Errorf("%d files, want at most %d: %v", got, tc.maxFiles, files(t, dir))
			}
		})
	}
}

func mkdirFile(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Leftovers of a rotation interrupted by a crash are deleted at the next
// rotation: a temporary file, and a rotated file compressed but not
// removed.
func TestLeftoversAreDeleted(t *testing.T) {
	fr, _, _, m := setup(t, logrotate.Options{MaxSize: 1000})
	path := fr.run(t, t.TempDir(), "chatty", "main")
	dir := filepath.Dir(path)
	for _, n := range []string{"0.log.20260101-000000.tmp", "0.log.20260101-000001", "0.log.20260101-000001.gz", "notes.txt"} {
		mkdirFile(t, filepath.Join(dir, n))
	}
	appendLog(t, path, 0, 10)
	rotate(t, m, logrotate.Result{Containers: 1, Rotated: 1})
	want := []string{"0.log", "0.log.20260101-000001.gz", "0.log.20260102-030405", "notes.txt"}
	if got := files(t, dir); !cmp.Equal(got, want) {
		t.Errorf("files: %v, want %v", got, want)
	}
}

// Two rotations within one second would get the same name: the second
// waits for a later pass.
func TestOneRotationPerSecond(t *testing.T) {
	fr, clk, _, m := setup(t, logrotate.Options{MaxSize: 1000})
	path := fr.run(t, t.TempDir(), "chatty", "main")
	appendLog(t, path, 0, 10)
	rotate(t, m, logrotate.Result{Containers: 1, Rotated: 1})
	appendLog(t, path, 10, 10)
	clk.Step(500 * time.Millisecond)
	rotate(t, m, logrotate.Result{Containers: 1})
	if got := size(t, path); got != 1000 {
		t.Fatalf("the log has %d bytes, want its 1000 (not rotated)", got)
	}
	clk.Step(500 * time.Millisecond)
	rotate(t, m, logrotate.Result{Containers: 1, Rotated: 1})
	if got, want := files(t, filepath.Dir(path)), []string{"0.log", "0.log.20260102-030405.gz", "0.log.20260102-030406"}; !cmp.Equal(got, want) {
		t.Errorf("files: %v, want %v", got, want)
	}
}

// A log file that vanished (a rotation cut short between its rename and
// the reopen, a file deleted by hand) is reopened by the runtime.
func TestMissingLogIsReopened(t *testing.T) {
	fr, _, rec, m := setup(t, logrotate.Options{MaxSize: 1000})
	path := fr.run(t, t.TempDir(), "chatty", "main")
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	fr.setReopenErr(errRefused)
	rotate(t, m, logrotate.Result{Containers: 1, Failed: 1})
	rotate(t, m, logrotate.Result{Containers: 1, Failed: 1})
	if n := rec.count(-1, "container log rotation failed"); n != 1 {
		t.Errorf("logged %d times as an error, want once", n)
	}
	fr.setReopenErr(nil)
	rotate(t, m, logrotate.Result{Containers: 1})
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the log was not reopened: %v", err)
	}
}

// A log whose folder is gone too belongs to a pod being removed since the
// listing (runtime/cri removes a pod's logs with its folder): it is not
// reopened, and is no failure.
func TestLogOfARemovedPodIsNotReopened(t *testing.T) {
	fr, _, rec, m := setup(t, logrotate.Options{MaxSize: 1000})
	path := fr.run(t, t.TempDir(), "leaving", "main")
	rotate(t, m, logrotate.Result{Containers: 1})
	if err := os.RemoveAll(filepath.Dir(path)); err != nil {
		t.Fatal(err)
	}
	rotate(t, m, logrotate.Result{Containers: 1})
	if _, reopens := fr.counts("leaving-main"); reopens != 0 {
		t.Errorf("%d reopens of a log whose folder is gone, want none", reopens)
	}
	if errs := rec.errors(); len(errs) != 0 {
		t.Errorf("errors logged: %v", errs)
	}
}

// A pass costs one listing and a stat per running container: the runtime
// is asked for a container's log path once, a container without a log
// file is skipped, and a container that stopped is forgotten.
func TestPassesAreCheap(t *testing.T) {
	fr, _, rec, m := setup(t, logrotate.Options{MaxSize: 1000})
	dir := t.TempDir()
	fr.run(t, dir, "a", "main")
	fr.run(t, dir, "b", "main")
	fr.runWithPath("c", "main", "") // no log file
	for range 5 {
		rotate(t, m, logrotate.Result{Containers: 3})
	}
	for _, id := range []string{"a-main", "b-main", "c-main"} {
		if calls, _ := fr.counts(id); calls != 1 {
			t.Errorf("%s: log path asked %d times in 5 passes, want once", id, calls)
		}
	}
	fr.stop("a")
	rotate(t, m, logrotate.Result{Containers: 2})
	if fr.listCalls != 6 {
		t.Errorf("%d listings in 6 passes, want 6", fr.listCalls)
	}
	if errs := rec.errors(); len(errs) != 0 {
		t.Errorf("errors logged: %v", errs)
	}
}

// A runtime that cannot list its containers fails the pass; it is logged
// once however many passes fail, and the recovery once.
func TestListingFailure(t *testing.T) {
	fr, _, rec, m := setup(t, logrotate.Options{})
	fr.setListErr(errRefused)
	for range 3 {
		if _, err := m.Rotate(context.Background()); err == nil {
			t.Fatal("Rotate succeeded with a runtime that cannot list")
		}
	}
	if n := len(rec.errors()); n != 1 {
		t.Errorf("%d errors logged for 3 failed listings, want 1", n)
	}
	fr.setListErr(nil)
	rotate(t, m, logrotate.Result{})
	rotate(t, m, logrotate.Result{})
	if n := rec.count(2, "container log rotation: listing the running containers works again"); n != 1 {
		t.Errorf("the recovery was logged %d times, want once", n)
	}
}

// Options.Workers containers are checked at once, never more.
func TestWorkers(t *testing.T) {
	for _, workers := range []int{1, 4} {
		t.Run(fmt.Sprint(workers), func(t *testing.T) {
			fr, _, _, m := setup(t, logrotate.Options{MaxSize: 100, Workers: workers})
			dir := t.TempDir()
			for i := range 12 {
				appendLog(t, fr.run(t, dir, fmt.Sprintf("p%02d", i), "main"), 0, 1)
			}
			// The first reopens wait until Workers of them run together.
			var arrived atomic.Int32
			var together sync.WaitGroup
			together.Add(workers)
			fr.inReopen = func(string) {
				if arrived.Add(1) <= int32(workers) {
					together.Done()
					together.Wait()
				}
			}
			rotate(t, m, logrotate.Result{Containers: 12, Rotated: 12})
			if fr.maxConc != workers {
				t.Errorf("at most %d calls at once, want %d", fr.maxConc, workers)
			}
		})
	}
}

// Run passes at once, then at every Interval of its clock, until its
// context ends.
func TestRunOnTheClock(t *testing.T) {
	fr, clk, _, m := setup(t, logrotate.Options{MaxSize: 1000})
	path := fr.run(t, t.TempDir(), "chatty", "main")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	podworkertest.WaitFor(t, 10*time.Second, "the first pass", func() bool { return m.Passes() >= 1 })
	appendLog(t, path, 0, 10)
	podworkertest.WaitFor(t, 10*time.Second, "the ticker", clk.HasWaiters)
	clk.Step(logrotate.DefaultInterval - time.Millisecond)
	if m.Passes() != 1 {
		t.Fatalf("%d passes before the interval, want 1", m.Passes())
	}
	clk.Step(time.Millisecond)
	podworkertest.WaitFor(t, 10*time.Second, "the second pass", func() bool { return m.Passes() >= 2 })
	if got := files(t, filepath.Dir(path)); len(got) != 2 {
		t.Errorf("files after the second pass: %v, want the log rotated", got)
	}
	if err := m.Run(ctx); err == nil {
		t.Error("a second Run succeeded")
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
}

func TestOptions(t *testing.T) {
	rt := newFakeRuntime()
	for _, tc := range []struct {
		name string
		opts logrotate.Options
		ok   bool
	}{
		{"defaults", logrotate.Options{Runtime: rt}, true},
		{"no runtime", logrotate.Options{}, false},
		{"negative size", logrotate.Options{Runtime: rt, MaxSize: -1}, false},
		{"one file", logrotate.Options{Runtime: rt, MaxFiles: 1}, false},
		{"two files", logrotate.Options{Runtime: rt, MaxFiles: 2}, true},
		{"negative files", logrotate.Options{Runtime: rt, MaxFiles: -5}, false},
		{"negative interval", logrotate.Options{Runtime: rt, Interval: -time.Second}, false},
		{"negative workers", logrotate.Options{Runtime: rt, Workers: -1}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := logrotate.New(tc.opts)
			if (err == nil) != tc.ok {
				t.Errorf("New: %v, want ok=%v", err, tc.ok)
			}
		})
	}
	reg := prometheus.NewRegistry()
	if _, err := logrotate.New(logrotate.Options{Runtime: rt, Registerer: reg}); err != nil {
		t.Fatal(err)
	}
	if _, err := logrotate.New(logrotate.Options{Runtime: rt, Registerer: reg}); err == nil {
		t.Error("a second Manager registered the same metrics")
	}
}
