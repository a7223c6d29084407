package fakecri_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podlife/podlife/runtime/fakecri"
)

// A container's log file is created when it starts, WriteLog appends CRI
// lines to it, and ReopenContainerLog creates it again after a rotation
// renamed it, for a running container only.
func TestContainerLogs(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	s, c := start(t, fakecri.Options{Images: []string{"img"}, Clock: clk})
	ctx := ctx(t)
	dir := t.TempDir()
	cfg := sandboxConfig("u1")
	cfg.LogDirectory = dir
	sb, err := c.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	run := func(name, logPath string, args ...string) string {
		t.Helper()
		cc := containerConfig(name, "img", args...)
		cc.LogPath = logPath
		r, err := c.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb.GetPodSandboxId(), Config: cc})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: r.GetContainerId()}); err != nil {
			t.Fatal(err)
		}
		return r.GetContainerId()
	}
	read := func(path string) string {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}

	quiet := run("quiet", "quiet.log")
	path := filepath.Join(dir, "quiet.log")
	if got := read(path); got != "" {
		t.Fatalf("a container that printed nothing: log %q, want an empty file", got)
	}
	if err := s.WriteLog(quiet, "stderr", "one\ntwo\n"); err != nil {
		t.Fatal(err)
	}
	want := "2026-01-02T03:04:05Z stderr F one\n2026-01-02T03:04:05Z stderr F two\n"
	if got := read(path); got != want {
		t.Fatalf("log after WriteLog:\n%s\nwant:\n%s", got, want)
	}

	// A rotation: the file renamed away, the runtime reopens it.
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ReopenContainerLog(ctx, &runtimeapi.ReopenContainerLogRequest{ContainerId: quiet}); err != nil {
		t.Fatalf("ReopenContainerLog: %v", err)
	}
	if err := s.WriteLog(quiet, "stdout", "three"); err != nil {
		t.Fatal(err)
	}
	if got, want := read(path), "2026-01-02T03:04:05Z stdout F three\n"; got != want {
		t.Fatalf("log after the reopen: %q, want %q", got, want)
	}
	if got := read(path + ".1"); got != "2026-01-02T03:04:05Z stderr F one\n2026-01-02T03:04:05Z stderr F two\n" {
		t.Fatalf("rotated file changed: %q", got)
	}

	talker := run("talker", "talker.log", "log", "hello", "world")
	if got, want := read(filepath.Join(dir, "talker.log")), "2026-01-02T03:04:05Z stdout F hello world\n"; got != want {
		t.Fatalf("log ARGS: %q, want %q", got, want)
	}
	if err := s.ExitContainer(talker, 0); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "talker.log")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ReopenContainerLog(ctx, &runtimeapi.ReopenContainerLogRequest{ContainerId: talker}); code(err) != codes.Unknown ||
		!strings.Contains(err.Error(), "not running") {
		t.Fatalf("reopen of an exited container: %v, want Unknown (not running)", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "talker.log")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused reopen created the file: %v", err)
	}
	if err := s.WriteLog(talker, "stdout", "late"); err == nil {
		t.Fatal("WriteLog of an exited container succeeded")
	}
	if _, err := c.ReopenContainerLog(ctx, &runtimeapi.ReopenContainerLogRequest{ContainerId: "nope"}); code(err) != codes.NotFound {
		t.Fatalf("reopen of an unknown container: %v, want NotFound", err)
	}
	if err := s.WriteLog("nope", "stdout", "x"); !errors.Is(err, fakecri.ErrNoSuchObject) {
		t.Fatalf("WriteLog of an unknown container: %v", err)
	}
	if err := s.WriteLog(quiet, "stdin", "x"); err == nil {
		t.Fatal("WriteLog on stdin succeeded")
	}

	// Without a LogPath there is no file and nothing to write to.
	nolog := run("nolog", "")
	if err := s.WriteLog(nolog, "stdout", "x"); err == nil {
		t.Fatal("WriteLog without a log file succeeded")
	}
	if _, err := c.ReopenContainerLog(ctx, &runtimeapi.ReopenContainerLogRequest{ContainerId: nolog}); err != nil {
		t.Fatalf("reopen without a log file: %v", err)
	}
}
