package source

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/podmanager"
)

// ApplyStaticPodDefaults turns a decoded manifest into a static pod the way
// the kubelet does:
//
//   - no metadata.uid: the UID is derived from the manifest's content, the
//     node name, the source and origin (file path or URL), so re-reading an
//     unchanged manifest gives the same UID and editing it gives a new one;
//   - the name gets the suffix "-<lower-case node name>";
//   - an empty namespace becomes "default";
//   - spec.nodeName is the node; status.phase is Pending;
//   - kubernetes.io/config.hash is the UID and kubernetes.io/config.source
//     the source;
//   - pods from files tolerate every NoExecute taint.
//
// kubernetes.io/config.seen is stamped by the Config on first sight.
func ApplyStaticPodDefaults(pod *v1.Pod, source, origin, nodeName string) error {
	if pod.UID == "" {
		content, err := json.Marshal(pod)
		if err != nil {
			return fmt.Errorf("%w: hash manifest: %v", ErrDecode, err)
		}
		h := sha256.New()
		h.Write(content)
		fmt.Fprintf(h, "\x00node:%s\x00source:%s\x00origin:%s", nodeName, source, origin)
		pod.UID = types.UID(hex.EncodeToString(h.Sum(nil)[:16]))
	}
	pod.Name = pod.Name + "-" + strings.ToLower(nodeName)
	if pod.Namespace == "" {
		pod.Namespace = metav1.NamespaceDefault
	}
	pod.Spec.NodeName = nodeName
	if pod.Annotations == nil {
		pod.Annotations = make(map[string]string, 2)
	}
	pod.Annotations[podmanager.ConfigHashAnnotationKey] = string(pod.UID)
	pod.Annotations[podmanager.ConfigSourceAnnotationKey] = source
	if source == podmanager.FileSource {
		addNoExecuteToleration(pod)
	}
	pod.Status.Phase = v1.PodPending
	return nil
}

func addNoExecuteToleration(pod *v1.Pod) {
	want := v1.Toleration{Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}
	for _, t := range pod.Spec.Tolerations {
		if t.MatchToleration(&want) {
			return
		}
	}
	pod.Spec.Tolerations = append(pod.Spec.Tolerations, want)
}

// staticPodFromManifest decodes, defaults and validates one manifest.
func staticPodFromManifest(data []byte, source, origin, nodeName string) (*v1.Pod, error) {
	pod, err := DecodeManifest(data)
	if err != nil {
		return nil, err
	}
	if err := ApplyStaticPodDefaults(pod, source, origin, nodeName); err != nil {
		return nil, err
	}
	if err := ValidatePod(pod); err != nil {
		return nil, err
	}
	return pod, nil
}
