// Package fleet runs many podlife nodes in one process against a real API
// server: a cluster simulator for testing controllers, operators,
// schedulers and autoscalers, and for scale runs.
//
// Each node is a full podlife agent (package agent): it registers its Node
// and renews its Lease, runs the pods the scheduler binds to it through
// the real pod lifecycle (init containers and sidecars, restart policy and
// crash-loop back-off, image pull back-off, probes, grace periods,
// terminal statuses, deletion), writes their statuses and records events,
// on an in-process fake CRI runtime (runtime/fakecri) of its own, which
// its CRI client calls without a transport (fakecri.Server.Conn). Where a
// real node would run a process, the pod's ScriptAnnotation says what
// happens: when each container exits and with which code, how long it
// takes to stop, how its image pulls go and what its probes answer over
// time. Everything else follows the kubelet's rules.
//
//	f, err := fleet.New(fleet.Options{Config: adminConfig, Nodes: 100})
//	...
//	go f.Run(ctx) // every node registers, becomes Ready and runs its pods
//	f.Node("fleet-7").Kill()  // node loss: its pods are evicted by the control plane
//	f.Node("fleet-7").Start() // it comes back, empty
//
// # Credentials
//
// With Options.Config (a cluster admin's), each node talks as the user
// system:node:NAME in the group system:nodes, by impersonation, so the
// Node authorizer and NodeRestriction admission treat it as a kubelet; the
// nodes share the config's connections, each with its own rate limit. With
// Options.Client each node gets a client of its own (its own credentials).
//
// The nodes also share one list and watch of the Services, for their
// containers' service variables (agent.Cluster.Services), made by Run with
// the first node's client: the Node authorizer lets every node read every
// Service. Each node still watches its own pods and Node, and reads the
// ConfigMaps and Secrets of its pods, with its own client, since the Node
// authorizer restricts those to the node.
//
// # What a node is
//
// A node's capacity is Options.Capacity (DefaultCapacity by default), its
// InternalIP one of 10.192.0.0/10 (Node.IP), and its pods run in its
// network (hostIP and podIP are the node's IP). It serves no node API
// (kubectl logs and exec reach nothing) and runs no eviction manager nor
// graceful node shutdown unless Options.Agent turns them on. Each node's
// pod files (emptyDirs, configMap, secret and token volumes, container
// logs) are under Options.Root, in memory by default (/dev/shm), so that
// secret and token volumes need no tmpfs mount each.
//
// # Lifecycle
//
// Run starts every node and stops them when its context ends. Meanwhile
// Node.Stop stops a node's agent as a stopped kubelet (its containers keep
// running; the node goes NotReady after the node lifecycle controller's
// grace period), Node.Start starts it again on the same runtime, and
// Node.Kill loses the node's runtime with everything in it, as a machine
// that died.
package fleet
