package podmanager

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// Annotation keys the kubelet stamps on pods, and that podlife keeps.
const (
	// ConfigSourceAnnotationKey names the source a pod came from: FileSource,
	// HTTPSource or APISource.
	ConfigSourceAnnotationKey = "kubernetes.io/config.source"
	// ConfigMirrorAnnotationKey marks a mirror pod; its value is the static
	// pod's ConfigHashAnnotationKey value.
	ConfigMirrorAnnotationKey = v1.MirrorPodAnnotationKey
	// ConfigFirstSeenAnnotationKey records when the agent first saw the pod.
	ConfigFirstSeenAnnotationKey = "kubernetes.io/config.seen"
	// ConfigHashAnnotationKey carries the hash of a static pod's manifest.
	ConfigHashAnnotationKey = "kubernetes.io/config.hash"
)

// Pod sources.
const (
	FileSource = "file"
	HTTPSource = "http"
	APISource  = "api"
	// AllSource is the pseudo-source of a merged update.
	AllSource = "*"
)

// FullName returns name_namespace, the key under which the agent knows a pod
// whatever its UID.
func FullName(pod *v1.Pod) string { return BuildFullName(pod.Name, pod.Namespace) }

// BuildFullName returns name_namespace.
func BuildFullName(name, namespace string) string { return name + "_" + namespace }

// ParseFullName splits name_namespace. Names and namespaces cannot contain an
// underscore, so exactly two non-empty parts are required.
func ParseFullName(fullName string) (name, namespace string, err error) {
	parts := strings.Split(fullName, "_")
	if len(parts) != 2 || parts[0] == "" || parts[1] == "" {
		return "", "", fmt.Errorf("parse pod full name %q: want name_namespace", fullName)
	}
	return parts[0], parts[1], nil
}

// PodSource returns the pod's config source annotation, or an error when it
// has none.
func PodSource(pod *v1.Pod) (string, error) {
	if source, ok := pod.Annotations[ConfigSourceAnnotationKey]; ok {
		return source, nil
	}
	return "", fmt.Errorf("pod %s has no %s annotation", FullName(pod), ConfigSourceAnnotationKey)
}

// IsStaticPod reports whether the pod comes from a source other than the API
// server (a manifest file or an HTTP URL).
func IsStaticPod(pod *v1.Pod) bool {
	if pod == nil {
		return false
	}
	// A direct lookup: PodSource would build an error for every pod
	// without the annotation, and this runs for every pod on hot paths.
	source, ok := pod.Annotations[ConfigSourceAnnotationKey]
	return ok && source != APISource
}

// IsMirrorPod reports whether the pod is the API server's mirror of a static
// pod.
func IsMirrorPod(pod *v1.Pod) bool {
	if pod == nil {
		return false
	}
	_, ok := pod.Annotations[ConfigMirrorAnnotationKey]
	return ok
}

// PodHash returns the static pod's config hash annotation ("" when unset).
func PodHash(pod *v1.Pod) string { return pod.Annotations[ConfigHashAnnotationKey] }

// MirrorHash returns the mirror annotation of a mirror pod and whether it is
// set.
func MirrorHash(pod *v1.Pod) (string, bool) {
	h, ok := pod.Annotations[ConfigMirrorAnnotationKey]
	return h, ok
}
