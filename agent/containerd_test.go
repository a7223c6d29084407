package agent_test

import (
	"os"
	"testing"
)

// endpointEnv names the CRI endpoint of the integration test. It is not
// runtime/cri's PODLIFE_CRI_ENDPOINT on purpose: an agent terminates every
// pod of its runtime that it does not know, so this test must not share the
// runtime with other tests running at the same time. .ci/run runs it on its
// own, after the other tests.
const endpointEnv = "PODLIFE_AGENT_CRI_ENDPOINT"

// TestEndToEndContainerd runs the end-to-end flow against a real CRI runtime
// (containerd as started by scripts/containerd/start.sh, whose local image
// localhost/podlife/pause:1.0 understands the "hang" argument). The runtime
// cannot inject faults, so the force delete fails the agent's KillPod calls
// instead.
func TestEndToEndContainerd(t *testing.T) {
	endpoint := os.Getenv(endpointEnv)
	if endpoint == "" {
		t.Skip(endpointEnv + " is not set: skipping the end-to-end test against a real CRI runtime " +
			"(start one with `sock=$(bash scripts/containerd/start.sh)` and set " + endpointEnv + "=unix://$sock)")
	}
	runEndToEnd(t, env{
		endpoint:  endpoint,
		failStops: func(ra *runningAgent, n int) { ra.rt.failKills.Store(int32(n)) },
	})
}
