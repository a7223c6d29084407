// Package prober runs the startup, liveness and readiness probes of a
// node's containers, as the kubelet's prober does, and reports their results.
// It decides nothing about containers: it tells its user (the agent) when a
// container became ready or not ready, and when one failed its liveness or
// startup probe; killing the container and syncing the pod is the user's.
//
// # Use
//
// Make a Manager with New and run it with Run. After each sync of a pod,
// call SetContainers with the pod, its IP and its running containers (name →
// instance ID and start time); then UpdatePodStatus to set the Started and
// Ready fields of the pod's container statuses. When a pod starts
// terminating, call StopLivenessAndStartup (its readiness probes go on, so
// that it turns not ready); when it has terminated, RemovePod. Every change
// of a probe's published result is an Update to Options.OnResult: sync the
// pod on every Update. In the sync, Unhealthy lists the running instances
// that failed their liveness or startup probe: kill each (with its
// TerminationGracePeriodSeconds when set) and let the restart policy restart
// it; an instance stays listed until SetContainers shows a new one, so a
// failed kill is retried by the next sync.
//
// # Rules (the kubelet's)
//
//   - A probe runs every periodSeconds (default 10), from initialDelaySeconds
//     after its container started; each probe has timeoutSeconds (default 1)
//     to answer. Zero fields take the API server's defaults (a pod from a
//     manifest file is not defaulted); successThreshold is 1 for liveness and
//     startup probes whatever the spec says.
//   - A result is published after successThreshold (default 1) successes in
//     a row, or failureThreshold (default 3) failures in a row. A probe that
//     could not be run (a runtime error, a named port that does not exist, no
//     Options.Exec) is Unknown: it neither counts nor breaks a run.
//   - Readiness is Failure until the first published success; liveness is
//     Success until a published failure; startup is Unknown until a verdict.
//   - The startup probe gates the other two: liveness and readiness do not
//     run, and the container is neither started nor ready, until it passed.
//     Once it passed it does not run again for that instance.
//   - After a liveness or startup failure the probe holds: it runs no more
//     until a new instance of the container (the one being killed would only
//     fail again).
//   - A new instance (a new container ID in SetContainers) starts every
//     probe of the container over; a container that is not running is not
//     probed, not started and not ready.
//   - Handlers: exec runs the command through Options.Exec (CRI ExecSync);
//     exit 0 passes, a command that outlives the timeout fails. httpGet asks
//     http or https (without certificate verification) on the pod IP (or the
//     probe's host) and a port given by number or by the name of a container
//     port; a status in [200, 400) passes; redirects are followed only to
//     the same host (a redirect elsewhere is a success with a warning, not
//     followed); the body kept is at most 10 KiB; the User-Agent is
//     kube-probe/1.37 unless
//     the probe's headers set one; a "Host" header sets the request's host.
//     tcpSocket passes when a connection opens. grpc calls
//     grpc.health.v1.Health/Check with the probe's service, without TLS;
//     SERVING passes.
//   - The containers found when the manager starts get their first probe
//     spread over a period (Options.Rand), so that a restarted agent does not
//     probe every container at once.
//
// # Cost
//
// One goroutine per probe, asleep on a timer between probes (or on a channel
// while its container is not running or waits for its startup probe). 1,000
// pods with an exec liveness and readiness probe every second (2,000 probes/s
// on a fake runtime) cost about 0.05 of a core, about 0.2 through a CRI
// runtime's gRPC client: see docs/benchmarks.md.
//
// # Metrics
//
// With Options.Registerer, the kubelet's prober_probe_total{probe_type,
// result, container, pod, namespace, pod_uid} (result successful, failed or
// unknown) and prober_probe_duration_seconds{probe_type, container, pod,
// namespace}. A removed pod's series are deleted.
//
// # Compared with the kubelet
//
// The same rules, with these differences:
//   - Probing is scheduled from the container's start time: the first probe
//     runs exactly initialDelaySeconds after the start, not at the first tick
//     of a ticker after it; later probes every periodSeconds from there.
//   - Exec probes do not expand $(VAR) references in the command against the
//     container's environment.
//   - Liveness and startup failures are reported, not acted upon: there is
//     no event and no kill here. The kubelet's results managers and its
//     status manager hook are replaced by OnResult and UpdatePodStatus.
//   - The container start time and the pod IP come from SetContainers, not
//     from a status cache the prober reads.
//   - No "Warning" result: a redirect to another host is a Success, and
//     Options.OnWarning hears of it with the kubelet's message at every
//     probe that ends so (the kubelet records a ProbeWarning event).
package prober
