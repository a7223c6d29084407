package chaos

import (
	"flag"
	"fmt"
	v1 "k8s.io/api/core/v1"
	"math/rand/v2"
	"os"
	"path/filepath"
	goruntime "runtime"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/runtime"
	"github.com/podlife/podlife/runtime/fakecri"
)

var (
	flagDuration  = flag.Duration("chaos.duration", 20*time.Second, "how long the random schedule runs (faults included); the settle phase comes after")
	flagSeed      = flag.Uint64("chaos.seed", 0, "seed of the random schedule; 0 picks one from the time (always printed)")
	flagPods      = flag.Int("chaos.pods", 60, "pod slots: a third static manifests, the rest API pods; about half exist at any time")
	flagFaultRate = flag.Float64("chaos.faultrate", 0.05, "probability that a CRI call matched by an active error or not-found fault fails")
	flagEvents    = flag.Float64("chaos.events", 0, "schedule events per second; 0 means 40 + pods/25")
	flagLatency   = flag.Duration("chaos.latency", 200*time.Millisecond, "largest latency a latency fault adds to a CRI call (each fault picks one, and delays half the calls it matches)")
	flagSettle    = flag.Duration("chaos.settle", 10*time.Second, "bound on the time, after the faults stop, for every invariant to hold")
	flagRestarts  = flag.Bool("chaos.restarts", true, "restart the agent now and then (false: one agent for the whole soak)")
	flagDowns     = flag.Bool("chaos.downs", true, "take the runtime down now and then")
	flagLog       = flag.Bool("chaos.log", false, "log the agent (V(2), with timestamps) to the test log")
)

// tick paces the schedule.
const tick = 50 * time.Millisecond

// TestSoak runs the whole agent on fakecri under a random schedule of pod
// churn, CRI faults, runtime restarts and agent restarts, checks the
// reporter invariant all along, then stops the faults and checks that
// everything converges within -chaos.settle.
func TestSoak(t *testing.T) {
	seed := *flagSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	repro := fmt.Sprintf("go test ./test/chaos -run Soak -chaos.seed=%d -chaos.pods=%d -chaos.duration=%s -chaos.faultrate=%g",
		seed, *flagPods, *flagDuration, *flagFaultRate)
	t.Logf("chaos seed %d (reproduce the schedule with: %s)", seed, repro)
	baseline := goruntime.NumGoroutine()

	s := newSoak(t, seed)
	defer func() {
		if t.Failed() {
			t.Logf("FAILED with chaos seed %d; reproduce the schedule with:\n  %s\n%s\nlast events:\n%s",
				seed, repro, s.tr.summary(), s.tr.last(300))
		}
	}()
	if !s.run() {
		s.shutdown()
		return
	}
	s.shutdown()
	created, deleted := s.mirrors.counts()
	t.Logf("soak passed: %d pods, %s of schedule, settled in %s (%d desired at the end, %d of them completed, %d rejected); %s; mirror pods: %d created, %d deleted by agents; reporter checks: %d done, %d skipped (runtime faulty)",
		*flagPods, *flagDuration, s.settled.Round(time.Millisecond), s.desiredAtEnd, s.completedAtEnd, s.rejectedAtEnd, s.tr.summary(), created, deleted, s.inv.checked.Load(), s.inv.unchecked.Load())

	// No goroutine outlives the agents, the CRI clients and fakecri.
	deadline := time.Now().Add(10 * time.Second)
	for goruntime.NumGoroutine() > baseline {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			n := goruntime.Stack(buf, true)
			t.Fatalf("goroutine leak: %d goroutines, %d before the soak:\n%s", goruntime.NumGoroutine(), baseline, buf[:n])
		}
		time.Sleep(20 * time.Millisecond) // polling with a deadline
	}
}

// soak is one run: the world model, the runtime, the current agent.
type soak struct {
	t       *testing.T
	rng     *rand.Rand
	tr      *trace
	inv     *invariants
	srv     *fakecri.Server
	sockDir string
	end     string // CRI endpoint
	dir     string // manifest folder
	tm      timings
	log     logr.Logger
	ar      *agentRun

	statics []*staticSlot
	apis    []*apiSlot

	// Timed actions of the schedule (fault removals, runtime back up).
	timed       []timedAction
	liveFaults  int
	downUntil   time.Time
	nextDown    time.Time
	nextRestart time.Time
	apiDirty    bool
	listing     []*runtime.Pod
	listedAt    time.Time
	settled     time.Duration
	// desiredAtEnd and completedAtEnd: the desired pods, and those of them
	// that ran to completion, when the final checks last ran.
	desiredAtEnd, completedAtEnd, rejectedAtEnd int

	// mirrors is the API server's store of mirror pods; mirrorsPushed the
	// version of it the agent was last given.
	mirrors       *mirrorStore
	mirrorsPushed uint64
}

