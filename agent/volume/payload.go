package volume

import (
	"fmt"
	"io/fs"

	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/agent/envvars"
)

// DefaultMode is the mode of a volume's files when neither the item nor
// the volume sets one (the API's default for configMap, secret,
// downwardAPI and projected volumes).
const DefaultMode = fs.FileMode(0o644)

// fileMode is mode (else def) as a FileMode, refusing values outside
// 0..0777 (the API server refuses them too; static pods are not checked).
func fileMode(mode *int32, def fs.FileMode) (fs.FileMode, error) {
	if mode == nil {
		return def, nil
	}
	if *mode < 0 || *mode > 0o777 {
		return 0, fmt.Errorf("mode %#o out of range (0 to 0777)", *mode)
	}
	return fs.FileMode(*mode), nil
}

// keyPayload is the payload of a ConfigMap's or Secret's data: every key
// as a file when items is empty, else the items (path, mode); an item
// whose key is missing is skipped when optional, an error otherwise (the
// kubelet's message names kind).
func keyPayload(kind string, data map[string][]byte, items []v1.KeyToPath, defaultMode *int32, optional bool) (map[string]File, error) {
	def, err := fileMode(defaultMode, DefaultMode)
	if err != nil {
		return nil, fmt.Errorf("defaultMode: %w", err)
	}
	out := map[string]File{}
	if len(items) == 0 {
		for k, v := range data {
			out[k] = File{Data: v, Mode: def}
		}
		return out, nil
	}
	for _, it := range items {
		v, ok := data[it.Key]
		if !ok {
			if optional {
				continue
			}
			return nil, fmt.Errorf("%s references non-existent %s key: %s", kind, kind, it.Key)
		}
		m, err := fileMode(it.Mode, def)
		if err != nil {
			return nil, fmt.Errorf("item %q: %w", it.Key, err)
		}
		out[it.Path] = File{Data: v, Mode: m}
	}
	return out, nil
}

// configMapData is a ConfigMap's data and binaryData as bytes.
func configMapData(cm *v1.ConfigMap) map[string][]byte {
	out := make(map[string][]byte, len(cm.Data)+len(cm.BinaryData))
	for k, v := range cm.Data {
		out[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		out[k] = v
	}
	return out
}

// ConfigMapPayload is the files of a configMap volume (or projection)
// from cm; cm nil means it does not exist, allowed when optional.
func ConfigMapPayload(name string, cm *v1.ConfigMap, items []v1.KeyToPath, defaultMode *int32, optional bool) (map[string]File, error) {
	if cm == nil {
		if optional {
			return map[string]File{}, nil
		}
		return nil, fmt.Errorf("configmap %q not found", name)
	}
	return keyPayload("configmap", configMapData(cm), items, defaultMode, optional)
}

// SecretPayload is the files of a secret volume (or projection) from s;
// s nil means it does not exist, allowed when optional.
func SecretPayload(name string, s *v1.Secret, items []v1.KeyToPath, defaultMode *int32, optional bool) (map[string]File, error) {
	if s == nil {
		if optional {
			return map[string]File{}, nil
		}
		return nil, fmt.Errorf("secret %q not found", name)
	}
	return keyPayload("secret", s.Data, items, defaultMode, optional)
}

// DownwardAPIPayload is the files of a downwardAPI volume (or
// projection): each item's fieldRef (the pod's metadata, as
// envvars.PodFieldValue gives it) or resourceFieldRef (of the named
// container, a limit it does not set being the node's allocatable).
func DownwardAPIPayload(pod *v1.Pod, items []v1.DownwardAPIVolumeFile, defaultMode *int32, allocatable v1.ResourceList) (map[string]File, error) {
	def, err := fileMode(defaultMode, DefaultMode)
	if err != nil {
		return nil, fmt.Errorf("defaultMode: %w", err)
	}
	out := map[string]File{}
	for _, it := range items {
		var v string
		switch {
		case it.FieldRef != nil:
			v, err = envvars.PodFieldValue(pod, it.FieldRef.FieldPath, nil, nil)
		case it.ResourceFieldRef != nil:
			v, err = envvars.ResourceValue(pod, nil, it.ResourceFieldRef, allocatable)
		default:
			err = fmt.Errorf("no fieldRef nor resourceFieldRef")
		}
		if err != nil {
			return nil, fmt.Errorf("downwardAPI item %q: %w", it.Path, err)
		}
		m, err := fileMode(it.Mode, def)
		if err != nil {
			return nil, fmt.Errorf("downwardAPI item %q: %w", it.Path, err)
		}
		out[it.Path] = File{Data: []byte(v), Mode: m}
	}
	return out, nil
}

// merge adds src to dst, refusing a path given twice.
func merge(dst, src map[string]File) error {
	for p, f := range src {
		if _, dup := dst[p]; dup {
			return fmt.Errorf("path %q is projected more than once", p)
		}
		dst[p] = f
	}
	return nil
}
