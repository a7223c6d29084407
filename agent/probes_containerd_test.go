package agent_test

import (
	"fmt"
	"net"
	"os"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/agent"
	"github.com/podlife/podlife/podworker/podworkertest"
)

// freePort returns a TCP port nothing listens on at the moment.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestProbesContainerd runs httpGet probes against real processes on a real
// containerd (the test image's pause, "serve PORT SECONDS" answering HTTP
// only after SECONDS): a readiness probe keeps the pod not Ready until the
// endpoint answers, then Ready; a liveness probe against a port nothing
// listens on restarts the container. Pods use the node's network (no CNI),
// so the probes go to the node's IP, 127.0.0.1 here.
func TestProbesContainerd(t *testing.T) {
	endpoint := os.Getenv(endpointEnv)
	if endpoint == "" {
		t.Skip(endpointEnv + " is not set: skipping the probe test against a real CRI runtime")
	}
	serve, dead := freePort(t), freePort(t)
	dir := t.TempDir()
	writeManifest(t, dir, "ready.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: ready
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: %s
    args: ["serve", "%d", "4"]
    readinessProbe:
      httpGet: {path: /healthz, port: %d}
      periodSeconds: 1
`, testImage, serve, serve))
	writeManifest(t, dir, "live.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: live
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: %s
    livenessProbe:
      httpGet: {path: /healthz, port: %d}
      periodSeconds: 1
      failureThreshold: 2
`, testImage, dead))
	ra := startAgentWith(t, endpoint, dir, func(o *agent.Options) {
		o.NodeIPs = func() []string { return []string{"127.0.0.1"} }
	})
	ready, live := ra.podUID(t, "ready"), ra.podUID(t, "live")

	status := func(uid string) (v1.PodStatus, bool) {
		for _, v := range ra.Pods() {
			if string(v.UID) == uid {
				return ra.StatusReporter().Status(v.UID)
			}
		}
		return v1.PodStatus{}, false
	}
	var st v1.PodStatus
	podworkertest.WaitFor(t, waitTimeout, "ready running", func() bool {
		var ok bool
		st, ok = status(string(ready))
		return ok && len(st.ContainerStatuses) == 1 && st.ContainerStatuses[0].State.Running != nil
	})
	if cs := st.ContainerStatuses[0]; cs.Ready || cond(st, v1.PodReady).Status == v1.ConditionTrue {
		t.Fatalf("ready is Ready while its endpoint does not answer yet: %+v", st)
	}
	podworkertest.WaitFor(t, waitTimeout, "ready Ready once the endpoint answers", func() bool {
		st, _ = status(string(ready))
		return len(st.ContainerStatuses) == 1 && st.ContainerStatuses[0].Ready &&
			cond(st, v1.PodReady).Status == v1.ConditionTrue && cond(st, v1.ContainersReady).Status == v1.ConditionTrue
	})
	started := st.ContainerStatuses[0].State.Running.StartedAt
	readyAt := cond(st, v1.PodReady).LastTransitionTime
	if d := readyAt.Sub(started.Time); d < 3e9 {
		t.Errorf("Ready %v after the container started, before its endpoint answered (4 s)", d)
	}

	podworkertest.WaitFor(t, waitTimeout, "live restarted by its liveness probe", func() bool {
		st, _ = status(string(live))
		return len(st.ContainerStatuses) == 1 && st.ContainerStatuses[0].RestartCount >= 1
	})
	if lt := st.ContainerStatuses[0].LastTerminationState.Terminated; lt == nil {
		t.Errorf("live restarted without a last termination state: %+v", st.ContainerStatuses[0])
	}
}
