package cri

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podlife/podlife/runtime"
)

// SyncPod implements runtime.Runtime. It reads the pod's status (unless
// given), plans, and carries out the plan: planSync decides everything from
// the spec, the status, the back-off and the time, without calling the
// runtime (as the kubelet's computePodActions does), and runPlan acts. The
// plan is logged at verbosity 4 in one line ("sync plan"), naming why each
// container is started, restarted, stopped or left alone. Its rules:
//
//   - No ready sandbox: a new one is created (attempt+1), after stopping
//     whatever still runs of the pod, and every container is started in it,
//     except, under RestartPolicy OnFailure, those that succeeded. A pod with
//     RestartPolicy Never whose sandbox died after its containers ran, or
//     with OnFailure whose containers all succeeded, is left alone.
//   - Ready sandbox: a container with no instance yet is created and started;
//     an exited one is restarted when the restart policy says so (Always;
//     OnFailure and a non-zero exit code), unless it is in crash-loop back-off,
//     which gives an error wrapping runtime.ErrBackOff. A created but not
//     started instance is started. An instance in an unknown state is stopped
//     and restarted. A running container whose recorded spec hash differs
//     from its spec's (runtime.HashContainer) is stopped with the pod's grace
//     period and replaced; other running containers are left as they are.
//   - Ephemeral containers start once, when the sandbox is up, before
//     the init containers, and never again (planEphemeral); they count
//     for nothing below.
//   - Init containers run first, in order, each to success, and sidecars
//     (restartable init containers) start in their turn; regular
//     containers start once they are done (planInit). In a new
//     sandbox they run again.
//   - After a restart, older dead instances of the container are removed; the
//     newest dead one is kept (for its logs and exit code).
//   - When no container runs and none is to be (re)started or waits for its
//     back-off, every container has finished for good: the sandbox is
//     stopped, so that the pod's status becomes terminal.
//
// podStatus must be at least as new as the previous SyncPod of the pod (the
// pod workers' Cache.GetNewerThan gives that), or nil to read it now: with
// older data SyncPod may try to create an instance that exists already and
// fail with runtime.ErrAlreadyExists until it sees fresh data.
//
// The errors of all containers are joined; each names pod and container.
func (r *Runtime) SyncPod(ctx context.Context, pod *v1.Pod, podStatus *runtime.PodStatus) error {
	if err := r.checkPod(pod); err != nil {
		return err
	}
	if podStatus == nil {
		st, err := r.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
		if err != nil {
			return fmt.Errorf("sync pod %s: %w", podRef(pod), err)
		}
		podStatus = st
	}
	plan := planSync(planInput{pod: pod, status: podStatus, backOff: r.backOff, started: r.started, now: r.opts.Clock.Now()})
	r.log.V(4).Info("sync plan", "pod", pod.Namespace+"/"+pod.Name, "podUID", pod.UID, "plan", plan)
	return r.runPlan(ctx, pod, podStatus, plan)
}

// runPlan carries out a plan of planSync: the sandbox, then the ephemeral
// containers, then the init containers, then, once the pod is
// initialized, the regular containers;
// a pod whose containers all finished has its sandbox stopped. The errors
// of all containers are joined; a failure to stop the containers of a dead
// sandbox or to run a new one ends the sync.
func (r *Runtime) runPlan(ctx context.Context, pod *v1.Pod, st *runtime.PodStatus, p *syncPlan) error {
	if p.Idle != "" {
		return nil
	}
	sandboxID := p.SandboxID
	sandboxCfg, err := r.sandboxConfig(pod, p.Attempt)
	if err != nil {
		return fmt.Errorf("sync pod %s: %w", podRef(pod), err)
	}
	if p.CreateSandbox {
		if p.OldSandboxID != "" {
			if err := r.stopTargets(ctx, pod, killTargets(p.KillFirst), func(t target) int64 { return *t.grace }); err != nil {
				return fmt.Errorf("sync pod %s: stop containers of dead sandbox %q: %w", podRef(pod), p.OldSandboxID, err)
			}
		}
		id, err := r.runSandbox(ctx, pod, sandboxCfg)
		if err != nil {
			return err
		}
		sandboxID = id
	}
	x := &stepRunner{r: r, pod: pod, status: st, sandboxID: sandboxID, sandboxCfg: sandboxCfg}
	var errs []error
	for _, s := range p.Ephemeral {
		if err := ctx.Err(); err != nil {
			errs = append(errs, fmt.Errorf("ephemeral container %q of pod %s: %w", s.Name, podRef(pod), errors.Join(runtime.ErrCanceled, err)))
			return errors.Join(errs...)
		}
		errs = append(errs, x.run(ctx, s)...)
	}
	for _, s := range p.Init {
		if err := ctx.Err(); err != nil {
			errs = append(errs, fmt.Errorf("init container %q of pod %s: %w", s.Name, podRef(pod), err))
			return errors.Join(errs...)
		}
		errs = append(errs, x.run(ctx, s)...)
	}
	if !p.Initialized {
		// Regular containers wait for the init containers; a pod whose init
		// container failed for good (Never) starts nothing more, and its
		// status says Failed.
		return errors.Join(errs...)
	}
	for _, s := range p.Containers {
		if err := ctx.Err(); err != nil {
			errs = append(errs, fmt.Errorf("container %q of pod %s: %w", s.Name, podRef(pod), errors.Join(runtime.ErrCanceled, err)))
			break
		}
		errs = append(errs, x.run(ctx, s)...)
	}
	if p.Finished && len(errs) == 0 {
		// Every container has finished for good: the sandbox goes too, so
		// that the pod's status becomes terminal (the kubelet does the same).
		r.log.V(2).Info("all containers finished; stopping the sandbox", "pod", pod.Namespace+"/"+pod.Name, "podUID", pod.UID)
		if err := r.stopSandbox(ctx, sandboxID); err != nil {
			errs = append(errs, fmt.Errorf("sync pod %s: %w", podRef(pod), err))
		}
	}
	return errors.Join(errs...)
}

