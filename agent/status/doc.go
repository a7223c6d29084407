// Package status is a node's pod status manager, the kubelet's
// status.Manager done so that the pod lifecycle never waits on the API
// server.
//
// # What it does
//
// SetPodStatus and PodFinished only record the newest status of a pod
// (versioned: the newest call wins) and return at once; they never do I/O
// on the caller's goroutine and never fail, so a status that cannot be
// written never fails a sync nor keeps a pod from finishing. Their
// signatures are those of agent.StatusReporter, so a *Manager is one.
//
// Run writes in the background:
//
//   - Only the newest status of a pod is written. A pod is queued at most
//     once; statuses recorded while it waits or while its write is in flight
//     coalesce into one more write of the newest.
//   - Workers (default 10) writes are in flight at most: at the kubelet's
//     client limits (QPS 50, burst 100) that keeps the rate limiter busy as
//     long as a write takes under 200 ms.
//   - A write is ONE request: a strategic merge patch of the status
//     subresource from the pod as last seen to the new status, carrying
//     metadata.uid so that the server refuses it when another pod has the
//     name now. The pod as last seen is the newer (by resource version) of
//     the pod the agent's watch gave (Options.Pods, the agent's
//     podmanager.Manager) and the object the previous PATCH returned; no GET
//     before a write. When the server answers Invalid (its answer, v1.37, to
//     a metadata.uid that differs: "field is immutable") or Conflict, the pod
//     is read once: a new UID means gone; after a Conflict the patch is made
//     again from the pod read.
//   - A status equal to the one in the API (times to the second, conditions
//     in any order) costs no request.
//   - Transient statuses are held (Options.HoldTransient, default 1 s): a
//     pod's first status while nothing of it has run (Pending, every
//     container waiting: what the agent records before it starts the
//     containers), and a terminal phase recorded while the pod may still
//     run containers (the agent's SyncTerminatingPod status, followed at
//     once by PodFinished). The status that follows replaces the held one
//     and is written alone: a pod that starts in under a second costs one
//     PATCH (Running), a pod stopped costs one PATCH (its terminal phase)
//     before its DELETE. A hold ends HoldTransient after the first
//     transient status at the latest, so a slow image pull still shows
//     ContainerCreating.
//   - The patch keeps what other components own: qosClass,
//     nominatedNodeName, resourceClaimStatuses and the conditions whose type
//     the node does not own (PodScheduled, DisruptionTarget, readiness
//     gates); the node owns PodReadyToStartContainers, Initialized,
//     ContainersReady and Ready.
//   - Every ReconcileInterval (default 10 s, the kubelet's syncPeriod) a full
//     pass queues every pod whose status in the API (as last seen) differs
//     from the one the Manager would write now: drift from another writer,
//     a terminal phase that was held back, a static pod whose mirror pod
//     appeared, a finished pod whose deletion arrived.
//   - A failed write is retried after a per-pod back-off (200 ms doubling to
//     10 s, plus up to half of it at random), with the newest status then.
//
// # Promises
//
//   - A terminal phase (Succeeded, Failed) is never written while
//     PodStates.CouldHaveRunningContainers is true for the pod: the phase,
//     reason and message in the API are kept (Pending when none), the rule of
//     agent.MergeStatus, asked when the write is made. A terminal phase in
//     the API is final: a later non-terminal status keeps it.
//   - A pod being deleted (deletion timestamp in the pod given or as last
//     seen) is deleted from the API server, with grace period 0 and a UID
//     precondition, only after its terminal status is in the API AND
//     PodFinished was called for it AND CouldHaveRunningContainers is false.
//     A pod that finished before its deletion arrived is deleted once the
//     agent calls PodFinished again with the updated pod, or at the next
//     reconcile when Options.Pods shows the deletion.
//   - Static pods: the status goes to the mirror pod (the newest from
//     Options.Pods, else the one given); without a mirror pod nothing is
//     written until one exists. Mirror pods are never deleted here.
//   - A pod whose API object is gone, answered NotFound, Forbidden (the Node
//     authorizer's answer for a pod gone or bound elsewhere) or with a new
//     UID under its name, is dropped: its statuses are recorded but never
//     written again (IsGone) until Forget or RemoveOrphanStatuses. For a
//     static pod only that mirror pod is dropped; a new mirror pod is
//     written.
//
// # Metrics
//
// With Options.Registerer set (namespace DefaultMetricsNamespace "kubelet"
// unless Options.MetricsNamespace says otherwise, as package metrics):
//
//	status_writes_total{result}          counter    written, unchanged, no_mirror, gone, error
//	status_write_duration_seconds        histogram  one write (requests, conflict retry)
//	status_queue_length                  gauge      pods queued, held or backing off
//	status_pods_dropped_total{reason}    counter    not_found, forbidden, uid_changed
//	status_pod_deletions_total           counter    finished pods deleted from the API
//	status_reconcile_writes_total        counter    pods the reconcile found drifted
//
// InstrumentConfig wraps a rest.Config so that every request of a client
// made from it counts in api_requests_total{verb, resource, code}; apply it
// to the agent's whole client.
//
// # Differences from the kubelet
//
// The kubelet's manager writes from one goroutine, one pod after another,
// reads the pod with a GET before each patch (two requests a write), and
// retries a failed pod only at the next syncPeriod. Here: no GET, bounded
// parallel writes, a set of pods to write instead of a channel (nothing is
// dropped, memory is one entry per pod), a per-pod
// jittered back-off, transient statuses held for the status that follows
// them, and Forbidden is understood as "gone" for a node's credentials. The kubelet also checks container state transitions
// (terminated containers never go back to running) and computes
// lastTransitionTime of conditions; here the status given is written as is
// (the agent computes it). The kubelet's pod resize and observedGeneration
// fields are the agent's to fill. Events are not this package's job.
package status
