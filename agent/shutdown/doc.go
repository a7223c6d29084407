// Package shutdown shuts a node down gracefully, as the kubelet's node
// shutdown manager (pkg/kubelet/nodeshutdown): the pods are stopped in
// order of priority, each group within its share of the time the node
// gives, their statuses say why, and the Node turns not ready.
//
// # What it does
//
// The configuration is the kubelet's, opt-in: Options.ShutdownGracePeriod
// (shutdownGracePeriod) with Options.ShutdownGracePeriodCriticalPods
// (shutdownGracePeriodCriticalPods, default 0), which make two groups —
// pods below SystemCriticalPriority (2,000,000,000) get ShutdownGracePeriod
// minus the critical pods' part, then the critical pods get theirs — or
// Options.ShutdownGracePeriodByPodPriority (shutdownGracePeriodByPodPriority),
// any number of groups. A pod belongs to the group of the highest priority
// not above its own (the lowest group when it is below them all; a pod
// without spec.priority counts as 0). Grace periods are whole seconds.
//
// Manager.Shutdown, from then on and for good:
//
//   - refuses new pods (AdmitPod: reason NodeShutdown, "Pod was rejected as
//     the node is shutting down."), and ShutdownStatus returns
//     ErrShuttingDown;
//   - turns the Node's Ready condition False, reason KubeletNotReady,
//     message "node is shutting down" (ConfigureNode, an agent/node
//     Provider), and calls Options.SyncNode to write it at once;
//   - records the Node's event NodeShutdown ("Shutdown manager detected
//     shutdown event") when given a recorder;
//   - stops the active pods (Options.ActivePods) group by group, lowest
//     priority first: every pod of a group at once (Options.KillPod), each
//     with its group's grace period or its own terminationGracePeriodSeconds
//     when shorter, then waits until they have all stopped or the group's
//     grace period has passed, whichever comes first, before the next group.
//     A group without pods takes no time;
//   - has the status of each stopped pod say Failed (unless it had
//     Succeeded), reason Terminated, message "Pod was terminated in response
//     to imminent node shutdown.", with a DisruptionTarget condition (reason
//     TerminationByKubelet).
//
// It returns once every group is done and SyncNode has returned: at most
// Budget (the sum of the groups' grace periods) after it began, plus the
// time KillPod takes to return once its context ends. What comes next —
// waiting for the statuses to reach the API server, ending the agent,
// powering the machine off — is the caller's (package agent:
// Agent.ShutdownNode).
//
// # Costs
//
// Nothing until Shutdown; then one goroutine per pod of the group under
// way, and one for SyncNode: about 10 µs and 14 allocations per pod on a
// loaded 2-core machine (BenchmarkShutdown, docs/benchmarks.md), nothing
// beside the pods' grace periods. Run only reads the state file once.
//
// # Failures
//
// A pod that does not stop within its group's grace period is counted as
// failed (Result.Failed) and left to its pod worker, which goes on
// stopping it; the next group starts. KillPod must return once its
// context ends (its group ran out of time, or Shutdown's context ended).
// A state file that cannot be read or written is logged, and only the
// metrics lose the last shutdown's times.
//
// # Metrics
//
// With Options.Registerer (prefixed with Options.MetricsNamespace, default
// "kubelet"), the kubelet's: graceful_shutdown_start_time_seconds and
// graceful_shutdown_end_time_seconds, the times of the last shutdown (Unix
// seconds; the end is 0 while one runs), kept across restarts through
// Options.StateFile (the kubelet's ROOT/graceful_node_shutdown_state, the
// same JSON).
//
// # Compared with the kubelet
//
// Same groups, order, grace periods, reasons, messages, conditions,
// Node condition, admission, event and metrics. Differences:
//
//   - The trigger: the kubelet holds a systemd-logind "delay" inhibitor lock
//     and hears of the machine's shutdown over D-Bus; here the embedding
//     program calls Shutdown (the example agent does on SIGUSR1: SIGTERM is
//     what a service manager sends for a plain stop or restart, which must
//     leave the pods running, as a kubelet restart does), and nothing
//     talks to logind. A shutdown is
//     never cancelled: the kubelet takes a new inhibitor lock when logind
//     says a shutdown was cancelled, which has no counterpart here.
//   - The kubelet sets the end time into its start-time gauge (a slip);
//     here the end time goes to the end-time gauge.
//   - The kubelet waits, after a group's pods stopped, for their volumes to
//     be unmounted; here KillPod decides what "stopped" includes.
//   - A pod whose kill fails or times out is counted in Result; the kubelet
//     only logs it.
package shutdown
