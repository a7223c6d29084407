package podworkertest

import (
	"context"
	"fmt"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/podworker"
	"github.com/podlife/podlife/runtime"
)

// Method names a Syncer method.
type Method string

// The Syncer methods.
const (
	SyncPod                   Method = "SyncPod"
	SyncTerminatingPod        Method = "SyncTerminatingPod"
	SyncTerminatingRuntimePod Method = "SyncTerminatingRuntimePod"
	SyncTerminatedPod         Method = "SyncTerminatedPod"
)

// Call is one recorded Syncer call.
type Call struct {
	Method     Method
	UID        types.UID
	UpdateType podworker.SyncPodType // SyncPod only
	Pod        *v1.Pod
	MirrorPod  *v1.Pod
	RunningPod *runtime.Pod
	Status     *runtime.PodStatus
	// GracePeriod is the value passed to SyncTerminatingPod or -1.
	GracePeriod   int64
	HasStatusFunc bool
	// Err is what the call returned (set once it returned).
	Err error
}

func (c Call) String() string {
	s := fmt.Sprintf("%s(%s", c.Method, c.UID)
	if c.Method == SyncPod {
		s += ", " + c.UpdateType.String()
	}
	if c.GracePeriod >= 0 {
		s += fmt.Sprintf(", gp=%d", c.GracePeriod)
	}
	if c.Err != nil {
		s += ") -> " + c.Err.Error()
	} else {
		s += ")"
	}
	return s
}

// Hook scripts a call: its results replace the fake's default answer.
type Hook func(ctx context.Context, call Call) (isTerminal bool, err error)

type scriptKey struct {
	method Method
	uid    types.UID // "" matches every pod
}

type failure struct {
	remaining int
	err       error
}

// FakeSyncer is a recording, scriptable podworker.Syncer, safe for
// concurrent use. Its zero value succeeds at every call.
type FakeSyncer struct {
	mu       sync.Mutex
	calls    []Call
	inFlight map[types.UID]Method
	overlaps []string
	failures map[scriptKey]*failure
	terminal map[types.UID]bool
	hooks    map[scriptKey]Hook
	gates    map[scriptKey]*Gate
	changed  chan struct{} // closed and replaced on every recorded change
}

var _ podworker.Syncer = (*FakeSyncer)(nil)

// NewFakeSyncer returns a FakeSyncer that succeeds at every call.
func NewFakeSyncer() *FakeSyncer { return &FakeSyncer{} }

func (f *FakeSyncer) initLocked() {
	if f.inFlight == nil {
		f.inFlight = make(map[types.UID]Method)
		f.failures = make(map[scriptKey]*failure)
		f.terminal = make(map[types.UID]bool)
		f.hooks = make(map[scriptKey]Hook)
		f.gates = make(map[scriptKey]*Gate)
		f.changed = make(chan struct{})
	}
}

func (f *FakeSyncer) notifyLocked() {
	close(f.changed)
	f.changed = make(chan struct{})
}

// Fail makes the next n calls of method for uid ("" for any pod) return err.
func (f *FakeSyncer) Fail(method Method, uid types.UID, n int, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.initLocked()
	f.failures[scriptKey{method, uid}] = &failure{remaining: n, err: err}
}

// SetTerminal makes SyncPod for uid report isTerminal.
func (f *FakeSyncer) SetTerminal(uid types.UID, terminal bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.initLocked()
	f.terminal[uid] = terminal
}

// SetHook runs h for every call of method for uid ("" for any pod), instead
// of the default answer; nil removes it.
func (f *FakeSyncer) SetHook(method Method, uid types.UID, h Hook) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.initLocked()
	if h == nil {
		delete(f.hooks, scriptKey{method, uid})
		return
	}
	f.hooks[scriptKey{method, uid}] = h
}

// Block makes calls of method for uid ("" for any pod) wait until the
// returned Gate is released or the call's context is done (the call then
// returns ctx.Err()).
func (f *FakeSyncer) Block(method Method, uid types.UID) *Gate {
	g := &Gate{release: make(chan struct{}), entered: make(chan struct{})}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.initLocked()
	f.gates[scriptKey{method, uid}] = g
	return g
}

// Gate holds blocked calls.
type Gate struct {
	once    sync.Once
	release chan struct{}
	enter   sync.Once
	entered chan struct{}
}

// Release lets every blocked and future call through.
func (g *Gate) Release() { g.once.Do(func() { close(g.release) }) }

// Entered is closed once a call has blocked on the gate.
func (g *Gate) Entered() <-chan struct{} { return g.entered }

func (f *FakeSyncer) lookup(m map[scriptKey]*Gate, method Method, uid types.UID) *Gate {
	if g, ok := m[scriptKey{method, uid}]; ok {
		return g
	}
	return m[scriptKey{method, ""}]
}

