package agent

import (
	"context"
	"fmt"
	"maps"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/metrics"
	"github.com/podlife/podlife/podmanager"
	"github.com/podlife/podlife/podworker"
	"github.com/podlife/podlife/runtime"
)

// housekeepingWarning is the duration of a pass past which it is logged (the
// kubelet's).
const housekeepingWarning = time.Second

// HousekeepingResult says what one housekeeping pass did.
type HousekeepingResult struct {
	// Desired and Active count non-mirror pods, by static.
	DesiredStatic, DesiredRegular int
	ActiveStatic, ActiveRegular   int
	MirrorPods                    int
	// RestartedStatic and RestartedRegular count desired pods the workers did
	// not know that were started again (a pod recreated with the same UID).
	RestartedStatic, RestartedRegular int
	// OrphanedRuntimePods counts runtime pods the workers did not know that
	// were sent to termination.
	OrphanedRuntimePods int
	// TerminalPodsToDelete counts terminal pods being deleted, unknown to the
	// workers, that were sent a kill so that they finish.
	TerminalPodsToDelete int
	// OrphanedMirrorPodsDeleted counts mirror pods deleted for lack of a
	// static pod.
	OrphanedMirrorPodsDeleted int
	// FinishedRepublished counts finished pods, deleted since they
	// finished, whose final status was published again so that the API
	// object can go.
	FinishedRepublished int
	// DeadPodsRemoved counts pods whose dead remains (exited containers,
	// stopped sandboxes) were removed from the runtime because no worker
	// knows them.
	DeadPodsRemoved int
	// WorkingPods are the pod workers by label combination of
	// kubelet_working_pods.
	WorkingPods metrics.WorkingPodCounts
	// Start is when the pass began and Duration how long it took, on the
	// agent's clock.
	Start    time.Time
	Duration time.Duration
}

// Housekeeping runs one housekeeping pass (the kubelet's HandlePodCleanups,
// KUBELET-BEHAVIOUR.md §3.2). Run calls it every HousekeepingInterval once
// every source is ready, on the goroutine that applies config updates; call
// it directly only when Run is not running (tests).
//
// A direct call reads the runtime afresh (a relist that begins during the
// call); the passes of Run use the relister's last listing instead, so
// that they never wait for one (see housekeeping).
func (a *Agent) Housekeeping(ctx context.Context) error {
	_, err := a.housekeeping(ctx, true)
	return err
}

// LastHousekeeping returns what the last complete housekeeping pass did, and
// false before the first one.
func (a *Agent) LastHousekeeping() (HousekeepingResult, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	r := a.lastHousekeeping
	r.WorkingPods = maps.Clone(r.WorkingPods)
	return r, a.housekeepings > 0
}

