package chaos

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/podmanager"
	"github.com/podlife/podlife/podworker"
	"github.com/podlife/podlife/runtime"
)

// finalProblems lists what is not yet as it must be once the faults have
// stopped: desired pods run, nothing else is left in the runtime or the pod
// workers, and the gauges say so.
func (s *soak) finalProblems() []string {
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	ar := s.ar

	// The desired state, as the model has it.
	wantStatic := map[string]bool{}
	for _, st := range s.statics {
		if st.present {
			wantStatic[st.fullName()] = true
		}
	}
	wantAPI := map[types.UID]bool{}
	deleting := map[types.UID]bool{}
	for _, a := range s.apis {
		switch {
		case a.deleting():
			deleting[a.pod.UID] = true
		case a.pod != nil:
			wantAPI[a.pod.UID] = true
		}
	}

	// The pod manager got it from the sources.
	desired := map[types.UID]*v1.Pod{}
	nStatic := 0
	for _, pod := range ar.PodManager().GetPods() {
		full := podmanager.FullName(pod)
		switch {
		case podmanager.IsStaticPod(pod) && wantStatic[full]:
			desired[pod.UID] = pod
			nStatic++
			delete(wantStatic, full)
		case podmanager.IsStaticPod(pod):
			add("pod manager holds static pod %s (%s), whose manifest is gone", full, pod.UID)
		case wantAPI[pod.UID]:
			desired[pod.UID] = pod
			delete(wantAPI, pod.UID)
		case deleting[pod.UID]:
			add("API pod %s (%s) is being deleted and has not finished", full, pod.UID)
		default:
			add("pod manager holds API pod %s (%s), which the API server does not have", full, pod.UID)
		}
	}
	for full := range wantStatic {
		add("static pod %s is not in the pod manager", full)
	}
	for uid := range wantAPI {
		add("API pod %s is not in the pod manager", uid)
	}
	for uid := range deleting {
		if _, ok := ar.PodManager().GetPodByUID(uid); !ok {
			add("API pod %s is being deleted but the pod manager lost it", uid)
		}
	}

	// The runtime holds exactly the desired pods, running.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rtPods, err := s.inv.checker.GetPods(ctx, true)
	if err != nil {
		add("list runtime pods: %v", err)
		return out
	}
	inRuntime := map[types.UID]*runtime.Pod{}
	for _, rp := range rtPods {
		inRuntime[rp.ID] = rp
		if _, ok := desired[rp.ID]; !ok {
			add("runtime still holds %s/%s (%s): %s; worker: %s", rp.Namespace, rp.Name, rp.ID, describe(rp), s.workerState(rp.ID))
		}
	}
	workers := ar.Workers()
	// API pods whose workers are syncing, and those whose workers finished.
	apiSyncing, apiFinished := 0, 0
	completed, completedUnknown, nRejected := 0, 0, 0
	for uid, pod := range desired {
		rp := inRuntime[uid]
		info, known := workers.PodInfo(uid)
		if rejected(pod) {
			// Admission rejected it: it never runs, and its status says
			// why. It has no worker, or a finished one: deleted, it was
			// killed so that it could finish, and then recreated with the
			// same UID (and rejected again); the workers keep a finished
			// pod while it is desired, as the kubelet's do.
			nRejected++
			switch {
			case !known:
			case info.Lifecycle == podworker.LifecycleFinished:
				apiFinished++
			default:
				add("rejected pod %s (%s) has a worker: %s", podmanager.FullName(pod), uid, s.workerState(uid))
			}
			if rp != nil {
				add("rejected pod %s (%s) is in the runtime: %s", podmanager.FullName(pod), uid, describe(rp))
			}
			if st, ok := ar.StatusReporter().Status(uid); !ok || st.Phase != v1.PodFailed || st.Reason != rejectReason {
				add("rejected pod %s (%s) has published phase %q, reason %q; want Failed, %s", podmanager.FullName(pod), uid, st.Phase, st.Reason, rejectReason)
			}
			continue
		}
		if !known && isJob(pod) && (pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed) && !runsAnything(rp) {
			// Completed, and recreated with the same UID and its final
			// phase while it finished: inactive, so not started again,
			// and no worker needs it (the kubelet does the same).
			completedUnknown++
			continue
		}
		if known && info.Lifecycle == podworker.LifecycleFinished && isJob(pod) {
			// Ran to completion: a terminal phase, nothing running (its
			// dead containers stay while it is desired, for its logs).
			completed++
			apiFinished++
			if st, ok := ar.StatusReporter().Status(uid); !ok || (st.Phase != v1.PodSucceeded && st.Phase != v1.PodFailed) {
				add("completed pod %s (%s) has published phase %q", podmanager.FullName(pod), uid, st.Phase)
			}
			if runsAnything(rp) {
				add("completed pod %s (%s) still runs in the runtime: %s", podmanager.FullName(pod), uid, describe(rp))
			}
			continue
		}
		// Everything else must run.
		if !podmanager.IsStaticPod(pod) {
			apiSyncing++
		}
		if !runsAll(pod, rp) {
			add("desired pod %s (%s) is not running in the runtime; worker: %s", podmanager.FullName(pod), uid, s.workerState(uid))
			continue
		}
		if !known || info.Lifecycle != podworker.LifecycleSyncing {
			add("desired pod %s (%s) runs but its worker is %s", podmanager.FullName(pod), uid, s.workerState(uid))
		}
		if st, ok := ar.StatusReporter().Status(uid); !ok || st.Phase != v1.PodRunning {
			add("desired pod %s (%s) runs but its published phase is %q; runtime: %s; worker: %s", podmanager.FullName(pod), uid, st.Phase, describe(rp), s.workerState(uid))
		}
	}

	s.desiredAtEnd, s.completedAtEnd, s.rejectedAtEnd = len(desired), completed+completedUnknown, nRejected

	// Every desired static pod has its mirror, of its hash, paired in the
	// pod manager; no other mirror is left.
	mirrors, _ := s.mirrors.snapshot()
	staticNames := map[string]bool{}
	for _, pod := range desired {
		if !podmanager.IsStaticPod(pod) {
			continue
		}
		full := podmanager.FullName(pod)
		staticNames[full] = true
		m, ok := s.mirrors.get(full)
		switch {
		case !ok:
			add("static pod %s (%s) has no mirror pod", full, pod.UID)
		case m.Annotations[podmanager.ConfigMirrorAnnotationKey] != podmanager.PodHash(pod):
			add("the mirror of static pod %s (%s) has hash %q, the pod %q", full, pod.UID, m.Annotations[podmanager.ConfigMirrorAnnotationKey], podmanager.PodHash(pod))
		default:
			if paired, ok := ar.PodManager().GetMirrorPodByPod(pod); !ok || paired.UID != m.UID {
				add("the mirror of static pod %s (%s) is not paired in the pod manager", full, pod.UID)
			}
		}
	}
	for _, m := range mirrors {
		if full := podmanager.FullName(m); !staticNames[full] {
			add("mirror pod %s (%s) is left without a static pod; worker of that name: %s", full, m.UID, s.workerStateByName(full))
		}
	}

	// The pod workers know exactly the desired pods (but completed ones
	// that no worker needs).
	if n := workers.Len(); n != nStatic+apiSyncing+apiFinished {
		add("the pod workers know %d pods, want %d: %d desired static and %d API pods syncing, %d finished (%d desired in all, %d of them completed and unknown to the workers, %d rejected)",
			n, nStatic+apiSyncing+apiFinished, nStatic, apiSyncing, apiFinished, len(desired), completedUnknown, nRejected)
		for _, v := range ar.Pods() {
			if !v.Desired {
				add("  worker for undesired pod %s/%s (%s): %s, %d failures", v.Namespace, v.Name, v.UID, v.Lifecycle, v.Failures)
			}
		}
	}

	// The gauges say the same.
	if len(out) == 0 {
		out = append(out, metricProblems(ar.reg, nStatic, len(desired)-nStatic, apiSyncing, apiFinished)...)
	}
	return out
}

