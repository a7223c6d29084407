package source

import (
	"bytes"
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// MaxManifestBytes is the largest manifest or HTTP body a source accepts.
const MaxManifestBytes = 10 << 20

// DecodeManifest decodes one v1 Pod from YAML or JSON. It requires
// apiVersion v1 and kind Pod, and returns an error wrapping ErrDecode or
// ErrNotPod otherwise. It never panics. The pod is not defaulted nor
// validated; see ApplyStaticPodDefaults and ValidatePod.
func DecodeManifest(data []byte) (*v1.Pod, error) {
	j, tm, err := decodeTypeMeta(data)
	if err != nil {
		return nil, err
	}
	if tm.Kind != "Pod" {
		return nil, fmt.Errorf("%w: apiVersion %q kind %q", ErrNotPod, tm.APIVersion, tm.Kind)
	}
	pod := &v1.Pod{}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(j, pod); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrDecode, err)
	}
	return pod, nil
}

// DecodePods decodes a v1 Pod or a v1 PodList from YAML or JSON.
func DecodePods(data []byte) ([]*v1.Pod, error) {
	j, tm, err := decodeTypeMeta(data)
	if err != nil {
		return nil, err
	}
	switch tm.Kind {
	case "Pod":
		pod := &v1.Pod{}
		if err := sigsjson.UnmarshalCaseSensitivePreserveInts(j, pod); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrDecode, err)
		}
		return []*v1.Pod{pod}, nil
	case "PodList":
		list := &v1.PodList{}
		if err := sigsjson.UnmarshalCaseSensitivePreserveInts(j, list); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrDecode, err)
		}
		pods := make([]*v1.Pod, 0, len(list.Items))
		for i := range list.Items {
			pods = append(pods, &list.Items[i])
		}
		return pods, nil
	default:
		return nil, fmt.Errorf("%w: apiVersion %q kind %q", ErrNotPod, tm.APIVersion, tm.Kind)
	}
}

// decodeTypeMeta converts data to JSON and reads its apiVersion and kind,
// which must be v1 and non-empty.
func decodeTypeMeta(data []byte) (j []byte, tm metav1.TypeMeta, err error) {
	if len(data) > MaxManifestBytes {
		return nil, tm, fmt.Errorf("%w: %d bytes is larger than %d", ErrDecode, len(data), MaxManifestBytes)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, tm, fmt.Errorf("%w: empty manifest", ErrDecode)
	}
	j, err = yamlToJSON(data)
	if err != nil {
		return nil, tm, err
	}
	if !bytes.HasPrefix(bytes.TrimSpace(j), []byte("{")) {
		return nil, tm, fmt.Errorf("%w: not an object", ErrNotPod)
	}
	if err := json.Unmarshal(j, &tm); err != nil {
		return nil, tm, fmt.Errorf("%w: %v", ErrNotPod, err)
	}
	if tm.APIVersion != "v1" {
		return nil, tm, fmt.Errorf("%w: apiVersion %q kind %q", ErrNotPod, tm.APIVersion, tm.Kind)
	}
	return j, tm, nil
}

// yamlToJSON converts YAML (a superset of JSON) to JSON. The YAML parser is
// third-party code facing untrusted input; a panic in it becomes ErrDecode.
func yamlToJSON(data []byte) (j []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			j, err = nil, fmt.Errorf("%w: yaml parser failed: %v", ErrDecode, r)
		}
	}()
	j, err = yaml.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrDecode, err)
	}
	return j, nil
}
