package podworker

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podlife/podlife/podmanager"
	"github.com/podlife/podlife/runtime"
)

// machineTranscript steps one Machine through the commands of a transcript
// and renders what happened. Commands (one per line, "#" comments):
//
//	update TYPE [static] [runtime] [phase=Succeeded|Failed] [deleted]
//	       [deletionGP=N] [spec=N] [gp=N] [ch] [statusfn] [evict] [running]
//	next [notyet]
//	complete [err] [terminal]
//	due
//	orphan
//	state
//
// Each command is echoed and followed by "-> " and its outcome.
type machineTranscript struct {
	m     Machine
	now   time.Time
	chans []chan struct{}
}

func (tr *machineTranscript) pod(args map[string]string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u1", Name: "web", Namespace: "ns"}}
	if _, ok := args["static"]; ok {
		p.Annotations = map[string]string{podmanager.ConfigSourceAnnotationKey: podmanager.FileSource}
	}
	if v, ok := args["phase"]; ok {
		p.Status.Phase = v1.PodPhase(v)
	}
	if _, ok := args["deleted"]; ok {
		ts := metav1.NewTime(tr.now)
		p.DeletionTimestamp = &ts
	}
	if v, ok := args["deletionGP"]; ok {
		n, _ := strconv.ParseInt(v, 10, 64)
		p.DeletionGracePeriodSeconds = &n
	}
	if v, ok := args["spec"]; ok {
		n, _ := strconv.ParseInt(v, 10, 64)
		p.Spec.TerminationGracePeriodSeconds = &n
	}
	return p
}

func parseArgs(fields []string) map[string]string {
	args := map[string]string{}
	for _, f := range fields {
		k, v, _ := strings.Cut(f, "=")
		args[k] = v
	}
	return args
}

var updateTypes = map[string]SyncPodType{"sync": SyncPodSync, "update": SyncPodUpdate, "create": SyncPodCreate, "kill": SyncPodKill}

func renderEffects(eff Effects, err error) string {
	var parts []string
	if err != nil {
		parts = append(parts, "error: "+err.Error())
	}
	add := func(cond bool, s string) {
		if cond {
			parts = append(parts, s)
		}
	}
	add(eff.Notify, "notify")
	add(eff.CancelSync, "cancel")
	add(len(eff.Close) > 0, fmt.Sprintf("close=%d", len(eff.Close)))
	add(eff.Requeue == RequeueResync, "requeue=resync")
	add(eff.Requeue == RequeueBackOff, "requeue=backoff")
	add(eff.Started, "started")
	add(eff.Waiting, "waiting")
	add(eff.WithdrawStatic, "withdraw")
	add(eff.ReleaseStatic, "release")
	add(eff.Finished, "finished")
	add(eff.Forget, "forget")
	add(eff.Ignored != "", "ignored: "+eff.Ignored)
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " ")
}

func (tr *machineTranscript) step(line string) string {
	fields := strings.Fields(line)
	cmd, args := fields[0], parseArgs(fields[1:])
	tr.now = tr.now.Add(time.Second)
	switch cmd {
	case "update":
		o := UpdatePodOptions{UpdateType: updateTypes[fields[1]]}
		if _, ok := args["runtime"]; ok {
			o.RunningPod = &runtime.Pod{ID: "u1", Name: "web", Namespace: "ns"}
		} else {
			o.Pod = tr.pod(args)
		}
		_, ch := args["ch"]
		_, fn := args["statusfn"]
		_, evict := args["evict"]
		gp, hasGP := args["gp"]
		if ch || fn || evict || hasGP {
			o.KillPodOptions = &KillPodOptions{Evict: evict}
			if ch {
				c := make(chan struct{})
				tr.chans = append(tr.chans, c)
				o.KillPodOptions.CompletedCh = c
			}
			if fn {
				o.KillPodOptions.PodStatusFunc = func(*v1.PodStatus) {}
			}
			if hasGP {
				n, _ := strconv.ParseInt(gp, 10, 64)
				o.KillPodOptions.PodTerminationGracePeriodSecondsOverride = &n
			}
		}
		_, running := args["running"]
		eff, err := tr.m.Update(o, tr.now, !running)
		for _, c := range eff.Close {
			close(c)
		}
		return renderEffects(eff, err)
	case "next":
		d := StartAllowed
		if _, ok := args["notyet"]; ok {
			d = StartNotYet
		}
		w, ok, eff, err := tr.m.Next(tr.now, d)
		for _, c := range eff.Close {
			close(c)
		}
		out := renderEffects(eff, err)
		if ok {
			work := w.Kind.String()
			if w.Kind == WorkSyncPod {
				work += " " + w.UpdateType.String()
			}
			if w.Kind == WorkTerminatingPod || w.Kind == WorkTerminatingRuntimePod {
				work += fmt.Sprintf(" gp=%d", w.GracePeriod)
			}
			if w.StatusFunc != nil {
				work += " statusfn"
			}
			out = work + " | " + out
		} else {
			out = "none | " + out
		}
		return out
	case "complete":
		var err error
		if _, ok := args["err"]; ok {
			err = errors.New("boom")
		}
		_, terminal := args["terminal"]
		eff, cerr := tr.m.Complete(tr.now, terminal, err)
		for _, c := range eff.Close {
			close(c)
		}
		return renderEffects(eff, cerr)
	case "due":
		return renderEffects(tr.m.Due(), nil)
	case "orphan":
		eff := tr.m.Orphan(tr.now)
		for _, c := range eff.Close {
			close(c)
		}
		return renderEffects(eff, nil)
	case "state":
		m := &tr.m
		s := fmt.Sprintf("%s started=%v pending=%v gp=%d deleted=%v evicted=%v restart=%v failures=%d",
			m.Lifecycle(), m.IsStarted(), m.HasPending(), m.GracePeriod(), m.IsDeleted(), m.IsEvicted(), m.IsRestartRequested(), m.Failures())
		open := 0
		for _, c := range tr.chans {
			select {
			case <-c:
			default:
				open++
			}
		}
		return s + fmt.Sprintf(" openChans=%d", open)
	default:
		return "unknown command " + cmd
	}
}

// TestMachineTranscripts runs every testdata/machine/*.txt transcript. A
// transcript holds commands and their expected outcome lines ("-> ..."); run
// with -update to rewrite the expectations after a deliberate change.
func TestMachineTranscripts(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "machine", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no transcripts: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			tr := &machineTranscript{now: time.Unix(1000, 0)}
			var got []string
			for _, line := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
				trimmed := strings.TrimSpace(line)
				if strings.HasPrefix(trimmed, "->") {
					continue
				}
				got = append(got, line)
				if trimmed == "" || strings.HasPrefix(trimmed, "#") {
					continue
				}
				got = append(got, "-> "+tr.step(trimmed))
			}
			want := strings.TrimRight(string(data), "\n")
			gotText := strings.Join(got, "\n")
			if *updateTranscripts {
				if err := os.WriteFile(file, []byte(gotText+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if diff := cmp.Diff(want, gotText); diff != "" {
				t.Errorf("transcript mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
