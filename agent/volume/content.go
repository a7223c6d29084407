package volume

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// payload is the files volume v of pod holds now.
func (m *Manager) payload(ctx context.Context, pod *v1.Pod, v *v1.Volume) (map[string]File, error) {
	var alloc v1.ResourceList
	if m.opts.Allocatable != nil {
		alloc = m.opts.Allocatable()
	}
	switch {
	case v.ConfigMap != nil:
		s := v.ConfigMap
		cm, err := m.configMap(ctx, pod, s.Name)
		if err != nil {
			return nil, err
		}
		return ConfigMapPayload(s.Name, cm, s.Items, s.DefaultMode, isTrue(s.Optional))
	case v.Secret != nil:
		s := v.Secret
		sec, err := m.secret(ctx, pod, s.SecretName)
		if err != nil {
			return nil, err
		}
		return SecretPayload(s.SecretName, sec, s.Items, s.DefaultMode, isTrue(s.Optional))
	case v.DownwardAPI != nil:
		return DownwardAPIPayload(pod, v.DownwardAPI.Items, v.DownwardAPI.DefaultMode, alloc)
	case v.Projected != nil:
		return m.projected(ctx, pod, v.Projected, alloc)
	}
	return nil, fmt.Errorf("volume %q: no content", v.Name)
}

// projected is the payload of a projected volume: its sources merged.
func (m *Manager) projected(ctx context.Context, pod *v1.Pod, p *v1.ProjectedVolumeSource, alloc v1.ResourceList) (map[string]File, error) {
	out := map[string]File{}
	def, err := fileMode(p.DefaultMode, DefaultMode)
	if err != nil {
		return nil, fmt.Errorf("defaultMode: %w", err)
	}
	defMode := int32(def)
	for i, src := range p.Sources {
		var part map[string]File
		switch {
		case src.ConfigMap != nil:
			s := src.ConfigMap
			cm, err := m.configMap(ctx, pod, s.Name)
			if err != nil {
				return nil, err
			}
			part, err = ConfigMapPayload(s.Name, cm, s.Items, &defMode, isTrue(s.Optional))
			if err != nil {
				return nil, err
			}
		case src.Secret != nil:
			s := src.Secret
			sec, err := m.secret(ctx, pod, s.Name)
			if err != nil {
				return nil, err
			}
			part, err = SecretPayload(s.Name, sec, s.Items, &defMode, isTrue(s.Optional))
			if err != nil {
				return nil, err
			}
		case src.DownwardAPI != nil:
			part, err = DownwardAPIPayload(pod, src.DownwardAPI.Items, &defMode, alloc)
			if err != nil {
				return nil, err
			}
		case src.ServiceAccountToken != nil:
			s := src.ServiceAccountToken
			exp := int64(0)
			if s.ExpirationSeconds != nil {
				exp = *s.ExpirationSeconds
			}
			tok, err := m.tokens.Token(ctx, pod, s.Audience, exp)
			if tok == "" {
				return nil, err
			}
			if err != nil {
				m.log.Info("token refresh failed; the current token is kept until it expires", "pod", pod.Namespace+"/"+pod.Name, "err", err)
			}
			// With an fsGroup or a single user, the token is 0600 (the
			// ownership then adds the group's read bit), owned by that
			// user: the kubelet's.
			mode, user := def, FsUser(pod)
			if user != nil || PodOwnership(pod, true).FSGroup != nil {
				mode = 0o600
			}
			part = map[string]File{s.Path: {Data: []byte(tok), Mode: mode, FsUser: user}}
		case src.ClusterTrustBundle != nil:
			return nil, fmt.Errorf("sources[%d].clusterTrustBundle: not supported by podlife", i)
		case src.PodCertificate != nil:
			return nil, fmt.Errorf("sources[%d].podCertificate: not supported by podlife", i)
		default:
			return nil, fmt.Errorf("sources[%d]: no source", i)
		}
		if err := merge(out, part); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// configMap is the ConfigMap from its watch; nil when it does not exist.
func (m *Manager) configMap(ctx context.Context, pod *v1.Pod, name string) (*v1.ConfigMap, error) {
	obj, err := m.object(ctx, objectKey{namespace: pod.Namespace, name: name}, pod)
	if obj == nil {
		return nil, err
	}
	return obj.(*v1.ConfigMap), nil
}

// secret is the Secret from its watch; nil when it does not exist.
func (m *Manager) secret(ctx context.Context, pod *v1.Pod, name string) (*v1.Secret, error) {
	obj, err := m.object(ctx, objectKey{secret: true, namespace: pod.Namespace, name: name}, pod)
	if obj == nil {
		return nil, err
	}
	return obj.(*v1.Secret), nil
}

func (m *Manager) object(ctx context.Context, key objectKey, pod *v1.Pod) (any, error) {
	if m.opts.Client == nil {
		return nil, fmt.Errorf("%s: no API server", key)
	}
	obj, err := m.watcher.get(ctx, key, pod.UID)
	if apierrors.IsNotFound(err) {
		return nil, nil // the payload says whether that is allowed
	}
	if err != nil {
		return nil, err
	}
	return obj, nil
}

func isTrue(b *bool) bool { return b != nil && *b }
