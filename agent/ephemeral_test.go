package agent_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podlife/podlife/agent"
	"github.com/podlife/podlife/agent/server"
	"github.com/podlife/podlife/podmanager/source"
	"github.com/podlife/podlife/podworker/podworkertest"
	"github.com/podlife/podlife/runtime"
	"github.com/podlife/podlife/runtime/fakecri"
)

// ephemeralStatus returns the published status of the pod's ephemeral
// container name, if any.
func ephemeralStatus(ra *runningAgent, uid types.UID, name string) (v1.ContainerStatus, bool) {
	st, ok := ra.StatusReporter().Status(uid)
	if !ok {
		return v1.ContainerStatus{}, false
	}
	for _, cs := range st.EphemeralContainerStatuses {
		if cs.Name == name {
			return cs, true
		}
	}
	return v1.ContainerStatus{}, false
}

// runtimeInstances returns the runtime's instances of the pod's container
// name.
func runtimeInstances(t *testing.T, ra *runningAgent, uid types.UID, name string) []*runtime.Container {
	t.Helper()
	var out []*runtime.Container
	if p := runtimePods(t, ra.rt, true)[uid]; p != nil {
		for _, c := range p.Containers {
			if c.Name == name {
				out = append(out, c)
			}
		}
	}
	return out
}

// withDebugger returns a copy of pod with one more ephemeral container, as
// the pods/ephemeralcontainers subresource adds it (the API server bumps
// the generation).
func withDebugger(pod *v1.Pod, name, target string, args ...string) *v1.Pod {
	p := pod.DeepCopy()
	p.Generation++
	p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, v1.EphemeralContainer{
		EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: name, Image: testImage, Args: args, Stdin: true, TTY: true},
		TargetContainerName:      target})
	return p
}

// A running pod that gets an ephemeral container by an update (the spec
// changes only there) runs it within a sync, in its target's PID
// namespace, and shows it Running in status.ephemeralContainerStatuses,
// without touching the pod's phase, readiness or other containers; the
// node server execs in it and serves its log (what the conformance spec
// "will start an ephemeral container in an existing pod" does). Once it
// exited it stays exited (RestartPolicy Always) while a second one, added
// later, starts; deleting the pod stops the one still running.
func TestEphemeralContainerAddedToRunningPod(t *testing.T) {
	srv, endpoint := startFakeCRI(t, fakecri.Options{Images: []string{testImage}})
	var channel *source.Channel
	anyone := authenticator.RequestFunc(func(*http.Request) (*authenticator.Response, bool, error) {
		return &authenticator.Response{User: &user.DefaultInfo{Name: "admin"}}, true, nil
	})
	ra := startAgentWith(t, endpoint, t.TempDir(), func(o *agent.Options) {
		apiChannel(o, &channel)
		o.Server = &server.Options{Address: "127.0.0.1", Port: -1, Authenticator: anyone,
			Authorizer: authorizerfactory.NewAlwaysAllowAuthorizer()}
	})
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "target", Namespace: "default", UID: "target-uid", Generation: 1},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "main", Image: testImage}}}}
	if err := channel.Push(ctx, []*v1.Pod{pod}); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, ra, pod.UID)
	mainIDs := runningContainerIDs(runtimePods(t, ra.rt, false)[pod.UID])

	pod = withDebugger(pod, "debugger", "main", "log", "polo")
	if err := channel.Push(ctx, []*v1.Pod{pod}); err != nil {
		t.Fatal(err)
	}
	var debugger v1.ContainerStatus
	podworkertest.WaitFor(t, waitTimeout, "debugger running in status", func() bool {
		cs, ok := ephemeralStatus(ra, pod.UID, "debugger")
		debugger = cs
		return ok && cs.State.Running != nil
	})
	if debugger.ContainerID == "" || debugger.Image != testImage || debugger.ImageID == "" || debugger.RestartCount != 0 || debugger.Ready || debugger.Started != nil {
		t.Errorf("debugger's status: %+v", debugger)
	}
	st, _ := ra.StatusReporter().Status(pod.UID)
	if st.Phase != v1.PodRunning || len(st.ContainerStatuses) != 1 || st.ContainerStatuses[0].RestartCount != 0 || !st.ContainerStatuses[0].Ready {
		t.Errorf("pod's status beside the debugger: phase %s, containers %+v", st.Phase, st.ContainerStatuses)
	}
	debuggerID := runtimeID(debugger.ContainerID)
	cfg, err := srv.ContainerConfig(debuggerID)
	if err != nil {
		t.Fatal(err)
	}
	if ns := cfg.GetLinux().GetSecurityContext().GetNamespaceOptions(); ns.GetPid() != runtimeapi.NamespaceMode_TARGET || len(mainIDs) != 1 || ns.GetTargetId() != mainIDs[0] {
		t.Errorf("debugger's PID namespace %v, target %q; want TARGET, main %v", ns.GetPid(), ns.GetTargetId(), mainIDs)
	}

	// The node server's exec and logs reach it.
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	base := fmt.Sprintf("https://127.0.0.1:%d", ra.Server().Port())
	u, _ := url.Parse(base + "/exec/default/target/debugger?command=echo&command=marco&stdout=1&stderr=1")
	ex, err := remotecommand.NewSPDYExecutor(&rest.Config{TLSClientConfig: rest.TLSClientConfig{Insecure: true}}, "POST", u)
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if err := ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &out, Stderr: &errOut}); err != nil || out.String() != "marco\n" {
		t.Errorf("exec echo marco in the debugger: %q %q %v", out.String(), errOut.String(), err)
	}
	resp, err := client.Get(base + "/containerLogs/default/target/debugger")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(b) != "polo\n" {
		t.Errorf("the debugger's log: %d %q", resp.StatusCode, b)
	}

	if err := srv.ExitContainer(debuggerID, 0); err != nil {
		t.Fatal(err)
	}
	podworkertest.WaitFor(t, waitTimeout, "debugger terminated in status", func() bool {
		cs, _ := ephemeralStatus(ra, pod.UID, "debugger")
		return cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0 && cs.State.Terminated.Reason == "Completed"
	})

	// A second debugger: the sync that starts it leaves the first alone.
	pod = withDebugger(pod, "debugger2", "")
	if err := channel.Push(ctx, []*v1.Pod{pod}); err != nil {
		t.Fatal(err)
	}
	podworkertest.WaitFor(t, waitTimeout, "debugger2 running in status", func() bool {
		cs, ok := ephemeralStatus(ra, pod.UID, "debugger2")
		return ok && cs.State.Running != nil
	})
	if got := runtimeInstances(t, ra, pod.UID, "debugger"); len(got) != 1 || got[0].State != runtime.ContainerStateExited {
		t.Fatalf("debugger after later syncs: %d instances (%+v), want the one exited", len(got), got)
	}
	if cs, _ := ephemeralStatus(ra, pod.UID, "debugger"); cs.State.Terminated == nil || cs.RestartCount != 0 {
		t.Errorf("debugger's status after later syncs: %+v", cs)
	}
	if ids := runningContainerIDs(runtimePods(t, ra.rt, false)[pod.UID]); !slices.Contains(ids, mainIDs[0]) {
		t.Errorf("main %s no longer runs: %v", mainIDs[0], ids)
	}

	deleting := pod.DeepCopy()
	now := metav1.Now()
	grace := int64(1)
	deleting.DeletionTimestamp, deleting.DeletionGracePeriodSeconds = &now, &grace
	if err := channel.Push(ctx, []*v1.Pod{deleting}); err != nil {
		t.Fatal(err)
	}
	// The terminated sync removes the containers right after the kill, so
	// the stopped debugger is looked for in the pod's status, not in the
	// runtime.
	podworkertest.WaitFor(t, waitTimeout, "the pod's containers stopped, debugger2 terminated in status", func() bool {
		if cs, ok := ephemeralStatus(ra, pod.UID, "debugger2"); !ok || cs.State.Terminated == nil {
			return false
		}
		p := runtimePods(t, ra.rt, true)[pod.UID]
		return p == nil || len(runningContainerIDs(p)) == 0
	})
	if cs, _ := ephemeralStatus(ra, pod.UID, "debugger2"); cs.RestartCount != 0 {
		t.Errorf("debugger2 after the pod's deletion: %+v, want it stopped once, never restarted", cs)
	}
}

