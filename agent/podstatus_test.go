package agent_test

import (
	"os"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/agent"
	"github.com/podlife/podlife/podworker/podworkertest"
	"github.com/podlife/podlife/runtime/fakecri"
)

// TestStatusFields runs a pod on fakecri and checks the status the agent
// publishes: node IPs from Options.NodeIPs, the kubelet's fields and
// conditions, and that regenerating it at later syncs keeps startTime and
// every condition's lastTransitionTime.
func TestStatusFields(t *testing.T) {
	_, endpoint := startFakeCRI(t, fakecri.Options{Images: []string{testImage}})
	runStatusFields(t, endpoint)
}

// TestStatusFieldsContainerd is TestStatusFields on a real containerd.
func TestStatusFieldsContainerd(t *testing.T) {
	endpoint := os.Getenv(endpointEnv)
	if endpoint == "" {
		t.Skip(endpointEnv + " is not set: skipping the status test against a real CRI runtime")
	}
	runStatusFields(t, endpoint)
}

func runStatusFields(t *testing.T, endpoint string) {
	dir := t.TempDir()
	writeManifest(t, dir, "web.yaml", manifest("web", 1))
	ra := startAgentWith(t, endpoint, dir, func(o *agent.Options) {
		o.NodeIPs = func() []string { return []string{"192.168.7.1"} }
		o.ResyncInterval = 200 * time.Millisecond // many syncs while the test waits
	})
	uid := ra.podUID(t, "web")
	var st v1.PodStatus
	podworkertest.WaitFor(t, waitTimeout, "web ready", func() bool {
		var ok bool
		st, ok = ra.StatusReporter().Status(uid)
		return ok && st.Phase == v1.PodRunning && cond(st, v1.PodReady).Status == v1.ConditionTrue
	})
	if st.HostIP != "192.168.7.1" || len(st.HostIPs) != 1 {
		t.Errorf("hostIP %q hostIPs %v", st.HostIP, st.HostIPs)
	}
	// runtime/cri runs pods on the node's network by default.
	if st.PodIP != "192.168.7.1" {
		t.Errorf("podIP %q, want the node's", st.PodIP)
	}
	if st.StartTime == nil || st.QOSClass != v1.PodQOSBestEffort {
		t.Errorf("startTime %v qosClass %q", st.StartTime, st.QOSClass)
	}
	cs := st.ContainerStatuses[0]
	if !strings.Contains(cs.ContainerID, "://") || cs.ImageID == "" || cs.Started == nil || !*cs.Started || !cs.Ready || cs.State.Running == nil {
		t.Errorf("container status %+v", cs)
	}
	for _, typ := range []v1.PodConditionType{v1.PodReadyToStartContainers, v1.PodInitialized, v1.ContainersReady, v1.PodReady, v1.PodScheduled} {
		if c := cond(st, typ); c.Status != v1.ConditionTrue || c.LastTransitionTime.IsZero() {
			t.Errorf("%s: %s since %v", typ, c.Status, c.LastTransitionTime)
		}
	}

	// Let well over a second pass (times are stored in seconds) with many
	// resyncs: nothing changed, so nothing moves.
	ra.waitHousekeepings(t, 15)
	later, _ := ra.StatusReporter().Status(uid)
	if !later.StartTime.Equal(st.StartTime) {
		t.Errorf("startTime moved %v → %v", st.StartTime, later.StartTime)
	}
	for _, c := range st.Conditions {
		if l := cond(later, c.Type); l.Status != c.Status || !l.LastTransitionTime.Equal(&c.LastTransitionTime) {
			t.Errorf("%s: %s since %v, then %s since %v", c.Type, c.Status, c.LastTransitionTime, l.Status, l.LastTransitionTime)
		}
	}

	// Leave nothing running in a shared runtime.
	removeManifest(t, dir, "web.yaml")
	waitGone(t, ra, uid)
}

func cond(s v1.PodStatus, t v1.PodConditionType) v1.PodCondition {
	for _, c := range s.Conditions {
		if c.Type == t {
			return c
		}
	}
	return v1.PodCondition{Type: t}
}