// housekeeping runs one pass; fresh makes it wait for a relist that begins
// now, else it takes the relister's last listing.
func (a *Agent) housekeeping(ctx context.Context, fresh bool) (HousekeepingResult, error) {
	start := a.clock.Now()
	res := HousekeepingResult{Start: start}

	// The runtime view: the relister's listing (which also refreshed the
	// status cache). The passes of Run take the last one, which may be a
	// relist old, and so never wait (the kubelet lists the runtime inside
	// the pass: seconds at 100,000 pods). That is safe because a pod gets
	// its worker before its first container, and loses it only in
	// SyncKnownPods, after it finished and its containers were removed: a
	// listing shows no pod that no worker knows, except pods forgotten
	// after the listing began (a.forgotten), which are skipped.
	var listErr error
	n := uint64(0)
	if fresh {
		n = a.relist.Begun()
	}
	runtimePods, listing, err := a.relist.PodsAfter(ctx, n)
	if err != nil {
		listErr = fmt.Errorf("refresh runtime cache: %w", err)
	}

	// The config view.
	allPods, mirrorPods, orphanedMirrors := a.pods.GetPodsAndMirrorPods()

	// What the workers know; undesired pods are driven to termination and
	// finished ones forgotten. Listings numbered up to forgetAt may predate
	// the forgetting.
	workingPods := a.workers.SyncKnownPods(allPods)
	forgetAt := a.relist.Begun()

	// Orphaned mirror pods go, unless their static pod still terminates.
	if a.opts.MirrorClient != nil {
		for _, fullName := range orphanedMirrors {
			if a.workers.IsPodForMirrorPodTerminatingByFullName(fullName) {
				a.log.V(4).Info("orphaned mirror pod kept while its static pod terminates", "pod", fullName)
				continue
			}
			deleted, err := a.opts.MirrorClient.DeleteMirrorPod(ctx, fullName, nil)
			if err != nil {
				a.log.Error(err, "deleting orphaned mirror pod failed", "pod", fullName)
				continue
			}
			if deleted {
				res.OrphanedMirrorPodsDeleted++
				a.log.V(2).Info("orphaned mirror pod deleted", "pod", fullName)
			}
		}
	}

	// Desired and active pods, judged on the workers' answer: one lookup a
	// pod gives whether it is static and how far its worker got (at 100,000
	// pods, asking the workers and reading each pod's annotations again
	// was a third of the pass). Pods no worker knows are read directly.
	rejected := a.rejectedSnapshot()
	var active, unknownActive []*v1.Pod
	for _, pod := range allPods {
		ws, known := workingPods[pod.UID]
		static := ws.Static
		if !ws.HasConfig { // no worker, or a runtime-only one
			static = podmanager.IsStaticPod(pod)
		}
		count(static, &res.DesiredStatic, &res.DesiredRegular)
		if isInactive(pod, ws, known, rejected) {
			continue
		}
		active = append(active, pod)
		count(static, &res.ActiveStatic, &res.ActiveRegular)
		if !known {
			unknownActive = append(unknownActive, pod)
		}
	}
	res.MirrorPods = len(mirrorPods)
	a.metrics.SetDesiredPods(true, res.DesiredStatic)
	a.metrics.SetDesiredPods(false, res.DesiredRegular)
	a.metrics.SetActivePods(true, res.ActiveStatic)
	a.metrics.SetActivePods(false, res.ActiveRegular)
	a.metrics.SetMirrorPods(res.MirrorPods)

	// Active pods past their active deadline fail now, not at their next
	// sync.
	a.syncPastDeadline(active)

	// Active pods the workers do not know were deleted and recreated with
	// the same UID while they terminated: start them again.
	for _, pod := range unknownActive {
		static := podmanager.IsStaticPod(pod)
		_, mirror, _ := a.pods.GetPodAndMirrorPod(pod)
		a.log.V(2).Info("pod restarted", "pod", podRef(pod), "podUID", pod.UID, "static", static)
		a.updatePod(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodCreate, Pod: pod, MirrorPod: mirror})
		workingPods[pod.UID] = podworker.PodWorkerSync{State: podworker.SyncPod, HasConfig: true, Static: static}
		count(static, &res.RestartedStatic, &res.RestartedRegular)
	}
	a.metrics.AddRestartedPods(true, res.RestartedStatic)
	a.metrics.AddRestartedPods(false, res.RestartedRegular)

	a.forgetFinished(workingPods, forgetAt)
	for uid, g := range a.forgotten {
		if g < listing { // forgotten before the listing began
			delete(a.forgotten, uid)
		}
	}
	unknown := func(uid types.UID) bool {
		if _, known := workingPods[uid]; known {
			return false
		}
		_, forgottenSince := a.forgotten[uid]
		return !forgottenSince
	}
	var byUID map[types.UID]*runtime.Pod // built on first need
	runsNow := func(uid types.UID) bool {
		if byUID == nil {
			byUID = make(map[types.UID]*runtime.Pod, len(runtimePods))
			for _, p := range runtimePods {
				byUID[p.ID] = p
			}
		}
		p, ok := byUID[uid]
		return ok && runningPart(p) != nil
	}

	// Runtime pods the workers do not know: terminate them.
	for _, p := range runtimePods {
		if !unknown(p.ID) {
			continue
		}
		rp := runningPart(p)
		if rp == nil {
			continue
		}
		a.log.Info("terminating orphaned runtime pod", "pod", rp.Namespace+"/"+rp.Name, "podUID", rp.ID)
		one := int64(1)
		a.updatePod(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodKill, RunningPod: rp,
			KillPodOptions: &podworker.KillPodOptions{PodTerminationGracePeriodSecondsOverride: &one}})
		workingPods[rp.ID] = podworker.PodWorkerSync{State: podworker.TerminatingPod, Orphan: true}
		res.OrphanedRuntimePods++
	}
	a.metrics.AddOrphanedRuntimePods(res.OrphanedRuntimePods)

	// Terminal pods being deleted that no worker knows and that do not run:
	// a kill lets them finish (and their API object go).
	for _, pod := range allPods {
		if pod.DeletionTimestamp == nil || !(isTerminalPhase(pod.Status.Phase) || a.isRejected(pod)) {
			continue
		}
		if _, known := workingPods[pod.UID]; known {
			continue
		}
		if runsNow(pod.UID) {
			continue
		}
		res.TerminalPodsToDelete++
		a.updatePod(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodKill, Pod: pod})
	}
	// Finished pods deleted since: publish their final status again.
	res.FinishedRepublished = a.republishFinished(ctx, allPods)

	res.DeadPodsRemoved = a.removeDeadRemains(ctx, runtimePods, unknown)

	// kubelet_working_pods, every valid combination.
	res.WorkingPods = metrics.WorkingPodCounts{}
	for _, s := range workingPods {
		res.WorkingPods.Inc(metrics.WorkingPodKeyFor(s.State.String(), s.Orphan, s.HasConfig, s.Static))
	}
	if err := a.metrics.SetWorkingPods(res.WorkingPods); err != nil {
		a.log.Error(err, "programmer error: invalid working pod combination")
	}

	a.republishRejected(ctx)
	if listErr != nil {
		return res, listErr
	}
	res.Duration = a.clock.Since(start)
	a.mu.Lock()
	a.housekeepings++
	a.lastHousekeeping = res
	a.mu.Unlock()
	if res.Duration > housekeepingWarning {
		a.log.Info("housekeeping took long", "duration", res.Duration)
	}
	return res, nil
}