// runtimeID strips the "TYPE://" of a status containerID.
func runtimeID(containerID string) string {
	if _, id, ok := strings.Cut(containerID, "://"); ok {
		return id
	}
	return containerID
}

// A RestartPolicy Never pod whose regular container completed is done
// while its debugger still runs: it reaches Succeeded and finishes, and
// the debugger is stopped with it.
func TestEphemeralContainerDoesNotHoldCompletion(t *testing.T) {
	srv, endpoint := startFakeCRI(t, fakecri.Options{Images: []string{testImage}})
	var channel *source.Channel
	var mu sync.Mutex
	var final []v1.PodStatus
	ra := startAgentWith(t, endpoint, t.TempDir(), func(o *agent.Options) {
		apiChannel(o, &channel)
		o.StatusReporter = func(agent.PodStateProvider) (agent.StatusReporter, error) {
			return agent.StatusReporterFuncs{PodFinishedFunc: func(_ context.Context, _, _ *v1.Pod, st v1.PodStatus) error {
				mu.Lock()
				defer mu.Unlock()
				final = append(final, st)
				return nil
			}}, nil
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	grace := int64(1)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "job", Namespace: "default", UID: "job-uid", Generation: 1},
		Spec: v1.PodSpec{RestartPolicy: v1.RestartPolicyNever, TerminationGracePeriodSeconds: &grace,
			Containers: []v1.Container{{Name: "main", Image: testImage}}}}
	if err := channel.Push(ctx, []*v1.Pod{pod}); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, ra, pod.UID)
	mainIDs := runningContainerIDs(runtimePods(t, ra.rt, false)[pod.UID])
	if err := channel.Push(ctx, []*v1.Pod{withDebugger(pod, "debugger", "main")}); err != nil {
		t.Fatal(err)
	}
	podworkertest.WaitFor(t, waitTimeout, "debugger running", func() bool {
		cs, ok := ephemeralStatus(ra, pod.UID, "debugger")
		return ok && cs.State.Running != nil
	})
	if err := srv.ExitContainer(mainIDs[0], 0); err != nil {
		t.Fatal(err)
	}
	podworkertest.WaitFor(t, waitTimeout, "pod finished", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(final) == 1
	})
	mu.Lock()
	st := final[0]
	mu.Unlock()
	if st.Phase != v1.PodSucceeded {
		t.Errorf("final phase %s, want Succeeded", st.Phase)
	}
	if len(st.EphemeralContainerStatuses) != 1 || st.EphemeralContainerStatuses[0].State.Terminated == nil {
		t.Errorf("debugger in the final status: %+v", st.EphemeralContainerStatuses)
	}
	if got := runtimeInstances(t, ra, pod.UID, "debugger"); len(got) > 1 || len(got) == 1 && got[0].State != runtime.ContainerStateExited {
		t.Errorf("debugger after the pod finished: %+v", got)
	}
}