type timedAction struct {
	at time.Time
	do func()
}

func newSoak(t *testing.T, seed uint64) *soak {
	s := &soak{
		t:   t,
		rng: rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)),
		tr:  newTrace(2000),
		tm:  timingsFor(*flagPods),
		log: logr.Discard(),
		dir: t.TempDir(),
	}
	if *flagLog {
		s.log = testr.NewWithOptions(t, testr.Options{Verbosity: 2, LogTimestamp: true})
	}
	s.srv = fakecri.New(fakecri.Options{Images: []string{testImage}, Rand: rand.New(rand.NewPCG(seed, 1))})
	var err error
	// A short folder: a unix socket path has at most 107 bytes.
	if s.sockDir, err = os.MkdirTemp("", "chaos"); err != nil {
		t.Fatal(err)
	}
	if s.end, err = s.srv.StartUnix(filepath.Join(s.sockDir, "cri.sock")); err != nil {
		t.Fatal(err)
	}
	checker, err := newCRI(s.end)
	if err != nil {
		t.Fatal(err)
	}
	s.inv = newInvariants(checker, s.tr)
	s.mirrors = newMirrorStore(seed, *flagFaultRate)
	nStatic := *flagPods / 3
	for i := range nStatic {
		s.statics = append(s.statics, &staticSlot{idx: i})
	}
	for i := range *flagPods - nStatic {
		s.apis = append(s.apis, &apiSlot{idx: i})
	}
	return s
}

// run runs the schedule and the settle phase; false once the test failed.
func (s *soak) run() bool {
	t := s.t
	now := time.Now()
	// Half the slots exist before the first agent starts.
	for _, st := range s.statics {
		if s.rng.IntN(2) == 0 {
			s.staticAdd(st, now)
		}
	}
	for _, a := range s.apis {
		if s.rng.IntN(2) == 0 {
			s.apiCreate(a)
		}
	}
	if !s.startAgent() {
		return false
	}
	rate := *flagEvents
	if rate <= 0 {
		rate = 40 + float64(*flagPods)/25
	}
	perTick := rate * tick.Seconds()
	s.nextDown = now.Add(s.between(2*time.Second, 6*time.Second))
	s.nextRestart = now.Add(s.between(3*time.Second, 10*time.Second))

	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	end := now.Add(*flagDuration)
	var budget float64
	for now := range ticker.C {
		if now.After(end) {
			break
		}
		s.collectFinished()
		s.runDue(now)
		for budget += perTick; budget >= 1; budget-- {
			s.step(now)
		}
		if *flagDowns && !now.Before(s.nextDown) && s.srv.IsUp() {
			d := s.between(200*time.Millisecond, 2500*time.Millisecond)
			s.tr.add("runtime-down", "for %s", d)
			s.srv.Down()
			s.downUntil = now.Add(d)
			s.after(now.Add(d), func() { s.runtimeUp() })
			s.nextDown = now.Add(d + s.between(2*time.Second, 8*time.Second))
		}
		if *flagRestarts && !now.Before(s.nextRestart) {
			if !s.restartAgent(now) {
				return false
			}
			s.nextRestart = time.Now().Add(s.between(4*time.Second, 12*time.Second))
		}
		if !s.flushAPI() || !s.checkViolations() {
			return false
		}
	}

	// The faults stop; the desired state stops changing (pending same-UID
	// re-adds are applied now).
	s.srv.ClearFaults()
	s.mirrors.setFailRate(0)
	s.timed = nil
	s.liveFaults = 0
	s.runtimeUp()
	stopAt := time.Now()
	for _, st := range s.statics {
		if !st.readdAt.IsZero() {
			s.staticReadd(st)
		}
	}
	for _, a := range s.apis {
		if a.readd != nil {
			s.apiReadd(a)
		}
	}
	s.tr.add("faults-stop", "settling, bound %s", *flagSettle)
	poll := time.NewTicker(100 * time.Millisecond)
	defer poll.Stop()
	deadline := stopAt.Add(*flagSettle)
	for {
		s.collectFinished()
		if !s.flushAPI() || !s.checkViolations() {
			return false
		}
		problems := s.finalProblems()
		if len(problems) == 0 {
			s.settled = time.Since(stopAt)
			break
		}
		if time.Now().After(deadline) {
			for _, p := range problems[:min(len(problems), 40)] {
				t.Errorf("after the faults stopped (%s): %s", *flagSettle, p)
			}
			if len(problems) > 40 {
				t.Errorf("... and %d more problems", len(problems)-40)
			}
			return false
		}
		<-poll.C
	}
	return s.checkViolations()
}