// describe lists the sandboxes and containers of a runtime pod with their
// states.
func describe(rp *runtime.Pod) string {
	var parts []string
	for _, sb := range rp.Sandboxes {
		parts = append(parts, fmt.Sprintf("sandbox %.12s %s", sb.ID.ID, sb.State))
	}
	for _, c := range rp.Containers {
		parts = append(parts, fmt.Sprintf("container %s %.12s %s", c.Name, c.ID.ID, c.State))
	}
	return strings.Join(parts, ", ")
}

// runsAll reports whether the runtime runs every container of pod in a
// ready sandbox.
func runsAll(pod *v1.Pod, rp *runtime.Pod) bool {
	if rp == nil || !slices.ContainsFunc(rp.Sandboxes, func(c *runtime.Container) bool { return c.State == runtime.ContainerStateRunning }) {
		return false
	}
	for _, c := range pod.Spec.Containers {
		if !slices.ContainsFunc(rp.Containers, func(rc *runtime.Container) bool {
			return rc.Name == c.Name && rc.State == runtime.ContainerStateRunning
		}) {
			return false
		}
	}
	return true
}

// workerStateByName describes the workers of the pods named fullName.
func (s *soak) workerStateByName(fullName string) string {
	var parts []string
	for _, v := range s.ar.Pods() {
		if v.Name+"_"+v.Namespace == fullName {
			parts = append(parts, fmt.Sprintf("%s: %s", v.UID, s.workerState(v.UID)))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "; ")
}

func (s *soak) workerState(uid types.UID) string {
	info, ok := s.ar.Workers().PodInfo(uid)
	if !ok {
		return "unknown"
	}
	return fmt.Sprintf("%s (failures %d, working %v, in flight %v, next try in %s)", info.Lifecycle, info.Failures, info.Working, info.InFlight,
		time.Until(info.NextAttempt).Round(time.Millisecond))
}

// podCountMetrics are the six pod-count metrics; gauges are the four of
// them that describe the current state.
var (
	podCountMetrics = []string{"kubelet_desired_pods", "kubelet_active_pods", "kubelet_mirror_pods", "kubelet_working_pods",
		"kubelet_restarted_pods_total", "kubelet_orphaned_runtime_pods_total"}
	gauges = podCountMetrics[:4]
)

// metricProblems compares the gauges with nStatic static pods, desired and
// syncing, and nAPI desired API pods, of which apiSyncing are active with a
// syncing worker and apiFinished have a finished worker (ran to completion,
// or rejected and deleted once); the others have no worker (rejected, or
// completed and recreated). Nothing else may be counted.
func metricProblems(reg *prometheus.Registry, nStatic, nAPI, apiSyncing, apiFinished int) []string {
	var out []string
	if n, err := testutil.GatherAndCount(reg, podCountMetrics...); err != nil || n != 23 {
		out = append(out, fmt.Sprintf("%d pod-count series (err %v), want 23", n, err))
	}
	want := map[string]float64{
		`kubelet_desired_pods{static=""}`:     float64(nAPI),
		`kubelet_desired_pods{static="true"}`: float64(nStatic),
		`kubelet_active_pods{static=""}`:      float64(apiSyncing),
		`kubelet_active_pods{static="true"}`:  float64(nStatic),
		`kubelet_mirror_pods{}`:               float64(nStatic),
	}
	for _, lc := range []string{"sync", "terminating", "terminated"} {
		for _, cs := range [][2]string{{"desired", ""}, {"desired", "true"}, {"orphan", ""}, {"orphan", "true"}, {"runtime_only", "unknown"}} {
			want[fmt.Sprintf(`kubelet_working_pods{config=%q,lifecycle=%q,static=%q}`, cs[0], lc, cs[1])] = 0
		}
	}
	want[`kubelet_working_pods{config="desired",lifecycle="sync",static=""}`] = float64(apiSyncing)
	want[`kubelet_working_pods{config="desired",lifecycle="terminated",static=""}`] = float64(apiFinished)
	want[`kubelet_working_pods{config="desired",lifecycle="sync",static="true"}`] = float64(nStatic)

	got, err := gather(reg, gauges)
	if err != nil {
		return append(out, err.Error())
	}
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if got[k] != want[k] {
			out = append(out, fmt.Sprintf("metric %s = %g, want %g", k, got[k], want[k]))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[k]; !ok {
			out = append(out, fmt.Sprintf("unexpected series %s = %g", k, got[k]))
		}
	}
	return out
}

// gather returns the series of the named metrics as "name{labels}" → value.
func gather(reg prometheus.Gatherer, names []string) (map[string]float64, error) {
	mfs, err := reg.Gather()
	if err != nil {
		return nil, fmt.Errorf("gather metrics: %w", err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if !slices.Contains(names, mf.GetName()) {
			continue
		}
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			out[mf.GetName()+"{"+strings.Join(labels, ",")+"}"] = m.GetGauge().GetValue() + m.GetCounter().GetValue()
		}
	}
	return out, nil
}

// runsAnything reports whether a runtime pod (nil: none) has a running
// container or a ready sandbox.
func runsAnything(rp *runtime.Pod) bool {
	if rp == nil {
		return false
	}
	for _, c := range append(slices.Clone(rp.Containers), rp.Sandboxes...) {
		if c.State == runtime.ContainerStateRunning {
			return true
		}
	}
	return false
}