// killTargets are the targets of stopTargets for the kills of a plan.
func killTargets(ks []containerKill) []target {
	ts := make([]target, len(ks))
	for i := range ks {
		ts[i] = target{id: ks[i].ID, name: ks[i].Name, grace: &ks[i].Grace, created: ks[i].Created}
	}
	return ts
}

// stepRunner carries out the steps of one plan's containers.
type stepRunner struct {
	r          *Runtime
	pod        *v1.Pod
	status     *runtime.PodStatus
	sandboxID  string
	sandboxCfg *runtimeapi.PodSandboxConfig
}

// run carries out one container's step and returns its errors, each
// naming pod and container: the instance to stop first (a failed stop
// ends the step), the back-off (recorded when the restart goes ahead),
// the removal of older dead instances, then the start.
func (x *stepRunner) run(ctx context.Context, s containerStep) []error {
	r, pod := x.r, x.pod
	what := "container"
	switch {
	case s.Init:
		what = "init container"
	case s.Ephemeral:
		what = "ephemeral container"
	}
	wrap := func(err error) []error {
		return []error{fmt.Errorf("%s %q of pod %s: %w", what, s.Name, podRef(pod), err)}
	}
	c := findContainer(pod, s.Name)
	switch s.Action {
	case actNone, actKeep, actWait:
		return nil
	case actStartCreated:
		if err := r.startCreated(ctx, pod, s.Name, s.CreatedID); err != nil {
			return []error{err}
		}
		return nil
	}
	if k := s.Kill; k != nil {
		var err error
		if k.Reason == reasonSpecChanged {
			r.log.V(2).Info("container spec changed; restarting it", "pod", pod.Namespace+"/"+pod.Name, "container", s.Name)
			err = r.killOne(ctx, hookTarget{pod: pod, name: s.Name, id: k.ID, sandboxID: x.sandboxID}, preStopOf(c), k.Grace)
		} else {
			err = r.stopContainer(ctx, k.ID, k.Grace)
		}
		if err != nil {
			return wrap(err)
		}
	}
	if s.Action == actBackOff {
		return []error{fmt.Errorf("%s %q of pod %s exited with %d: %w", what, s.Name, podRef(pod), s.ExitCode, backOffError(pod, s.Name, s.BackOff))}
	}
	if s.Restart {
		r.backOff.next(s.BackOffKey)
	}
	if s.Ephemeral {
		if err := r.checkEphemeral(pod, s); err != nil {
			return []error{r.configError(pod, c, err)}
		}
	}
	// The older dead instances go before the new one is created, with
	// their log and termination-message files: a container that
	// restarts for ever keeps one dead instance (the newest, for its logs
	// and exit code), never two. Failures are only logged: container
	// garbage collection (agent/gc) or the pod's removal takes them.
	for _, id := range s.Prune {
		if err := r.RemoveContainer(ctx, id); err != nil {
			r.log.V(4).Info("could not remove dead container", "pod", x.status.Namespace+"/"+x.status.Name, "container", s.Name, "err", err)
		}
	}
	if err := r.startContainer(ctx, pod, c, x.sandboxID, x.sandboxCfg, s.RestartCount, s.TargetID); err != nil {
		return []error{err}
	}
	return nil
}

// gracePeriodOf is the pod's grace period, or DefaultGracePeriod.
func gracePeriodOf(pod *v1.Pod) int64 {
	if gp := podGracePeriod(pod); gp != nil {
		return *gp
	}
	return DefaultGracePeriod
}
