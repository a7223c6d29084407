package cri

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podlife/podlife/runtime"
)

// target is one container to stop.
type target struct {
	id    string
	name  string
	grace *int64 // from the container's annotations, if any
	// preStop recorded on the container (AnnotationPreStopHandler); the
	// pod spec's, when given, wins.
	preStop   *v1.LifecycleHandler
	sandboxID string
	owner     podIdentity // from its labels
	// created: never started; no preStop handler runs in it.
	created bool
}

// podObjects is what the runtime holds of one pod, read fresh, plus what a
// caller's runningPod adds (objects without podlife's labels).
type podObjects struct {
	running    []target // containers not exited
	stopped    []string // exited containers
	sandboxes  []string
	anyRunning bool // a container not exited or a sandbox ready
}

func (r *Runtime) podObjects(ctx context.Context, uid types.UID, runningPod *runtime.Pod) (*podObjects, error) {
	sel := map[string]string{LabelPodUID: string(uid)}
	sandboxes, err := r.listSandboxes(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: sel}, listOption()) // IDs and states only
	if err != nil {
		return nil, err
	}
	containers, err := r.listContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: sel})
	if err != nil {
		return nil, err
	}
	o := &podObjects{}
	seen := map[string]bool{}
	for _, sb := range sandboxes {
		seen[sb.GetId()] = true
		o.sandboxes = append(o.sandboxes, sb.GetId())
		o.anyRunning = o.anyRunning || sb.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY
	}
	for _, c := range containers {
		seen[c.GetId()] = true
		if c.GetState() == runtimeapi.ContainerState_CONTAINER_EXITED {
			o.stopped = append(o.stopped, c.GetId())
			continue
		}
		o.anyRunning = true
		o.running = append(o.running, target{
			id: c.GetId(), name: c.GetMetadata().GetName(), grace: infoFromAnnotations(c.GetAnnotations()).GracePeriod,
			preStop: preStopFromAnnotations(c.GetAnnotations()), sandboxID: c.GetPodSandboxId(), owner: identityFromLabels(c.GetLabels()),
			created: c.GetState() == runtimeapi.ContainerState_CONTAINER_CREATED,
		})
	}
	if runningPod != nil {
		for _, sb := range runningPod.Sandboxes {
			if !seen[sb.ID.ID] {
				o.sandboxes = append(o.sandboxes, sb.ID.ID)
				o.anyRunning = o.anyRunning || sb.State == runtime.ContainerStateRunning
			}
		}
		for _, c := range runningPod.Containers {
			if seen[c.ID.ID] {
				continue
			}
			if c.State == runtime.ContainerStateExited {
				o.stopped = append(o.stopped, c.ID.ID)
				continue
			}
			o.anyRunning = true
			o.running = append(o.running, target{id: c.ID.ID, name: c.Name, owner: podIdentity{UID: runningPod.ID, Name: runningPod.Name, Namespace: runningPod.Namespace}})
		}
	}
	return o, nil
}

func identify(pod *v1.Pod, runningPod *runtime.Pod) (uid types.UID, ref string, err error) {
	switch {
	case pod != nil:
		return pod.UID, podRef(pod), nil
	case runningPod != nil:
		return runningPod.ID, fmt.Sprintf("%s/%s (%s)", runningPod.Namespace, runningPod.Name, runningPod.ID), nil
	default:
		return "", "", fmt.Errorf("no pod given: %w", runtime.ErrInvalidArgument)
	}
}