// maxDeadRemovalsPerPass bounds the runtime calls one housekeeping pass
// spends on dead remains, so that a large backlog does not stall the sync
// loop; the rest goes in the next passes.
const maxDeadRemovalsPerPass = 20

// removeDeadRemains removes what is left, dead, of pods that no worker knows
// and that are not desired: exited containers and stopped sandboxes of pods
// killed by an earlier agent but not yet removed, or whose sandbox died
// while no agent ran. Nothing else would ever remove them (the kubelet
// has container garbage collection for this). Errors are logged; the next
// pass tries again.
func (a *Agent) removeDeadRemains(ctx context.Context, all []*runtime.Pod, unknown func(types.UID) bool) int {
	removed, tried := 0, 0
	for _, rp := range all {
		if !unknown(rp.ID) {
			continue
		}
		if runningPart(rp) != nil {
			continue
		}
		if _, desired := a.pods.GetPodByUID(rp.ID); desired {
			continue
		}
		if tried == maxDeadRemovalsPerPass {
			break
		}
		tried++
		if err := a.rt.RemovePod(ctx, rp); err != nil {
			a.log.V(2).Info("removing dead remains of an unknown pod failed, will retry", "pod", rp.Namespace+"/"+rp.Name, "podUID", rp.ID, "error", err.Error())
			continue
		}
		a.cache.Delete(rp.ID)
		removed++
		a.log.V(2).Info("dead remains of an unknown pod removed", "pod", rp.Namespace+"/"+rp.Name, "podUID", rp.ID)
	}
	return removed
}