// begin records the start of a call and returns its index.
func (f *FakeSyncer) begin(c Call) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.initLocked()
	if prev, busy := f.inFlight[c.UID]; busy {
		f.overlaps = append(f.overlaps, fmt.Sprintf("%s for pod %s started while %s was running", c.Method, c.UID, prev))
	}
	f.inFlight[c.UID] = c.Method
	f.calls = append(f.calls, c)
	f.notifyLocked()
	return len(f.calls) - 1
}

func (f *FakeSyncer) end(i int, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := &f.calls[i]
	c.Err = err
	delete(f.inFlight, c.UID)
	f.notifyLocked()
}

func (f *FakeSyncer) run(ctx context.Context, c Call) (terminal bool, err error) {
	i := f.begin(c)
	defer func() {
		if r := recover(); r != nil {
			f.end(i, fmt.Errorf("panic: %v", r))
			panic(r)
		}
		f.end(i, err)
	}()

	f.mu.Lock()
	gate := f.lookup(f.gates, c.Method, c.UID)
	hook, ok := f.hooks[scriptKey{c.Method, c.UID}]
	if !ok {
		hook = f.hooks[scriptKey{c.Method, ""}]
	}
	fail := f.failures[scriptKey{c.Method, c.UID}]
	if fail == nil || fail.remaining == 0 {
		fail = f.failures[scriptKey{c.Method, ""}]
	}
	var failErr error
	if fail != nil && fail.remaining > 0 {
		fail.remaining--
		failErr = fail.err
	}
	terminal = f.terminal[c.UID]
	f.mu.Unlock()

	if gate != nil {
		gate.enter.Do(func() { close(gate.entered) })
		select {
		case <-gate.release:
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
	if failErr != nil {
		return false, failErr
	}
	if hook != nil {
		return hook(ctx, c)
	}
	return terminal, nil
}

// SyncPod implements podworker.Syncer.
func (f *FakeSyncer) SyncPod(ctx context.Context, updateType podworker.SyncPodType, pod, mirrorPod *v1.Pod, podStatus *runtime.PodStatus) (bool, error) {
	return f.run(ctx, Call{Method: SyncPod, UID: pod.UID, UpdateType: updateType, Pod: pod, MirrorPod: mirrorPod, Status: podStatus, GracePeriod: -1})
}

// SyncTerminatingPod implements podworker.Syncer.
func (f *FakeSyncer) SyncTerminatingPod(ctx context.Context, pod *v1.Pod, podStatus *runtime.PodStatus, gracePeriod *int64, podStatusFn func(*v1.PodStatus)) error {
	gp := int64(-1)
	if gracePeriod != nil {
		gp = *gracePeriod
	}
	_, err := f.run(ctx, Call{Method: SyncTerminatingPod, UID: pod.UID, Pod: pod, Status: podStatus, GracePeriod: gp, HasStatusFunc: podStatusFn != nil})
	return err
}

// SyncTerminatingRuntimePod implements podworker.Syncer.
func (f *FakeSyncer) SyncTerminatingRuntimePod(ctx context.Context, runningPod *runtime.Pod) error {
	_, err := f.run(ctx, Call{Method: SyncTerminatingRuntimePod, UID: runningPod.ID, RunningPod: runningPod, GracePeriod: -1})
	return err
}

// SyncTerminatedPod implements podworker.Syncer.
func (f *FakeSyncer) SyncTerminatedPod(ctx context.Context, pod *v1.Pod, podStatus *runtime.PodStatus) error {
	_, err := f.run(ctx, Call{Method: SyncTerminatedPod, UID: pod.UID, Pod: pod, Status: podStatus, GracePeriod: -1})
	return err
}

// Calls returns a copy of every call so far, in start order.
func (f *FakeSyncer) Calls() []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Call(nil), f.calls...)
}

// CallsFor returns the calls for one pod, in order.
func (f *FakeSyncer) CallsFor(uid types.UID) []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Call
	for _, c := range f.calls {
		if c.UID == uid {
			out = append(out, c)
		}
	}
	return out
}

// Methods returns the method names of the calls for one pod, in order, with
// a "!" suffix on calls that failed.
func (f *FakeSyncer) Methods(uid types.UID) []string {
	var out []string
	for _, c := range f.CallsFor(uid) {
		s := string(c.Method)
		if c.Err != nil {
			s += "!"
		}
		out = append(out, s)
	}
	return out
}

// Count returns how many calls of method were made for uid ("" for all).
func (f *FakeSyncer) Count(method Method, uid types.UID) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		if c.Method == method && (uid == "" || c.UID == uid) {
			n++
		}
	}
	return n
}

// InFlight reports whether a call for uid is running.
func (f *FakeSyncer) InFlight(uid types.UID) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.inFlight[uid]
	return ok
}

// Overlaps returns a description of every call that started while another
// call for the same pod was running. It must stay empty.
func (f *FakeSyncer) Overlaps() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.overlaps...)
}

// Changed returns a channel closed at the next recorded change (a call
// starting or returning).
func (f *FakeSyncer) Changed() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.initLocked()
	return f.changed
}
