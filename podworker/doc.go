// Package podworker is podlife's pod lifecycle engine: the kubelet's pod
// worker, cut free from the kubelet.
//
// Every pod goes through
//
//	                 UpdatePod (create)
//	                        │
//	                        ▼
//	┌─────────────── waiting ───────────────┐   static pods wait here while
//	│                   │ allowed to start   │   another UID holds the full name
//	│                   ▼                    │
//	│  ┌──────────► syncing ◄─────┐          │   SyncPod; re-run every
//	│  │  resync /      │  └──────┘          │   ResyncInterval, retried
//	│  │  retry         │                    │   with backoff on error
//	│  └────────────────┤                    │
//	│  kill, deletion,  │ SyncPod isTerminal │ killed before it started
//	│  terminal phase,  │                    │ (non-static: still runs
//	│  orphaned         ▼                    │  SyncTerminatingPod)
//	└───────────► terminating ◄──────────────┘
//	                    │  SyncTerminatingPod (or SyncTerminatingRuntimePod
//	                    │  for a pod known only to the runtime, which is then
//	                    │  forgotten) until it succeeds; the grace period only
//	                    │  shrinks and a shorter one cancels the call in flight
//	                    ▼
//	               terminated      CompletedCh channels close; no container
//	                    │          runs or will start
//	                    │  SyncTerminatedPod until it succeeds
//	                    ▼
//	                finished       a tombstone: updates are ignored; a static
//	                    │          pod's full name is free for the next UID
//	                    │  SyncKnownPods without the pod (or with a restart
//	                    ▼  requested by a create during termination)
//	                forgotten      the caller may create the UID again
//
// A pod in a terminal phase on first sight whose runtime status shows nothing
// running starts in terminated. The status must be one the cache has seen
// (an entry for the pod, or a whole listing of the runtime): before the
// first listing the pod starts in terminating, and the kill reads the
// runtime. A static pod killed while waiting goes to
// finished with no Syncer call at all.
//
// # Design
//
// The engine is split the way etcd's raft is. Machine is a pure,
// synchronous state machine for one pod: (state, event, now) → (new state,
// Work, Effects). It has no locks, goroutines, clock or I/O, and it rejects
// illegal events with errors. Workers is a thin driver around one Machine
// per pod: it keeps them in 64 independently locked shards, runs a pod's
// Syncer calls on a goroutine held only while the pod has work (so an idle
// pod costs only its record, about 160 bytes), never calls the Syncer under
// a lock, and
// keeps one timer for all delayed re-deliveries (resyncs and retries) in a
// min-heap. Users can step a Machine directly in tests; see the
// podworkertest package for a recording FakeSyncer.
//
// # Guarantees
//
//   - Syncer calls for one pod never overlap and run in order; calls for
//     different pods run concurrently.
//   - Updates coalesce: only the newest pending update is kept (it is moved
//     to "active" only when the pod's goroutine picks it up, so queries and
//     SyncKnownPods never see an update before the worker acts on it). A
//     kill is never lost, because termination is state, not payload; kill
//     options merge: the shortest grace period wins, it never grows, it is at
//     least one second, and every CompletedCh is closed.
//   - A kill cancels the context of a SyncPod in flight; a shorter grace
//     period cancels a SyncTerminatingPod in flight, and the retry gets the
//     shorter value.
//   - The library owns its retries. After a Syncer error (or panic) the call
//     is retried after BackOffPeriod (jittered, optionally doubling up to
//     MaxBackOffPeriod, or after a RetryAfter hint), in every state, with no
//     further call from the caller. This removes the kubelet's
//     stuck-terminating bug class (a force-deleted pod whose kill hit a
//     runtime error and was never tried again).
//   - Every pod with work gets a goroutine of its own at once: a slow or
//     blocked Syncer call of one pod never delays another pod. Goroutines
//     are reused: one whose pod has no more work takes the next pod that
//     has, or parks (at most max(2, GOMAXPROCS) park), and a burst of pods
//     starts new goroutines only as fast as the scheduler runs them, so the
//     Go runtime is not left holding thousands of dead goroutines' stacks.
//   - Run(ctx) cancels the Syncer calls in flight when ctx ends and returns
//     only after every pod goroutine, parked ones included, has exited. No
//     Syncer method is called before Run.
//
// # Differences from the kubelet
//
// Besides owning retries: a replayed termination keeps its effective grace
// period (the kubelet passes nil on some orphan paths); a static pod waiting
// for its full name starts by itself when the name frees up; the status
// cache wait is bounded (StatusWaitTimeout); every CompletedCh is closed,
// including for pods already finished; a panicking Syncer is recovered and
// retried; a pod whose spec leaves TerminationGracePeriodSeconds unset gets
// the API default of 30 seconds; an update's MirrorPod replaces the last one
// even when nil (the kubelet keeps a mirror that may have been deleted).
package podworker
