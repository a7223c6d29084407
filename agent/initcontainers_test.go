package agent_test

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/podworker/podworkertest"
	"github.com/podlife/podlife/runtime/fakecri"
)

// A pod with an init container and a sidecar runs: the init container
// completes, the sidecar and the app run, Initialized and Ready are True.
// A Never pod whose init container fails is Failed, and its app never ran.
func TestInitContainersAndSidecars(t *testing.T) {
	_, endpoint := startFakeCRI(t, fakecri.Options{})
	dir := t.TempDir()
	writeManifest(t, dir, "web.yaml", manifest("web", 1)+`  initContainers:
  - name: setup
    image: `+testImage+`
    args: ["exit", "0"]
  - name: proxy
    image: `+testImage+`
    restartPolicy: Always
`)
	writeManifest(t, dir, "bad.yaml", manifest("bad", 1)+`  restartPolicy: Never
  initContainers:
  - name: setup
    image: `+testImage+`
    args: ["exit", "3"]
`)
	ra := startAgent(t, endpoint, dir)
	web, bad := ra.podUID(t, "web"), ra.podUID(t, "bad")
	podworkertest.WaitFor(t, waitTimeout, "web Running and Ready", func() bool {
		st, ok := ra.StatusReporter().Status(web)
		if !ok || st.Phase != v1.PodRunning || !podReady(st) || len(st.InitContainerStatuses) != 2 {
			return false
		}
		setup, proxy := st.InitContainerStatuses[0], st.InitContainerStatuses[1]
		return setup.State.Terminated != nil && setup.State.Terminated.Reason == "Completed" &&
			proxy.State.Running != nil && condition(st, v1.PodInitialized) == v1.ConditionTrue
	})
	podworkertest.WaitFor(t, waitTimeout, "bad Failed", func() bool {
		st, ok := ra.StatusReporter().Status(bad)
		return ok && st.Phase == v1.PodFailed
	})
	st, _ := ra.StatusReporter().Status(bad)
	if len(st.ContainerStatuses) != 1 || st.ContainerStatuses[0].State.Running != nil || st.ContainerStatuses[0].ContainerID != "" {
		t.Errorf("the app of a pod whose init container failed ran: %+v", st.ContainerStatuses)
	}
	if len(st.InitContainerStatuses) != 1 || st.InitContainerStatuses[0].State.Terminated == nil || st.InitContainerStatuses[0].State.Terminated.ExitCode != 3 {
		t.Errorf("init container status: %+v", st.InitContainerStatuses)
	}
}

func condition(st v1.PodStatus, t v1.PodConditionType) v1.ConditionStatus {
	for _, c := range st.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}
