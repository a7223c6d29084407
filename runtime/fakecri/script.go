package fakecri

import (
	"container/heap"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"
)

// ContainerScript says what a started container's "process" does
// (Options.Script): whether and when it exits by itself, and how long it
// takes to exit after StopContainer.
type ContainerScript struct {
	// Exit makes the container exit by itself with ExitCode, RunFor after
	// it started (on Options.Clock; 0: at once, as "exit N"). The reason
	// is "Completed" for 0, "Error" otherwise. The exit does not happen
	// when the container has exited or been removed before.
	Exit     bool
	ExitCode int32
	RunFor   time.Duration
	// TermDelay is how long the container takes to exit after
	// StopContainer (its SIGTERM): it then exits with TermExitCode (reason
	// as for ExitCode). When the stop's timeout is shorter, it is killed at
	// the timeout instead (137, reason "Error", as a "hang" container).
	// Zero: it exits at once, with TermExitCode.
	TermDelay    time.Duration
	TermExitCode int32
}

// exitReason is the reason of a container that exits by itself with code.
func exitReason(code int32) string {
	if code == 0 {
		return "Completed"
	}
	return "Error"
}

// scriptLocked asks Options.Script what a starting container does and
// keeps the answer with it; nil without a script or when the script leaves
// the container to its arguments.
func (s *Server) scriptLocked(sb *sandbox, c *container) *ContainerScript {
	if s.opts.Script == nil {
		return nil
	}
	sc, ok := s.opts.Script(sb.config, c.config)
	if !ok {
		return nil
	}
	return &sc
}

// Timed exits. A scripted container that exits RunFor after its start has
// a timedExit in the server's exit queue, a heap by time. One scheduler
// goroutine, owned by the server, waits on one timer of Options.Clock for
// the earliest exit; it runs only while exits are pending, so that a fake
// clock sees a single waiter however many containers are timed, and it is
// started and ended under s.mu by scheduleExitsLocked:
//
//   - StartContainer queues the exit (armExitLocked);
//   - any exit of the container (ExitContainer, StopContainer,
//     StopPodSandbox, StopSandbox) and its removal (RemoveContainer,
//     RemovePodSandbox, Forget) take it out of the queue
//     (cancelExitLocked);
//   - Stop drops every pending exit, ends the scheduler and waits for it.
//
// Down and Up leave the queue alone: a container's process outlives a
// restart of its runtime daemon, so it exits on time while the server is
// down, and Up finds it exited.
//
// The timer is only reset under s.mu, after Stop and a drain of its
// channel, so that at most one tick waits in the channel: a fake clock's
// Step, which sends a tick while holding the clock's lock, never blocks on
// it. Whoever resets the timer first exits the containers that are due,
// so a drained tick loses nothing.

// timedExit is a container's pending scripted exit, an entry of the exit
// queue.
type timedExit struct {
	c     *container
	at    time.Time
	code  int32
	seq   uint64 // orders exits due at the same time by arming
	index int    // in exitQueue
}

// exitQueue is a min-heap of timed exits by time (container/heap).
type exitQueue []*timedExit

func (q exitQueue) Len() int { return len(q) }
func (q exitQueue) Less(i, j int) bool {
	if !q[i].at.Equal(q[j].at) {
		return q[i].at.Before(q[j].at)
	}
	return q[i].seq < q[j].seq
}
func (q exitQueue) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].index, q[j].index = i, j
}
func (q *exitQueue) Push(x any) {
	te := x.(*timedExit)
	te.index = len(*q)
	*q = append(*q, te)
}
func (q *exitQueue) Pop() any {
	old := *q
	te := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	return te
}

// armExitLocked queues c's exit with code at the given time. A stopped
// server arms nothing.
func (s *Server) armExitLocked(c *container, at time.Time, code int32) {
	if s.stopped {
		return
	}
	s.cancelExitLocked(c)
	s.exitSeq++
	c.timedExit = &timedExit{c: c, at: at, code: code, seq: s.exitSeq}
	heap.Push(&s.exitQueue, c.timedExit)
	s.scheduleExitsLocked()
}

// cancelExitLocked takes c's pending timed exit, if any, out of the queue.
func (s *Server) cancelExitLocked(c *container) {
	te := c.timedExit
	if te == nil {
		return
	}
	c.timedExit = nil
	heap.Remove(&s.exitQueue, te.index)
	s.scheduleExitsLocked()
}

// scheduleExitsLocked brings the timed exits up to date with the clock:
// it exits the containers whose time has come, then points the
// scheduler's timer at the next exit, starting the scheduler when none
// runs, or ends the scheduler when no exit is pending.
func (s *Server) scheduleExitsLocked() {
	now := s.opts.Clock.Now()
	for len(s.exitQueue) > 0 && !s.exitQueue[0].at.After(now) {
		te := heap.Pop(&s.exitQueue).(*timedExit)
		te.c.timedExit = nil // exitLocked has nothing to cancel
		if te.c.state == runtimeapi.ContainerState_CONTAINER_RUNNING {
			s.exitLocked(te.c, te.code, exitReason(te.code), "")
		}
	}
	if len(s.exitQueue) == 0 {
		s.endExitSchedulerLocked()
		return
	}
	d := s.exitQueue[0].at.Sub(now)
	if s.exitTimer == nil {
		t, stop := s.opts.Clock.NewTimer(d), make(chan struct{})
		s.exitTimer, s.exitStop = t, stop
		s.exitsDone.Add(1)
		go s.runExits(t, stop)
		return
	}
	s.exitTimer.Stop()
	select {
	case <-s.exitTimer.C():
	default:
	}
	s.exitTimer.Reset(d)
}

// endExitSchedulerLocked stops the scheduler's timer and tells its
// goroutine to return.
func (s *Server) endExitSchedulerLocked() {
	if s.exitTimer == nil {
		return
	}
	s.exitTimer.Stop()
	close(s.exitStop)
	s.exitTimer, s.exitStop = nil, nil
}

// stopExitsLocked drops every pending timed exit (the containers stay as
// they are) and ends the scheduler; Stop then waits for its goroutine.
func (s *Server) stopExitsLocked() {
	for _, te := range s.exitQueue {
		te.c.timedExit = nil
	}
	s.exitQueue = nil
	s.endExitSchedulerLocked()
}

// runExits is the scheduler goroutine: at each tick of t it brings the
// timed exits up to date, until stop closes or another scheduler replaced
// it.
func (s *Server) runExits(t clock.Timer, stop <-chan struct{}) {
	defer s.exitsDone.Done()
	for {
		select {
		case <-t.C():
		case <-stop:
			return
		}
		s.mu.Lock()
		current := s.exitTimer == t
		if current {
			s.scheduleExitsLocked()
		}
		s.mu.Unlock()
		if !current {
			return
		}
	}
}
