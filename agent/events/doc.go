// Package events records a node agent's Kubernetes events (Pulling,
// Started, Killing, BackOff, FailedSync, ...) to the API server, so that
// `kubectl describe pod` shows what happened on the node.
//
// A Recorder is a client-go record.EventRecorder: hand it to runtime/cri
// (cri.Options.Recorder) and to the agent. It sends through client-go's
// tools/record broadcaster (which aggregates repeated events into counts, as
// for the kubelet) with the source component "podlife" and the node's name
// as host, behind its own token bucket: an event over the rate is dropped
// and counted, never queued without bound and never blocking the caller (a
// pod worker). The kubelet sends events through a client of their own with
// QPS 50 and burst 100 (--event-qps, --event-burst); Options.QPS and
// Options.Burst default to the same, and the client should have its own rate
// limits so that events never take the status writes' share.
//
// The broadcaster runs only inside Run: events recorded before Run starts
// or after it returns are dropped and counted (reason "not_running").
//
// Metrics (Options.Registerer; namespace Options.MetricsNamespace, default
// "podlife"): events_recorded_total{type} and events_dropped_total{reason}.
package events