// running returns what GetPods(ctx, false) would list, from a listing of
// everything: the pods with a ready sandbox or a running container, each
// with only those. Pods that are entirely running are returned as they are;
// the others are copies.
func running(all []*runtime.Pod) []*runtime.Pod {
	var out []*runtime.Pod
	for _, p := range all {
		if rp := runningPart(p); rp != nil {
			out = append(out, rp)
		}
	}
	return out
}

// runningPart returns what GetPods(ctx, false) would list of p: nil when
// nothing of it runs, p itself when all of it runs, else a copy with only
// its ready sandboxes and running containers.
func runningPart(p *runtime.Pod) *runtime.Pod {
	sandboxes, allSandboxes := runningOnly(p.Sandboxes)
	containers, allContainers := runningOnly(p.Containers)
	switch {
	case len(sandboxes) == 0 && len(containers) == 0:
		return nil
	case allSandboxes && allContainers:
		return p
	default:
		c := *p
		c.Sandboxes, c.Containers = sandboxes, containers
		return &c
	}
}

// runningOnly returns the running ones of cs (cs itself when all are) and
// whether all are.
func runningOnly(cs []*runtime.Container) ([]*runtime.Container, bool) {
	n := 0
	for _, c := range cs {
		if c.State == runtime.ContainerStateRunning {
			n++
		}
	}
	if n == len(cs) {
		return cs, true
	}
	out := make([]*runtime.Container, 0, n)
	for _, c := range cs {
		if c.State == runtime.ContainerStateRunning {
			out = append(out, c)
		}
	}
	return out, false
}

// forgetFinished drops what the agent remembers of pods that neither the
// workers nor the pod manager know any more, and notes in a.forgotten that
// listings numbered up to forgetAt may show the pods the workers forgot
// since the previous pass (once per forgetting: a desired pod the workers
// no longer know is noted when they forget it, not at every pass).
func (a *Agent) forgetFinished(workingPods map[types.UID]podworker.PodWorkerSync, forgetAt uint64) {
	var gone []types.UID
	a.mu.Lock()
	for uid, t := range a.tracked {
		if _, known := workingPods[uid]; known {
			if t.forgotten {
				t.forgotten = false
				a.tracked[uid] = t
			}
			continue
		}
		if !t.forgotten {
			a.forgotten[uid] = forgetAt
			t.forgotten = true
			a.tracked[uid] = t
		}
		if _, desired := a.pods.GetPodByUID(uid); desired {
			continue
		}
		gone = append(gone, uid)
		delete(a.tracked, uid)
	}
	for uid := range a.rejected {
		if _, desired := a.pods.GetPodByUID(uid); !desired {
			delete(a.rejected, uid)
			gone = append(gone, uid)
		}
	}
	a.mu.Unlock()
	for _, uid := range gone {
		a.cache.Delete(uid)
		a.status.Delete(uid)
		a.forgetStatus(uid)
	}
	// A stopped status kept for a terminated sync that never came (the
	// workers forgot the pod first).
	for _, uid := range a.workerCache.stoppedUIDs() {
		if _, known := workingPods[uid]; !known {
			a.workerCache.forgetStopped(uid)
		}
	}
}

// republishRejected publishes again the Failed status of rejected pods that
// a reporter held back: before the first SyncKnownPods, the workers cannot
// tell that an unknown pod has no running containers.
func (a *Agent) republishRejected(ctx context.Context) {
	a.mu.Lock()
	rejected := make(map[types.UID]AdmitResult, len(a.rejected))
	for uid, r := range a.rejected {
		rejected[uid] = r
	}
	a.mu.Unlock()
	for uid, r := range rejected {
		if p, ok := a.status.phase(uid); ok && p == v1.PodFailed {
			continue
		}
		if pod, ok := a.pods.GetPodByUID(uid); ok {
			_, mirror, _ := a.pods.GetPodAndMirrorPod(pod)
			a.publishStatus(ctx, pod, mirror, rejectedStatus(pod, r))
		}
	}
}

func count(static bool, ifStatic, ifRegular *int) {
	if static {
		*ifStatic++
	} else {
		*ifRegular++
	}
}
