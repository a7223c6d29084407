package agent_test

import (
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/podlife/podlife/podworker/podworkertest"
	"github.com/podlife/podlife/runtime/fakecri"
)

// A cached status that misses a sandbox the runtime still has (a false
// NotFound while the pod was inspected) makes SyncPod ask to create the
// sandbox again, which the runtime refuses with AlreadyExists. The listing
// does not change after that, so the relister never inspects the pod again:
// the agent must read the pod's status itself on AlreadyExists, or the pod
// never runs again (docs/reliability.md, finding 2).
func TestAlreadyExistsRereadsStaleStatus(t *testing.T) {
	srv, endpoint := startFakeCRI(t, fakecri.Options{Images: []string{testImage}})
	dir := t.TempDir()
	writeManifest(t, dir, "web.yaml", manifest("web", 1))
	ra := startAgent(t, endpoint, dir)
	uid := ra.podUID(t, "web")
	waitRunning(t, ra, uid)

	// The runtime loses the container, and answers NotFound for the pod's
	// sandbox while the relister inspects the change.
	removeFault := srv.Inject(fakecri.Fault{Method: "PodSandboxStatus", Code: codes.NotFound})
	runs := srv.CallCount("RunPodSandbox")
	ids := runningContainerIDs(runtimePods(t, ra.rt, false)[uid])
	if len(ids) != 1 {
		t.Fatalf("running containers %v, want one", ids)
	}
	if err := srv.Forget(ids[0]); err != nil {
		t.Fatal(err)
	}
	podworkertest.WaitFor(t, waitTimeout, "a sync with the stale status", func() bool { return srv.CallCount("RunPodSandbox") > runs })
	removeFault()

	// The sandbox was there all along; the container must be created in it.
	waitRunning(t, ra, uid)
	p := runtimePods(t, ra.rt, false)[uid]
	if len(p.Sandboxes) != 1 {
		t.Errorf("%d sandboxes, want the original one only", len(p.Sandboxes))
	}
}