// KillPod implements runtime.Runtime. Containers are stopped in parallel,
// each with gracePeriodOverride, else the pod's deletion or spec grace
// period, else the grace period recorded on the container, else 30 s, and
// never less than MinimumGracePeriod. Sandboxes are stopped after every
// container stop has returned, even a failed one. Containers and sandboxes
// that vanished count as stopped.
func (r *Runtime) KillPod(ctx context.Context, pod *v1.Pod, runningPod *runtime.Pod, gracePeriodOverride *int64) error {
	uid, ref, err := identify(pod, runningPod)
	if err != nil {
		return fmt.Errorf("kill pod: %w", err)
	}
	objs, err := r.podObjects(ctx, uid, runningPod)
	if err != nil {
		return fmt.Errorf("kill pod %s: %w", ref, err)
	}
	grace := func(t target) int64 {
		switch {
		case gracePeriodOverride != nil:
			return *gracePeriodOverride
		case podGracePeriod(pod) != nil:
			return *podGracePeriod(pod)
		case t.grace != nil:
			return *t.grace
		default:
			return DefaultGracePeriod
		}
	}
	r.log.V(2).Info("killing pod", "pod", ref, "containers", len(objs.running), "sandboxes", len(objs.sandboxes))
	// As the kubelet does, the sandboxes are stopped even when a container
	// stop failed: stopping a sandbox kills what is left in it, so a pod
	// always makes progress towards terminated.
	errs := []error{r.stopInOrder(ctx, pod, objs.running, grace)}
	for _, id := range objs.sandboxes {
		errs = append(errs, r.stopSandbox(ctx, id))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("kill pod %s: %w", ref, err)
	}
	return nil
}

// stopInOrder stops a pod's running containers as the kubelet does: the
// regular (and init) containers together first, then the sidecars one by
// one in the reverse of their order in the spec, each with what is left of
// the grace period (at least MinimumGracePeriod).
func (r *Runtime) stopInOrder(ctx context.Context, pod *v1.Pod, ts []target, grace func(target) int64) error {
	order := sidecarNames(pod)
	var first, sidecars []target
	for _, t := range ts {
		if _, ok := order[t.name]; ok {
			sidecars = append(sidecars, t)
		} else {
			first = append(first, t)
		}
	}
	if len(sidecars) == 0 {
		return r.stopTargets(ctx, pod, ts, grace)
	}
	start := r.opts.Clock.Now()
	errs := []error{r.stopTargets(ctx, pod, first, grace)}
	slices.SortStableFunc(sidecars, func(a, b target) int { return order[b.name] - order[a.name] })
	for _, t := range sidecars {
		left := grace(t) - int64(r.opts.Clock.Since(start).Seconds())
		errs = append(errs, r.stopTargets(ctx, pod, []target{t}, func(target) int64 { return max(left, MinimumGracePeriod) }))
	}
	return errors.Join(errs...)
}

// stopTargets stops containers in parallel, each after its preStop
// handler: the pod spec's when pod (may be nil) has the container, else
// the one recorded on it.
func (r *Runtime) stopTargets(ctx context.Context, pod *v1.Pod, ts []target, grace func(target) int64) error {
	errs := make([]error, len(ts))
	var wg sync.WaitGroup
	for i, t := range ts {
		wg.Go(func() {
			h := t.preStop
			if spec := findContainer(pod, t.name); spec != nil {
				h = preStopOf(spec)
			}
			if t.created {
				h = nil
			}
			ht := hookTarget{pod: eventObject(pod, t.owner), name: t.name, id: t.id, sandboxID: t.sandboxID}
			if err := r.killOne(ctx, ht, h, grace(t)); err != nil {
				errs[i] = fmt.Errorf("container %q: %w", t.name, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// RemovePod implements runtime.Runtime: it removes every container, then
// every sandbox, of a pod that no longer runs. A pod with a container not
// exited or a ready sandbox is refused with runtime.ErrFailedPrecondition
// (KillPod it first). Objects that vanished count as removed.
func (r *Runtime) RemovePod(ctx context.Context, runningPod *runtime.Pod) error {
	uid, ref, err := identify(nil, runningPod)
	if err != nil {
		return fmt.Errorf("remove pod: %w", err)
	}
	objs, err := r.podObjects(ctx, uid, runningPod)
	if err != nil {
		return fmt.Errorf("remove pod %s: %w", ref, err)
	}
	if objs.anyRunning {
		return fmt.Errorf("remove pod %s: it still runs; kill it first: %w", ref, runtime.ErrFailedPrecondition)
	}
	var errs []error
	for _, id := range objs.stopped {
		errs = append(errs, r.removeContainer(ctx, id))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("remove pod %s: %w", ref, err)
	}
	for _, id := range objs.sandboxes {
		errs = append(errs, r.removeSandbox(ctx, id))
	}
	// Its emptyDir volumes, termination-message files and logs go with it.
	errs = append(errs, r.removePodDir(uid), r.removePodLogs(uid, runningPod))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("remove pod %s: %w", ref, err)
	}
	r.log.V(2).Info("pod removed", "pod", ref)
	return nil
}
