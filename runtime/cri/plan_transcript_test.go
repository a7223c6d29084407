package cri

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/runtime"
)

var updatePlans = flag.Bool("update", false, "rewrite testdata/plan transcripts with the current output")

// fakeBackOff is a back-off view that answers a fixed wait per container.
type fakeBackOff map[string]time.Duration

func (f fakeBackOff) waitAt(key string, _, _ time.Time) time.Duration { return f[key] }

// planTranscript builds a pod spec, its runtime status and the back-off
// from the commands of a transcript and renders planSync's plan. Commands
// (one per line, "#" comments; times are seconds):
//
//	pod [policy=Always|OnFailure|Never] [grace=N]   (starts a new pod)
//	init NAME [sidecar] [probe]
//	container NAME [image=IMAGE]
//	ephemeral NAME [target=CONTAINER]
//	sandbox ID ready|notready [created=T] [attempt=N]
//	status NAME ID created|running|exited|unknown [code=N] [created=T]
//	       [finished=T] [restarts=N] [hash=old|none]
//	backoff NAME DURATION   (the back-off's wait for NAME)
//	notstarted NAME         (its startup probe has not passed)
//	plan [now=T]
//
// Each command is echoed; plan is followed by "-> " lines, one per
// decision.
type planTranscript struct {
	pod        *v1.Pod
	status     *runtime.PodStatus
	backOff    fakeBackOff
	notStarted map[string]bool
}

func (tr *planTranscript) reset(args map[string]string) {
	tr.pod = &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u1", Name: "web", Namespace: "ns"}}
	tr.pod.Spec.RestartPolicy = v1.RestartPolicy(args["policy"])
	if v, ok := args["grace"]; ok {
		n, _ := strconv.ParseInt(v, 10, 64)
		tr.pod.Spec.TerminationGracePeriodSeconds = &n
	}
	tr.status = &runtime.PodStatus{ID: "u1", Name: "web", Namespace: "ns"}
	tr.backOff = fakeBackOff{}
	tr.notStarted = map[string]bool{}
}

func secs(v string) time.Time {
	n, _ := strconv.ParseInt(v, 10, 64)
	return time.Unix(n, 0)
}

func atoi(v string) int {
	n, _ := strconv.Atoi(v)
	return n
}

var transcriptStates = map[string]runtime.ContainerState{
	"created": runtime.ContainerStateCreated, "running": runtime.ContainerStateRunning,
	"exited": runtime.ContainerStateExited, "unknown": runtime.ContainerStateUnknown,
}

// step runs one command and returns its outcome lines, if any.
func (tr *planTranscript) step(t *testing.T, line string) []string {
	fields := strings.Fields(line)
	cmd := fields[0]
	args := map[string]string{}
	for _, f := range fields[1:] {
		k, v, _ := strings.Cut(f, "=")
		args[k] = v
	}
	if tr.pod == nil && cmd != "pod" {
		t.Fatalf("%q before pod", line)
	}
	switch cmd {
	case "pod":
		tr.reset(args)
	case "init":
		c := v1.Container{Name: fields[1], Image: "img"}
		if _, ok := args["sidecar"]; ok {
			always := v1.ContainerRestartPolicyAlways
			c.RestartPolicy = &always
		}
		if _, ok := args["probe"]; ok {
			c.StartupProbe = &v1.Probe{}
		}
		tr.pod.Spec.InitContainers = append(tr.pod.Spec.InitContainers, c)
	case "container":
		c := v1.Container{Name: fields[1], Image: "img"}
		if v, ok := args["image"]; ok {
			c.Image = v
		}
		tr.pod.Spec.Containers = append(tr.pod.Spec.Containers, c)
	case "ephemeral":
		ec := v1.EphemeralContainer{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: fields[1], Image: "img"}, TargetContainerName: args["target"]}
		tr.pod.Spec.EphemeralContainers = append(tr.pod.Spec.EphemeralContainers, ec)
	case "sandbox":
		sb := &runtime.SandboxStatus{ID: fields[1], State: runtime.SandboxStateNotReady, CreatedAt: secs(args["created"]), Attempt: uint32(atoi(args["attempt"]))}
		if fields[2] == "ready" {
			sb.State = runtime.SandboxStateReady
		}
		tr.status.SandboxStatuses = append(tr.status.SandboxStatuses, sb)
	case "status":
		name := fields[1]
		cs := &runtime.ContainerStatus{ID: runtime.ContainerID{Type: "fake", ID: fields[2]}, Name: name, State: transcriptStates[fields[3]],
			ExitCode: atoi(args["code"]), CreatedAt: secs(args["created"]), FinishedAt: secs(args["finished"]), RestartCount: atoi(args["restarts"])}
		if cs.State == "" {
			t.Fatalf("%q: unknown state %q", line, fields[3])
		}
		switch args["hash"] {
		case "old":
			cs.Hash = 1
		case "none":
		default:
			c := findContainer(tr.pod, name)
			if c == nil {
				t.Fatalf("%q: no container %q in the spec", line, name)
			}
			cs.Hash = runtime.HashContainer(c)
		}
		tr.status.ContainerStatuses = append(tr.status.ContainerStatuses, cs)
		// Newest first, as GetPodStatus sorts them.
		slices.SortStableFunc(tr.status.ContainerStatuses, func(a, b *runtime.ContainerStatus) int { return b.CreatedAt.Compare(a.CreatedAt) })
	case "backoff":
		d, err := time.ParseDuration(fields[2])
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		tr.backOff[backOffKey(tr.pod, fields[1])] = d
	case "notstarted":
		tr.notStarted[fields[1]] = true
	case "plan":
		in := planInput{pod: tr.pod, status: tr.status, backOff: tr.backOff, now: secs(args["now"]),
			started: func(_ types.UID, name string) bool { return !tr.notStarted[name] }}
		if err := validatePod(tr.pod); err != nil {
			t.Fatalf("%q: invalid pod: %v", line, err)
		}
		p := planSync(in)
		if again := planSync(in); again.String() != p.String() {
			t.Errorf("planSync is not deterministic:\n%s\n%s", p, again)
		}
		return p.lines()
	default:
		t.Fatalf("unknown command %q", line)
	}
	return nil
}

// TestPlanTranscripts runs every testdata/plan/*.txt transcript; run with
// -update to rewrite the expectations after a deliberate change.
func TestPlanTranscripts(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "plan", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no transcripts: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			tr := &planTranscript{}
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
				for _, out := range tr.step(t, trimmed) {
					got = append(got, "-> "+out)
				}
			}
			want := strings.TrimRight(string(data), "\n")
			gotText := strings.Join(got, "\n")
			if *updatePlans {
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
