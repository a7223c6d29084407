package agent_test

import (
	"context"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podlife/podlife/agent"
	"github.com/podlife/podlife/podmanager/source"
	"github.com/podlife/podlife/podworker/podworkertest"
	"github.com/podlife/podlife/runtime"
	"github.com/podlife/podlife/runtime/fakecri"
)

func TestNewValidates(t *testing.T) {
	// Options are validated before the runtime is used: any value of the
	// interface does.
	rt := struct{ runtime.Runtime }{}
	for _, tc := range []struct {
		name string
		opts agent.Options
		want string
	}{
		{"no runtime", agent.Options{NodeName: "n"}, "Runtime is required"},
		{"no node", agent.Options{Runtime: rt}, "NodeName is required"},
		{"negative", agent.Options{Runtime: rt, NodeName: "n", HousekeepingInterval: -1}, "HousekeepingInterval must not be negative"},
		{"source twice", agent.Options{Runtime: rt, NodeName: "n", ManifestPath: "/x", Sources: []agent.Source{{Name: "file", New: nil}}}, `source "file" given twice`},
		{"nil admit handler", agent.Options{Runtime: rt, NodeName: "n", AdmitHandlers: []agent.AdmitHandler{nil}}, "AdmitHandlers[0] is nil"},
		{"one log file", agent.Options{Runtime: rt, NodeName: "n", ContainerLogMaxFiles: 1}, "ContainerLogMaxFiles must be at least 2"},
		{"negative log interval", agent.Options{Runtime: rt, NodeName: "n", ContainerLogMonitorInterval: -1}, "ContainerLogMonitorInterval must not be negative"},
		{"negative log workers", agent.Options{Runtime: rt, NodeName: "n", ContainerLogMaxWorkers: -1}, "ContainerLogMaxWorkers must not be negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := agent.New(tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: %v, want an error with %q", err, tc.want)
			}
		})
	}
	// The same registry twice: the second agent's metrics cannot register.
	reg := prometheus.NewRegistry()
	if _, err := agent.New(agent.Options{Runtime: rt, NodeName: "n", Registerer: reg}); err != nil {
		t.Fatal(err)
	}
	if _, err := agent.New(agent.Options{Runtime: rt, NodeName: "n", Registerer: reg}); err == nil {
		t.Fatal("second agent on one registry: no error")
	}
}

// A pod admission rejects gets a Failed status with the handler's reason,
// never reaches a worker nor the runtime, and is not active.
func TestAdmissionRejects(t *testing.T) {
	_, endpoint := startFakeCRI(t, fakecri.Options{})
	dir := t.TempDir()
	writeManifest(t, dir, "ok.yaml", manifest("ok", 1))
	writeManifest(t, dir, "big.yaml", manifest("big", 1))
	ra := startAgentWith(t, endpoint, dir, func(o *agent.Options) {
		o.AdmitHandlers = []agent.AdmitHandler{
			agent.AdmitHandlerFunc(func(*agent.AdmitAttributes) agent.AdmitResult { return agent.AdmitResult{Admit: true} }),
			agent.AdmitHandlerFunc(func(a *agent.AdmitAttributes) agent.AdmitResult {
				if strings.HasPrefix(a.Pod.Name, "big") {
					return agent.AdmitResult{Reason: "OutOfMemory", Message: "too big for this node"}
				}
				return agent.AdmitResult{Admit: true}
			}),
		}
	})
	ok, big := ra.podUID(t, "ok"), ra.podUID(t, "big")
	waitRunning(t, ra, ok)
	podworkertest.WaitFor(t, waitTimeout, "big rejected", func() bool {
		st, found := ra.StatusReporter().Status(big)
		return found && st.Phase == "Failed"
	})
	ra.waitHousekeepings(t, 2)
	st, _ := ra.StatusReporter().Status(big)
	if st.Reason != "OutOfMemory" || st.Message != "Pod was rejected: too big for this node" {
		t.Errorf("rejected status: reason %q message %q", st.Reason, st.Message)
	}
	if _, known := ra.Workers().PodInfo(big); known {
		t.Error("the rejected pod reached a pod worker")
	}
	if _, inRuntime := runtimePods(t, ra.rt, true)[big]; inRuntime {
		t.Error("the rejected pod reached the runtime")
	}
	if v, _ := ra.pod("big"); v.Lifecycle != "rejected" {
		t.Errorf("view of the rejected pod: %+v", v)
	}
	if hk, ok := ra.LastHousekeeping(); !ok || hk.DesiredStatic != 2 || hk.ActiveStatic != 1 {
		t.Errorf("last housekeeping: %+v, %v; want 2 desired and 1 active static pods", hk, ok)
	}
	got := series(t, ra.reg)
	if got[`kubelet_desired_pods{static="true"}`] != 2 || got[`kubelet_active_pods{static="true"}`] != 1 ||
		got[`kubelet_restarted_pods_total{static="true"}`] != 0 {
		t.Errorf("metrics: desired %v active %v restarted %v, want 2 1 0", got[`kubelet_desired_pods{static="true"}`],
			got[`kubelet_active_pods{static="true"}`], got[`kubelet_restarted_pods_total{static="true"}`])
	}
}

