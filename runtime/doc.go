// Package runtime describes the world as the container runtime sees it: the
// pods and containers that actually exist on the node (Pod, Container), their
// observed status (PodStatus), the Runtime interface a node agent's Syncer
// drives, a status cache (Cache) that the pod workers consult before each
// sync so that a decision is never taken on data older than the previous one,
// and the Relister that fills that cache.
//
// The package imports no gRPC. The CRI adapter that implements Runtime over a
// real runtime (containerd, CRI-O) lives in runtime/cri; an in-process CRI
// server for tests and demos lives in runtime/fakecri.
//
// # Errors
//
// Runtime implementations wrap one of the sentinel errors (ErrNotFound,
// ErrUnavailable, ErrDeadlineExceeded, ErrAlreadyExists, ErrInvalidArgument,
// ErrFailedPrecondition, ErrUnimplemented, ErrCanceled, ErrBackOff,
// ErrUnknown) together with their own error; classify with errors.Is.
// IsRetryable groups the classes that go away by themselves.
//
// A container that could not be started is reported as a *StartError in
// SyncPod's error, with the kubelet's waiting reason (ErrImagePull,
// ImagePullBackOff, CreateContainerConfigError, RunContainerError, ...)
// and message; StartFailures collects them, as BackOffs collects the
// crash-loop back-offs (*BackOffError), so that the caller can show them
// in the container's status.
//
// # Relister
//
// A Relister is the kubelet's PLEG, simplified: every Interval (default 1s)
// and on demand (ForceRefresh, ForceUpdateIfOlder) it lists every pod with
// Runtime.GetPods(ctx, true), compares each container's and sandbox's state
// with the previous listing, reads the status of each pod that changed (or
// whose status could not be read last time), stores it with Cache.Set, then
// stamps the whole cache with the listing's start time (Cache.UpdateTime), so
// that Cache.GetNewerThan returns for every pod, and finally reports each
// change through RelisterOptions.OnEvent (ContainerStarted, ContainerDied,
// ContainerRemoved, ContainerChanged, PodSync). With a ListingCache (the
// MemoryCache is one), every pod but the changed ones is stamped as soon as
// the listings are compared (ListingCache.UpdateTimeExcept): a worker waiting
// on a pod that did not change does not wait for the reads of those that
// did, which take seconds when thousands of pods changed at once (a drain).
//
// A status read after the listing may name a sandbox or container the
// listing lacks (created in between); the relister then reads that pod again
// at its next pass even if its listing has not changed, since that instance
// could go before any listing shows it. Whoever stores a status in the cache
// itself calls Relister.Reinspect for the same reason (the pod is read again
// only if the next listing lacks what that status names). A pod read again
// this way gets a PodSync event when the read changes what its status names.
//
// The relister and the cache's readers must use the same clock: the pod
// workers pass times of their clock to GetNewerThan, and the relister stamps
// the cache with times of its own.
//
// # Container options from the cluster
//
// What a container needs from the API server before it starts (configMap,
// secret, projected and downwardAPI volumes, env from Secrets and
// ConfigMaps, service variables, $(VAR) expansion, image pull credentials)
// reaches a Runtime through one interface, ContainerOptionsProvider, whose
// RunContainerOptions gives each container its prepared volumes, its whole
// environment and its expanded command and arguments (the kubelet's
// GenerateRunContainerOptions). Its implementations live beside the agent
// (agent/volume, agent/envvars), since this package imports no client-go;
// a Runtime without one runs emptyDir and hostPath pods as before.
//
// # Ownership
//
// Values returned by a Cache are shared snapshots. Callers must treat them as
// read-only; writers hand a fresh *PodStatus to Set instead of mutating one
// they got back. A pod that vanished from the runtime keeps an empty status in
// the cache until its owner calls Cache.Delete.
package runtime
