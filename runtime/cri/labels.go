package cri

import (
	"maps"
	"strconv"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The kubelet's labels and annotations. podlife puts the same ones on what it
// creates, so that a restarted agent (and crictl) recognises its pods.
const (
	LabelPodName       = "io.kubernetes.pod.name"
	LabelPodNamespace  = "io.kubernetes.pod.namespace"
	LabelPodUID        = "io.kubernetes.pod.uid"
	LabelContainerName = "io.kubernetes.container.name"

	AnnotationContainerHash             = "io.kubernetes.container.hash"
	AnnotationContainerRestartCount     = "io.kubernetes.container.restartCount"
	AnnotationTerminationMessagePath    = "io.kubernetes.container.terminationMessagePath"
	AnnotationTerminationMessagePolicy  = "io.kubernetes.container.terminationMessagePolicy"
	AnnotationPodTerminationGracePeriod = "io.kubernetes.pod.terminationGracePeriod"
)

// sandboxLabels: the pod's labels plus the identity labels (which win).
func sandboxLabels(pod *v1.Pod) map[string]string {
	l := maps.Clone(pod.Labels)
	if l == nil {
		l = map[string]string{}
	}
	l[LabelPodName] = pod.Name
	l[LabelPodNamespace] = pod.Namespace
	l[LabelPodUID] = string(pod.UID)
	return l
}

func sandboxAnnotations(pod *v1.Pod) map[string]string {
	a := maps.Clone(pod.Annotations)
	if a == nil {
		a = map[string]string{}
	}
	return a
}

func containerLabels(pod *v1.Pod, c *v1.Container) map[string]string {
	return map[string]string{
		LabelPodName:       pod.Name,
		LabelPodNamespace:  pod.Namespace,
		LabelPodUID:        string(pod.UID),
		LabelContainerName: c.Name,
	}
}

func containerAnnotations(pod *v1.Pod, c *v1.Container, hash uint64, restartCount int) map[string]string {
	a := map[string]string{
		AnnotationContainerHash:         strconv.FormatUint(hash, 16),
		AnnotationContainerRestartCount: strconv.Itoa(restartCount),
	}
	if c.TerminationMessagePath != "" {
		a[AnnotationTerminationMessagePath] = c.TerminationMessagePath
	}
	if c.TerminationMessagePolicy != "" {
		a[AnnotationTerminationMessagePolicy] = string(c.TerminationMessagePolicy)
	}
	if gp := podGracePeriod(pod); gp != nil {
		a[AnnotationPodTerminationGracePeriod] = strconv.FormatInt(*gp, 10)
	}
	preStopAnnotation(c, a)
	return a
}

// podIdentity is what labels say about the pod an object belongs to.
type podIdentity struct {
	UID       types.UID
	Name      string
	Namespace string
}

func identityFromLabels(l map[string]string) podIdentity {
	return podIdentity{UID: types.UID(l[LabelPodUID]), Name: l[LabelPodName], Namespace: l[LabelPodNamespace]}
}

// containerInfo is what annotations say about a container.
type containerInfo struct {
	Hash         uint64
	RestartCount int
	GracePeriod  *int64
}

func infoFromAnnotations(a map[string]string) containerInfo {
	ci := containerInfo{Hash: hashFromAnnotations(a)}
	if s := a[AnnotationContainerRestartCount]; s != "" {
		if n, err := strconv.Atoi(s); err == nil && n >= 0 {
			ci.RestartCount = n
		}
	}
	if s := a[AnnotationPodTerminationGracePeriod]; s != "" {
		if gp, err := strconv.ParseInt(s, 10, 64); err == nil {
			ci.GracePeriod = &gp
		}
	}
	return ci
}

// hashFromAnnotations returns the container hash annotation, 0 when absent
// or malformed. Absent annotations are not parsed: a failed parse
// allocates its error.
func hashFromAnnotations(a map[string]string) uint64 {
	if s := a[AnnotationContainerHash]; s != "" {
		if h, err := strconv.ParseUint(s, 16, 64); err == nil {
			return h
		}
	}
	return 0
}

// podGracePeriod: the deletion grace period when the pod is being deleted,
// else the spec's.
func podGracePeriod(pod *v1.Pod) *int64 {
	if pod == nil {
		return nil
	}
	if pod.DeletionGracePeriodSeconds != nil {
		return pod.DeletionGracePeriodSeconds
	}
	return pod.Spec.TerminationGracePeriodSeconds
}
