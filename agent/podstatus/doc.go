// Package podstatus computes a pod's API status from what the container
// runtime shows, as the kubelet writes it: its generateAPIPodStatus,
// convertToAPIContainerStatuses and getPhase, the conditions of its status
// manager and the started/ready flags of its prober manager, in one pure
// function.
//
//	in := podstatus.Input{Pod: pod, Runtime: podStatus, Previous: published,
//		NodeIPs: []string{"10.0.0.7"}, Now: clock.Now()}
//	status := podstatus.Generate(in)
//
// Generate reads only its Input: no clock, no runtime, no API server, no
// prober. The caller passes the time, the previously published status (which
// keeps lastTransitionTime, startTime, restart counts and a terminal phase
// stable across calls), the node's IPs, the probe results
// (Input.ProbeResult; without one, probes in the spec gate nothing), and
// what the runtime knows of pending restarts
// (Input.BackOff for the crash-loop back-off, Input.StartFailures for other
// failed starts). It is safe to call from any goroutine.
//
// # What it writes
//
//   - containerStatuses (sorted by name) and initContainerStatuses (in spec
//     order, sidecars included): containerID (scheme://id), image, imageID,
//     restartCount, started, ready, state and lastState (the instance before
//     the newest). A container with no instance yet is Waiting
//     ContainerCreating, or PodInitializing in a pod with init containers;
//     one whose restart is deferred is Waiting CrashLoopBackOff with the
//     runtime's message, one whose last start failed is Waiting with that
//     failure's reason and message (ErrImagePull, ImagePullBackOff,
//     CreateContainerConfigError, ...; CrashLoopBackOff wins); a terminated one has reason Completed, Error or the
//     runtime's (OOMKilled) and its termination message.
//   - ephemeralContainerStatuses (sorted by name), the same way: Waiting
//     (ContainerCreating, or the failure of its start) until it starts,
//     Running, Terminated; never started nor ready (no probes), and the
//     restart count stays 0 (it is never restarted). They count for
//     neither the phase nor any condition, and Terminal leaves them as
//     the runtime shows them (the kubelet's TerminatePod does too).
//   - phase: getPhase with init containers and sidecars (Pending while
//     initializing; an init container that failed and may not restart
//     fails the pod; sidecars never hold the pod's completion). A terminal
//     phase, once reached or shown by the API, is never left.
//   - conditions PodReadyToStartContainers, Initialized, Ready (readiness
//     gates included), ContainersReady and PodScheduled, with
//     observedGeneration; lastTransitionTime changes only when the status
//     does. Conditions owned by others (in Pod.Status) are kept.
//   - hostIP(s), podIP(s) (the node's for a pod on the node's network),
//     startTime (set once), qosClass, observedGeneration.
//
// With Input.Terminal (nothing runs or will run), containers that did not
// finish are terminated with ContainerStatusUnknown, exit 137, and the phase
// is Succeeded or Failed. The seed's rule holds: in a pod whose init
// containers have not all run, regular containers and init containers not
// yet attempted are never reported failed or ContainerStatusUnknown; they
// stay Waiting PodInitializing.
//
// # Compared with the kubelet
//
// Not generated: resources and allocatedResources (in-place resize),
// resize conditions, volume mount statuses (kept from the previous status),
// user and stopSignal, AllContainersRestarting
// (RestartAllContainers is alpha), resource health. Feature gates are taken
// at their 1.37 defaults (ContainerRestartRules, PodObservedGenerationTracking,
// PodReadyToStartContainersCondition and PodLevelResources on).
//
// Deliberate differences, each said where it is implemented:
//   - once every regular container stopped for good, the phase is terminal
//     even while sidecars run (the kubelet says Running until its runtime
//     manager stops them; in podlife the pod worker stops them, after the
//     terminal phase);
//   - with Terminal, an init container that was never attempted stays
//     Waiting even when it is the first one (the kubelet marks the first);
//   - a created, not yet started container is Waiting ContainerCreating
//     (the kubelet leaves the reason empty);
//   - an exited ephemeral container never shows an old start failure over
//     its terminated state, and its restart count does not grow when the
//     runtime loses it (the kubelet applies the pod's restart policy to
//     ephemeral containers there, though it never restarts them);
//   - a sandbox on the node's network counts as networked, whatever
//     spec.hostNetwork says (runtime/cri can run every pod on the node
//     network), and its pod gets the node's IPs;
//   - started and ready are computed before the phase, so a sidecar counts
//     as started in the sync that sees it start (the kubelet's phase lags a
//     sync behind);
//   - a container's started flag carries over from the previous status only
//     for the same container instance (the kubelet keys it by name);
//   - the pod's "active" regular containers (those of the newest sandbox)
//     are the ones created no earlier than the newest sandbox, since
//     runtime.PodStatus does not tie a container to its sandbox.
package podstatus
