// Package volume sets up the volumes a pod's containers need from the API
// server, as the kubelet lays them out, and keeps them current:
//
//   - configMap, secret, downwardAPI and projected volumes
//     (serviceAccountToken, configMap, secret, downwardAPI sources;
//     clusterTrustBundle and podCertificate are refused by name), with
//     items, defaultMode and mode, optional; emptyDir with medium Memory;
//   - in Root/UID/volumes/kubernetes.io~PLUGIN/NAME, written atomically
//     (WriteAtomic, the kubelet's AtomicWriter: the files go to a new
//     timestamped folder, a ..data symbolic link to it is renamed over the
//     old one, and every user-visible name is a link through ..data), so
//     that a reader never sees half an update; a payload path that is
//     absolute, has a '..' element or is too long, and a mode outside
//     0..0777, are refused;
//   - in a pod with an fsGroup, every write ends (before the new files
//     become visible) with the kubelet's SetVolumeOwnership (Ownership):
//     files and folders of group fsGroup, r--r----- added to files,
//     r-xr-x--- and setgid to folders; a memory emptyDir's folder gets
//     the group and the setgid bit (changing a group or an owner needs
//     root or CAP_CHOWN: without it the volume is not set up, and the
//     error says why, as in a kubelet);
//   - secret and projected volumes and memory emptyDirs on a tmpfs: the
//     root's own file system when it is memory-backed, else a tmpfs the
//     Manager mounts on the volume's folder (which needs root). A memory
//     emptyDir always gets a tmpfs of its own when mounts are allowed,
//     sized as the kubelet's: the node's allocatable memory
//     (Options.Allocatable), the pod's memory limit when smaller, the
//     volume's sizeLimit when smaller still. When neither is possible the
//     volume is not set up and the error says why: a secret is never
//     written to a disk;
//   - one watch per ConfigMap or Secret the node's pods use, with a field
//     selector metadata.name=NAME (the Node authorizer lets a node read
//     only those), shared by the pods that use it and stopped with the
//     last; a change is written as soon as the watch sees it (and every
//     ResyncInterval); a pod's new labels and annotations (UpdatePod)
//     reach its downwardAPI and projected volumes at once. An object
//     deleted while mounted leaves its files as they were. A subPath
//     mount is bound once and not updated, as in the kubelet;
//   - service-account tokens (Tokens) through the TokenRequest API, bound
//     to the pod, with the projection's audience and expirationSeconds,
//     refreshed once 80 % of their life has passed or after 24 h; ca.crt
//     comes from the kube-root-ca.crt ConfigMap like any configMap source.
//
// Provider puts a Manager and an envvars.Resolver together as the
// runtime.ContainerOptionsProvider that runtime/cri asks for each
// container's prepared volumes, environment and expanded command; a
// missing ConfigMap, Secret or key gives an error wrapping
// runtime.ErrFailedPrecondition, retried at the next sync. A volume that
// fails to set up is a SetUpError whose RetryAfter is the kubelet's volume
// back-off (500 ms after the first failure in a row, doubling to 2 min
// 2 s), which the pod worker takes as its next retry: a token refused for
// a pod the Node authorizer has not yet linked to the node (its graph
// lags the pod watch under load) costs half a second, not a sync
// back-off of 10 s.
//
// New starts no goroutine; Run (which owns the watches) must be running
// for volumes that read ConfigMaps or Secrets; TearDown unmounts and
// removes a pod's volumes.
package volume
