package agent

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/podlife/podlife/podmanager"
)

// APIStatusReporterOptions configure an APIStatusReporter.
type APIStatusReporterOptions struct {
	// Client talks to the API server. Required.
	Client kubernetes.Interface
	// Logger: V(4) for every status written. The zero value discards.
	Logger logr.Logger
}

// APIStatusReporter is the client-go StatusReporter: it writes pod statuses
// to the API server, the way the kubelet's status manager does.
//
//   - The status of a static pod is written to its mirror pod (the static pod
//     itself does not exist in the API server); without a mirror pod nothing
//     is written.
//   - A terminal phase is never written while the pod could still have
//     running containers (MergeStatus, with the phase in the API as the old
//     one).
//   - A pod being deleted (deletion timestamp set) is deleted from the API
//     server, with grace period 0 and a UID precondition, only in
//     PodFinished, after its terminal status was written. Mirror pods are
//     never deleted here.
//
// Writes are read-modify-write with the resource version read, so a
// conflicting writer makes the call fail; the next sync writes again.
type APIStatusReporter struct {
	client kubernetes.Interface
	pods   PodStateProvider
	log    logr.Logger
}

var _ StatusReporter = (*APIStatusReporter)(nil)

// NewAPIStatusReporter returns an APIStatusReporter that asks pods whether a
// pod could still have running containers.
func NewAPIStatusReporter(pods PodStateProvider, opts APIStatusReporterOptions) (*APIStatusReporter, error) {
	if opts.Client == nil {
		return nil, errors.New("agent: APIStatusReporter: Client is required")
	}
	if pods == nil {
		return nil, errors.New("agent: APIStatusReporter: a PodStateProvider is required")
	}
	return &APIStatusReporter{client: opts.Client, pods: pods, log: opts.Logger}, nil
}

// SetPodStatus implements StatusReporter.
func (r *APIStatusReporter) SetPodStatus(ctx context.Context, pod, mirrorPod *v1.Pod, status v1.PodStatus) error {
	_, err := r.write(ctx, pod, mirrorPod, status)
	return err
}

// PodFinished implements StatusReporter: it writes the final status and then,
// for a pod being deleted, deletes it from the API server.
func (r *APIStatusReporter) PodFinished(ctx context.Context, pod, mirrorPod *v1.Pod, status v1.PodStatus) error {
	current, err := r.write(ctx, pod, mirrorPod, status)
	if err != nil || podmanager.IsStaticPod(pod) || current == nil {
		return err
	}
	if current.DeletionTimestamp == nil || !isTerminalPhase(current.Status.Phase) {
		return nil
	}
	uid := current.UID
	err = r.client.CoreV1().Pods(current.Namespace).Delete(ctx, current.Name, metav1.DeleteOptions{
		GracePeriodSeconds: new(int64),
		Preconditions:      &metav1.Preconditions{UID: &uid},
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete finished pod %s: %w", podRef(pod), err)
	}
	r.log.V(2).Info("finished pod deleted from the API server", "pod", podRef(pod), "podUID", pod.UID)
	return nil
}

// write writes status to the API object of pod (its mirror for a static
// pod) and returns that object as written; nil when it is gone.
func (r *APIStatusReporter) write(ctx context.Context, pod, mirrorPod *v1.Pod, status v1.PodStatus) (*v1.Pod, error) {
	target := pod
	if podmanager.IsStaticPod(pod) {
		if mirrorPod == nil {
			// Nothing to write to yet: the sync that creates the mirror
			// pod publishes again.
			r.log.V(4).Info("static pod has no mirror pod yet, status not written", "pod", podRef(pod), "podUID", pod.UID)
			return nil, nil
		}
		target = mirrorPod
	}
	pods := r.client.CoreV1().Pods(target.Namespace)
	current, err := pods.Get(ctx, target.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read pod %s: %w", podRef(target), err)
	}
	if current.UID != target.UID {
		// Another incarnation uses the name now; this one is gone.
		return nil, nil
	}
	merged := MergeStatus(&current.Status, status, r.pods.CouldHaveRunningContainers(pod.UID))
	if apiequality.Semantic.DeepEqual(current.Status, merged) {
		return current, nil
	}
	updated := current.DeepCopy()
	updated.Status = merged
	out, err := pods.UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("write status of %s: %w", podRef(target), err)
	}
	r.log.V(4).Info("pod status written", "pod", podRef(target), "podUID", target.UID, "phase", merged.Phase)
	return out, nil
}
