package agent_test

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"

	"github.com/podlife/podlife/agent"
	"github.com/podlife/podlife/agent/events"
	"github.com/podlife/podlife/podworker/podworkertest"
	"github.com/podlife/podlife/runtime"
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

// Cluster.Events reaches the event recorder the agent makes: its limits are
// validated there (and used: see agent/events).
func TestClusterEventsOptions(t *testing.T) {
	rt := struct{ runtime.Runtime }{} // never called by New
	base := func(eo events.Options) agent.Options {
		return agent.Options{Runtime: rt, NodeName: "n", ManifestPath: t.TempDir(),
			Cluster: &agent.Cluster{Client: fake.NewClientset(), SkipNode: true, Events: eo}}
	}
	if _, err := agent.New(base(events.Options{QPS: 5, Burst: 10})); err != nil {
		t.Fatalf("QPS 5, Burst 10: %v", err)
	}
	_, err := agent.New(base(events.Options{QPS: -1}))
	if err == nil || !strings.Contains(err.Error(), "QPS must not be negative") {
		t.Fatalf("QPS -1: %v, want the recorder's refusal", err)
	}
}

// An HTTP liveness probe redirected to another host succeeds with the
// kubelet's ProbeWarning event (the container is not restarted).
func TestProbeWarningEvent(t *testing.T) {
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://0.0.0.0/", http.StatusFound)
	}))
	t.Cleanup(web.Close)
	host, port, _ := net.SplitHostPort(strings.TrimPrefix(web.URL, "http://"))
	_, endpoint := startFakeCRI(t, fakecri.Options{})
	rec := record.NewFakeRecorder(1000)
	dir := t.TempDir()
	writeManifest(t, dir, "web.yaml", manifest("web", 1)+
		"    livenessProbe:\n      httpGet: {host: \""+host+"\", port: "+port+", path: /}\n      periodSeconds: 1\n      failureThreshold: 1\n")
	ra := startAgentWith(t, endpoint, dir, func(o *agent.Options) { o.Recorder = rec })
	uid := ra.podUID(t, "web")
	waitRunning(t, ra, uid)
	const want = `Warning ProbeWarning Liveness probe warning: Probe terminated redirects, Response body: <a href="http://0.0.0.0/">Found</a>.`
	var got []string
	podworkertest.WaitFor(t, waitTimeout, "a ProbeWarning event", func() bool {
		for {
			select {
			case e := <-rec.Events:
				got = append(got, e)
				if strings.HasPrefix(e, want) {
					return true
				}
			default:
				return false
			}
		}
	})
	if st, _ := ra.StatusReporter().Status(uid); len(st.ContainerStatuses) != 1 || st.ContainerStatuses[0].RestartCount != 0 {
		t.Fatalf("container statuses %+v, want no restart", st.ContainerStatuses)
	}
}