// A rejected API pod that is then deleted is sent a kill by housekeeping so
// that it finishes (and could be deleted from the API), keeping its
// rejection status.
func TestRejectedPodDeleted(t *testing.T) {
	_, endpoint := startFakeCRI(t, fakecri.Options{})
	var channel *source.Channel
	var mu sync.Mutex
	var finished []v1.PodStatus
	ra := startAgentWith(t, endpoint, t.TempDir(), func(o *agent.Options) {
		o.AdmitHandlers = []agent.AdmitHandler{agent.AdmitHandlerFunc(func(*agent.AdmitAttributes) agent.AdmitResult {
			return agent.AdmitResult{Reason: "NodeAffinity", Message: "no"}
		})}
		apiChannel(o, &channel)
		o.StatusReporter = func(agent.PodStateProvider) (agent.StatusReporter, error) {
			return agent.StatusReporterFuncs{PodFinishedFunc: func(_ context.Context, _, _ *v1.Pod, st v1.PodStatus) error {
				mu.Lock()
				defer mu.Unlock()
				finished = append(finished, st)
				return nil
			}}, nil
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: "default", UID: "api-uid"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "main", Image: testImage}}}}
	if err := channel.Push(ctx, []*v1.Pod{pod}); err != nil {
		t.Fatal(err)
	}
	podworkertest.WaitFor(t, waitTimeout, "rejected", func() bool {
		st, ok := ra.StatusReporter().Status("api-uid")
		return ok && st.Phase == v1.PodFailed
	})
	ra.waitHousekeepings(t, 2)
	if _, known := ra.Workers().PodInfo("api-uid"); known {
		t.Fatal("a rejected pod reached a worker before its deletion")
	}
	deleting := pod.DeepCopy()
	now := metav1.Now()
	deleting.DeletionTimestamp = &now
	if err := channel.Push(ctx, []*v1.Pod{deleting}); err != nil {
		t.Fatal(err)
	}
	podworkertest.WaitFor(t, waitTimeout, "rejected pod finished", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(finished) == 1
	})
	mu.Lock()
	defer mu.Unlock()
	if st := finished[0]; st.Phase != v1.PodFailed || st.Reason != "NodeAffinity" {
		t.Errorf("final status of the rejected pod: %s %q, want Failed NodeAffinity", st.Phase, st.Reason)
	}
}

// AdmitAttributes.OtherPods holds the active pods admitted before, in this
// batch of additions and in earlier ones, never the pod itself nor a
// rejected pod: a handler can count what already runs (here, at most two
// pods may).
func TestAdmissionSeesOtherPods(t *testing.T) {
	_, endpoint := startFakeCRI(t, fakecri.Options{})
	var channel *source.Channel
	var mu sync.Mutex
	seen := map[string][]string{} // pod -> names of OtherPods
	ra := startAgentWith(t, endpoint, t.TempDir(), func(o *agent.Options) {
		apiChannel(o, &channel)
		o.AdmitHandlers = []agent.AdmitHandler{agent.AdmitHandlerFunc(func(a *agent.AdmitAttributes) agent.AdmitResult {
			var names []string
			for _, p := range a.OtherPods {
				names = append(names, p.Name)
			}
			sort.Strings(names)
			mu.Lock()
			seen[a.Pod.Name] = names
			mu.Unlock()
			a.OtherPods = append(a.OtherPods, a.Pod) // a careless handler must not disturb the agent
			if len(names) >= 2 {
				return agent.AdmitResult{Reason: "TooMany"}
			}
			return agent.AdmitResult{Admit: true}
		})}
	})
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	newPod := func(name string, minute int) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name + "-uid"),
			CreationTimestamp: metav1.NewTime(time.Date(2026, 1, 1, 0, minute, 0, 0, time.UTC))},
			Spec: v1.PodSpec{Containers: []v1.Container{{Name: "main", Image: testImage}}}}
	}
	a, b, c := newPod("a", 1), newPod("b", 2), newPod("c", 3)
	if err := channel.Push(ctx, []*v1.Pod{c, a, b}); err != nil { // one batch, admitted in creation order
		t.Fatal(err)
	}
	d := newPod("d", 4)
	podworkertest.WaitFor(t, waitTimeout, "c rejected", func() bool {
		st, ok := ra.StatusReporter().Status(c.UID)
		return ok && st.Phase == v1.PodFailed
	})
	if err := channel.Push(ctx, []*v1.Pod{c, a, b, d}); err != nil { // a later batch
		t.Fatal(err)
	}
	podworkertest.WaitFor(t, waitTimeout, "d judged", func() bool {
		mu.Lock()
		defer mu.Unlock()
		_, ok := seen["d"]
		return ok
	})
	mu.Lock()
	defer mu.Unlock()
	want := map[string][]string{"a": nil, "b": {"a"}, "c": {"a", "b"}, "d": {"a", "b"}}
	if diff := cmp.Diff(want, seen); diff != "" {
		t.Errorf("OtherPods per pod (-want +got):\n%s", diff)
	}
}
