package agent_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	v1 "k8s.io/api/core/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"

	"github.com/podlife/podlife/agent"
	"github.com/podlife/podlife/podworker/podworkertest"
	"github.com/podlife/podlife/runtime"
	"github.com/podlife/podlife/runtime/cri"
	"github.com/podlife/podlife/runtime/fakecri"
)

// stateLog is a StatusReporter that notes the state of container "main"
// in every status published ("Waiting REASON: MESSAGE", "Running", ...),
// once per change, so that a test sees states that did not last.
type stateLog struct {
	mu     sync.Mutex
	states []string
}

func (l *stateLog) SetPodStatus(_ context.Context, _, _ *v1.Pod, st v1.PodStatus) error {
	for _, cs := range st.ContainerStatuses {
		if cs.Name != "main" {
			continue
		}
		var s string
		switch {
		case cs.State.Waiting != nil:
			s = "Waiting " + cs.State.Waiting.Reason + ": " + cs.State.Waiting.Message
		case cs.State.Running != nil:
			s = "Running"
		default:
			s = "Terminated"
		}
		l.mu.Lock()
		if len(l.states) == 0 || l.states[len(l.states)-1] != s {
			l.states = append(l.states, s)
		}
		l.mu.Unlock()
	}
	return nil
}

func (l *stateLog) PodFinished(context.Context, *v1.Pod, *v1.Pod, v1.PodStatus) error { return nil }

// index is the position of the first state at or after from that is want,
// or -1.
func (l *stateLog) index(want string, from int) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := max(from, 0); i < len(l.states); i++ {
		if l.states[i] == want {
			return i
		}
	}
	return -1
}

func (l *stateLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.states, "\n")
}

// eventLog is a record.EventRecorder that keeps every event as
// "TYPE REASON MESSAGE".
type eventLog struct {
	mu     sync.Mutex
	events []string
}

func (e *eventLog) Event(_ k8sruntime.Object, eventtype, reason, message string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.events = append(e.events, eventtype+" "+reason+" "+message)
}

func (e *eventLog) Eventf(o k8sruntime.Object, eventtype, reason, messageFmt string, args ...any) {
	e.Event(o, eventtype, reason, fmt.Sprintf(messageFmt, args...))
}

func (e *eventLog) AnnotatedEventf(o k8sruntime.Object, _ map[string]string, eventtype, reason, messageFmt string, args ...any) {
	e.Eventf(o, eventtype, reason, messageFmt, args...)
}

func (e *eventLog) all() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.events)
}

// An image that cannot be pulled shows in the pod's published status as
// Waiting ErrImagePull with the runtime's error, then ImagePullBackOff
// with the kubelet's message, with the kubelet's events and no
// FailedSync; once the image can be pulled the pod starts by itself and
// the reason is gone.
func TestImagePullReasonsInStatus(t *testing.T) {
	srv, endpoint := startFakeCRI(t, fakecri.Options{})
	removeFault := srv.Inject(fakecri.Fault{Method: "PullImage", Code: codes.NotFound, Message: "no such image"})
	rt := newRuntimeWith(t, endpoint, func(o *cri.Options) { o.ImagePullBackOffInitial = 2 * time.Second })
	states, events := &stateLog{}, &eventLog{}
	dir := t.TempDir()
	writeManifest(t, dir, "pull.yaml", manifest("pull", 1))
	ra := startAgentOn(t, rt, dir, func(o *agent.Options) {
		o.StatusReporter = func(agent.PodStateProvider) (agent.StatusReporter, error) { return states, nil }
		o.Recorder = events
	})
	uid := ra.podUID(t, "pull")

	const pullErr = "rpc error: code = NotFound desc = no such image"
	errImagePull := "Waiting ErrImagePull: " + pullErr
	backOff := `Waiting ImagePullBackOff: Back-off pulling image "` + testImage + `": ErrImagePull: ` + pullErr
	var first int
	podworkertest.WaitFor(t, waitTimeout, "ErrImagePull then ImagePullBackOff in the published status", func() bool {
		first = states.index(errImagePull, 0)
		return first >= 0 && states.index(backOff, first) > first
	})
	if st, ok := ra.StatusReporter().Status(uid); !ok || st.Phase != v1.PodPending {
		t.Errorf("phase while the image cannot be pulled: %v", st.Phase)
	}

	removeFault()
	waitRunning(t, ra, uid)
	if i := states.index("Running", first); i < 0 {
		t.Fatalf("states:\n%s\nwant Running last", states)
	}
	st, _ := ra.StatusReporter().Status(uid)
	if w := st.ContainerStatuses[0].State.Waiting; w != nil {
		t.Errorf("waiting %+v after the start", w)
	}

	got := events.all()
	for _, want := range []string{
		`Warning Failed Failed to pull image "` + testImage + `": ` + pullErr,
		"Warning Failed Error: ErrImagePull",
		`Normal BackOff Back-off pulling image "` + testImage + `"`,
		"Warning Failed Error: ImagePullBackOff",
	} {
		if !slices.Contains(got, want) {
			t.Errorf("no event %q among\n%s", want, strings.Join(got, "\n"))
		}
	}
	for _, e := range got {
		if strings.Contains(e, "FailedSync") {
			t.Errorf("a FailedSync event for a start failure: %s", e)
		}
	}
}

// configGate is a ContainerOptionsProvider whose ConfigMap is missing
// until it is created.
type configGate struct {
	mu      sync.Mutex
	created bool
}

type configMissing struct{}

func (configMissing) Error() string { return `configmap "settings" not found` }
func (configMissing) Unwrap() error { return runtime.ErrFailedPrecondition }

func (g *configGate) HandlesVolume(*v1.Volume) bool { return false }

func (g *configGate) RunContainerOptions(_ context.Context, _ *v1.Pod, c *v1.Container, _ []string) (*runtime.RunContainerOptions, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.created {
		return nil, configMissing{}
	}
	return &runtime.RunContainerOptions{Command: c.Command, Args: c.Args}, nil
}

func (g *configGate) ImagePullCredentials(context.Context, *v1.Pod, string) ([]runtime.ImageAuth, error) {
	return nil, nil
}

// A container whose configuration cannot be made yet is Waiting
// CreateContainerConfigError with the provider's message until it can,
// then it starts.
func TestCreateContainerConfigErrorInStatus(t *testing.T) {
	_, endpoint := startFakeCRI(t, fakecri.Options{})
	rt := newRuntime(t, endpoint)
	gate := &configGate{}
	rt.SetContainerOptionsProvider(gate)
	dir := t.TempDir()
	writeManifest(t, dir, "cfg.yaml", manifest("cfg", 1))
	ra := startAgentOn(t, rt, dir, nil)
	uid := ra.podUID(t, "cfg")
	podworkertest.WaitFor(t, waitTimeout, "Waiting CreateContainerConfigError", func() bool {
		st, ok := ra.StatusReporter().Status(uid)
		if !ok || len(st.ContainerStatuses) != 1 {
			return false
		}
		w := st.ContainerStatuses[0].State.Waiting
		return w != nil && w.Reason == "CreateContainerConfigError" && w.Message == `configmap "settings" not found`
	})
	gate.mu.Lock()
	gate.created = true
	gate.mu.Unlock()
	waitRunning(t, ra, uid)
}
