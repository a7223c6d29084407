// Package podmanager holds the agent's desired state: which pods should exist
// on the node, static pods and their mirror pods, and the helpers that tell
// them apart.
//
// Pod identity:
//
//   - A pod's full name is name_namespace (FullName). Two pods with the same
//     full name but different UIDs are two incarnations of "the same" pod; for
//     static pods only one of them may run at a time.
//   - A static pod comes from a manifest file or an HTTP URL: its
//     kubernetes.io/config.source annotation is set and is not "api"
//     (IsStaticPod).
//   - A mirror pod is the API server's read-only copy of a static pod; it
//     carries kubernetes.io/config.mirror, whose value is the static pod's
//     kubernetes.io/config.hash (IsMirrorPod). Mirror pods never get a worker.
//     IsMirrorPodOf checks that a mirror belongs to a static pod: same name
//     and namespace, and its mirror annotation equal to the static pod's hash.
//
// # Manager
//
// Manager is the desired-state store, fed from the operations of package
// source (ADD/UPDATE/DELETE/RECONCILE → UpdatePod, REMOVE → RemovePod).
// Regular and static pods are indexed by UID and by full name; mirror pods
// are kept apart, also by UID and full name, and paired with the static pod
// of the same full name: TranslatePodUID maps a mirror's UID to its static
// pod's UID (status updates and API events about the mirror concern the
// static pod), GetUIDTranslations returns both directions, and
// GetPodsAndMirrorPods names the orphaned mirrors (no static pod of that full
// name), which housekeeping deletes.
//
// One RWMutex guards the Manager; it starts no goroutine and never calls out
// while locked. It keeps and returns the pointers it is given: treat them as
// read-only, and replace a pod with a new object rather than modifying it.
// RemovePod only clears a full-name entry that still points at the removed
// UID, so removing an old incarnation never hides a newer pod of the same
// name.
//
// # Mirror pods
//
// MirrorClient creates and deletes mirror pods; package kubemirror implements
// it on client-go and podmanagertest has an in-memory fake. ReconcileMirrorPod
// is what an agent calls on each sync of a static pod: it deletes a stale or
// terminating mirror by UID and creates a missing one.
package podmanager
