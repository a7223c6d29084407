// Package node makes a node agent a node of a Kubernetes cluster: it
// registers the agent's Node, keeps its Lease in kube-node-lease renewed and
// reports its status, as the kubelet does (and virtual-kubelet's
// NodeController). It knows nothing about pods; package agent wires it in
// (agent.Options.Cluster), and it is usable alone.
//
//	cfg, _ := node.LoadClientConfig("/etc/podlife/node.kubeconfig", 0, 0) // kubelet's QPS 50, burst 100
//	client, _ := kubernetes.NewForConfig(cfg)
//	c, _ := node.New(node.Options{Client: client, NodeName: "edge-1", Runtime: rt})
//	go c.Run(ctx) // registers, then renews and reports until ctx is done
//
// # Registration
//
// Run creates the Node with the labels kubernetes.io/hostname,
// kubernetes.io/os and kubernetes.io/arch plus Options.Labels, the taints
// of Options.Taints, and its status, retrying with a jittered back-off
// (200ms doubling to 7s) until the API server accepts it. A Node that
// exists already is adopted: the Controller adds its labels and leaves every
// other label, annotation, taint and spec field as their owners set them
// (NodeRestriction forbids a node to change its own taints anyway).
// Registered is closed once the Node exists. A Node deleted while the
// Controller runs is registered again at the next status update.
//
// # Status
//
// Capacity and allocatable come from Options.Capacity and
// Options.Allocatable over the machine's own figures (pods 110, the CPUs,
// MemTotal, the size of the file system of EphemeralStoragePath);
// addresses from Options.Addresses or the machine (InternalIP, Hostname);
// nodeInfo from the machine (kernel, OS image, machine and boot IDs), the
// runtime's CRI Version (containerRuntimeVersion "name://version") and
// podlife's version as kubeletVersion (Version). Conditions: Ready from the
// runtime's RuntimeReady condition (and NetworkReady when
// RequireNetworkReady is set), MemoryPressure, DiskPressure and PIDPressure
// False, with the kubelet's reasons. As in the kubelet, a runtime Status
// call that fails leaves Ready as the runtime's last answer made it for
// 30 s before "container runtime is down". A Provider may change any of it before
// each write, the way virtual-kubelet providers describe their node.
// Options.Images, when set, gives status.images (the kubelet's list: the 50
// largest images, agent/imagegc's Manager.NodeImages); a change of the list
// is a change of the status.
//
// Every StatusUpdateFrequency (10s) the Controller reads its Node, computes
// the status and writes it, as one strategic merge patch of the status
// subresource, when it differs from the Node's (heartbeat times aside, so
// a condition another component changed, such as the node lifecycle
// controller's Unknown, is repaired) or when the last write is
// StatusReportFrequency (5m) old. A condition's lastTransitionTime moves
// only when its status changes. SyncStatus does the same at once (the
// kubelet's syncNodeStatus: the node shutdown manager, agent/shutdown,
// publishes the Node's not-ready condition so).
//
// # Lease
//
// The Lease kube-node-lease/NAME (holder NAME, 40s, owned by the Node) is
// renewed every LeaseRenewInterval (10s) by one Update of the Lease as last
// returned; after an error it is read again, and the renewal is retried
// with the same back-off before returning to the interval. The node
// lifecycle controller takes a Lease older than its grace period to mean
// that the node is gone, taints it and evicts its pods.
//
// Everything the Controller writes is allowed to the node's own identity
// (system:node:NAME) under the Node authorizer and NodeRestriction: its
// Node, its status and its Lease. Options.Labels that NodeRestriction would
// refuse are refused by New.
//
// # Compared with the kubelet
//
// Not done: volume and stats reporting (volumesInUse/volumesAttached, allocatable minus system reservations and
// eviction thresholds), real memory, disk and PID pressure detection
// (a Provider can report it), certificate bootstrap and rotation, the node
// shutdown manager, cloud provider addresses and providerID, runtime
// handlers and features in the status, and the fast status updates of a
// starting kubelet. Like the kubelet, the Controller reads its Node from a
// list and watch of that one object (a field selector on its name, which
// the Node authorizer allows), not with a GET at each update; it falls
// back to a GET only while the watch has no Node (before its first list,
// or once the Node is deleted, which then registers it again).
//
// Metrics (Options.Registerer, namespace "podlife"):
// node_status_updates_total{result} and node_lease_renewals_total{result}.
package node