// shutdown stops the agent, the checker and fakecri.
func (s *soak) shutdown() {
	if s.ar != nil {
		if err := s.ar.stop(); err != nil {
			s.t.Error(err)
		}
		s.ar = nil
	}
	_ = s.inv.checker.Close()
	s.srv.Stop()
	_ = os.RemoveAll(s.sockDir)
}

// checkViolations fails the test if a continuous check found something.
func (s *soak) checkViolations() bool {
	ps := s.inv.problems()
	for _, p := range ps {
		s.t.Error(p)
	}
	return len(ps) == 0
}

func (s *soak) between(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(s.rng.Int64N(int64(hi-lo)+1))
}

func (s *soak) after(at time.Time, do func()) {
	s.timed = append(s.timed, timedAction{at: at, do: do})
}

func (s *soak) runDue(now time.Time) {
	var keep []timedAction
	var due []timedAction
	for _, a := range s.timed {
		if now.Before(a.at) {
			keep = append(keep, a)
		} else {
			due = append(due, a)
		}
	}
	s.timed = keep
	for _, a := range due {
		a.do()
	}
	for _, st := range s.statics {
		if !st.readdAt.IsZero() && !now.Before(st.readdAt) {
			s.staticReadd(st)
		}
	}
	for _, a := range s.apis {
		if a.readd != nil && !now.Before(a.readdAt) {
			s.apiReadd(a)
		}
	}
}

func (s *soak) runtimeUp() {
	if s.srv.IsUp() {
		return
	}
	if err := s.srv.Up(); err != nil {
		s.t.Errorf("fakecri Up: %v", err)
		return
	}
	s.tr.add("runtime-up", "")
}

// startAgent starts a new agent incarnation and hands it the API pods.
func (s *soak) startAgent() bool {
	ar, err := startAgent(s.end, s.dir, s.tm, s.inv, s.mirrors.client(), s.log)
	if err != nil {
		s.t.Errorf("start agent: %v", err)
		return false
	}
	s.ar = ar
	s.apiDirty = true
	return s.flushAPI()
}

// restartAgent stops the agent, changes the desired state while it is down
// (pods removed then are orphans in the runtime), and starts a new one.
func (s *soak) restartAgent(now time.Time) bool {
	s.tr.add("agent-stop", "")
	if err := s.ar.stop(); err != nil {
		s.t.Error(err)
		s.ar = nil
		return false
	}
	// Each incarnation keeps its own statuses; pods finished by the old
	// one stay finished.
	s.ar = nil
	for range s.rng.IntN(4) {
		s.step(now)
	}
	s.tr.add("agent-start", "")
	return s.startAgent()
}

// flushAPI pushes the API snapshot if it changed.
func (s *soak) flushAPI() bool {
	if _, v := s.mirrors.snapshot(); v != s.mirrorsPushed {
		s.apiDirty = true
	}
	if !s.apiDirty || s.ar == nil {
		return true
	}
	s.apiDirty = false
	if err := s.ar.push(s.apiSnapshot()); err != nil {
		s.t.Error(err)
		return false
	}
	return true
}

// collectFinished plays the API server: a gracefully deleted pod whose
// final status was published (PodFinished) is deleted for good; a pod that
// ran to completion keeps its final phase, which later agents then see.
func (s *soak) collectFinished() {
	finished := s.inv.takeFinished()
	if len(finished) == 0 {
		return
	}
	for _, a := range s.apis {
		if a.pod == nil {
			continue
		}
		f, ok := finished[a.pod.UID]
		switch {
		case !ok:
		case a.deleting():
			s.tr.add("api-gc", "%s", a.pod.UID)
			a.pod = nil
			s.apiDirty = true
		case isJob(a.pod) && a.pod.Status.Phase == "" && (f.phase == v1.PodSucceeded || f.phase == v1.PodFailed) &&
			f.incarnation == a.pod.Annotations[incarnationKey]:
			p := a.pod.DeepCopy()
			p.Status.Phase = f.phase
			s.tr.add("api-completed", "%s %s", p.UID, f.phase)
			a.pod = p
			s.apiDirty = true
		}
	}
	if s.ar != nil && s.ar.rep != nil {
		workers := s.ar.Workers()
		s.ar.rep.forget(func(uid types.UID) bool { _, ok := workers.PodInfo(uid); return ok })
	}
}
