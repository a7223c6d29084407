// Package cluster holds podlife's end-to-end tests against a real
// Kubernetes control plane (scripts/apiserver/start.sh: etcd,
// kube-apiserver with Node,RBAC authorization and NodeRestriction, the
// controller-manager and the scheduler). Each agent under test runs in the
// test process on its own fakecri runtime with a node's own credentials
// (system:node:NAME), exactly a kubelet's rights, and is the node of that
// name: it registers its Node and Lease, runs the pods the scheduler binds
// to it, and writes their statuses and events.
//
// The package has no API; everything is in its tests, which skip unless
// PODLIFE_API_DIR names the control plane's folder:
//
//	bash scripts/apiserver/start.sh   # API_NODES must name e2e-1 ... e2e-5
//	PODLIFE_API_DIR=/tmp/podlife-api go test -race ./test/cluster
//
// .ci/run runs them.
package cluster
