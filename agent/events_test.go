package agent_test

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"k8s.io/client-go/tools/record"

	"github.com/podlife/podlife/agent"
	"github.com/podlife/podlife/podworker/podworkertest"
	"github.com/podlife/podlife/runtime/fakecri"
)

// A sync that fails records the kubelet's FailedSync warning on the pod.
func TestFailedSyncEvent(t *testing.T) {
	srv, endpoint := startFakeCRI(t, fakecri.Options{})
	srv.FailTimes("RunPodSandbox", 2, codes.Internal)
	rec := record.NewFakeRecorder(100)
	dir := t.TempDir()
	writeManifest(t, dir, "web.yaml", manifest("web", 1))
	ra := startAgentWith(t, endpoint, dir, func(o *agent.Options) { o.Recorder = rec })
	uid := ra.podUID(t, "web")
	waitRunning(t, ra, uid)
	var got []string
	podworkertest.WaitFor(t, waitTimeout, "a FailedSync event", func() bool {
		for {
			select {
			case e := <-rec.Events:
				got = append(got, e)
			default:
				for _, e := range got {
					if strings.HasPrefix(e, "Warning FailedSync error syncing pod: ") && strings.Contains(e, "injected Internal") {
						return true
					}
				}
				return false
			}
		}
	})
}
