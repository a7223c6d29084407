// Package podworkertest has fakes and helpers for testing code built on
// podworker, and podworker itself.
//
// FakeSyncer records every Syncer call (in order, per pod), checks that calls
// for one pod never overlap, and can be scripted: fail a method N times,
// report a pod terminal, block calls behind a Gate until released (or until
// the call's context is cancelled, which it then returns), or run any Hook.
//
// WaitFor polls a condition until a deadline; use it together with a fake
// clock (k8s.io/utils/clock/testing) so that tests step time rather than
// sleep.
//
// Limits: FakeSyncer keeps every call in memory (do not use it for
// million-call benchmarks), and a Hook runs while the call is recorded as in
// flight, so a Hook that blocks forever blocks that pod.
package podworkertest
