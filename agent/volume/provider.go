package volume

import (
	"context"
	"errors"

	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/agent/envvars"
	"github.com/podlife/podlife/runtime"
)

// Provider is the runtime.ContainerOptionsProvider of a node with an API
// server: the volumes of Volumes, the environment of Env, expanded
// command and args, and the image pull credentials of Credentials.
type Provider struct {
	Volumes *Manager
	Env     *envvars.Resolver
	// Credentials gives the image pull credentials of a pod (its
	// imagePullSecrets: agent/credentials.Provider). Nil: anonymous pulls.
	Credentials ImageCredentials
}

// ImageCredentials gives the credentials to try, in order, to pull an
// image for a pod (agent/credentials.Provider has this method).
type ImageCredentials interface {
	ImagePullCredentials(ctx context.Context, pod *v1.Pod, image string) ([]runtime.ImageAuth, error)
}

var _ runtime.ContainerOptionsProvider = Provider{}

// HandlesVolume implements runtime.ContainerOptionsProvider.
func (p Provider) HandlesVolume(v *v1.Volume) bool { return p.Volumes.HandlesVolume(v) }

// RunContainerOptions implements runtime.ContainerOptionsProvider: it
// sets up the volumes c mounts that the Manager handles, then makes its
// environment. A volume or env var that cannot be made gives an error
// wrapping runtime.ErrFailedPrecondition.
func (p Provider) RunContainerOptions(ctx context.Context, pod *v1.Pod, c *v1.Container, podIPs []string) (*runtime.RunContainerOptions, error) {
	out := &runtime.RunContainerOptions{Volumes: map[string]runtime.PreparedVolume{}}
	for _, m := range c.VolumeMounts {
		if _, done := out.Volumes[m.Name]; done {
			continue
		}
		for i := range pod.Spec.Volumes {
			v := &pod.Spec.Volumes[i]
			if v.Name != m.Name || !p.Volumes.HandlesVolume(v) {
				continue
			}
			pv, err := p.Volumes.SetUp(ctx, pod, v)
			if err != nil {
				return nil, &envvars.ConfigError{Err: err}
			}
			out.Volumes[v.Name] = pv
		}
	}
	env, err := p.Env.Env(ctx, pod, c, podIPs)
	if err != nil {
		var ce *envvars.ConfigError
		if !errors.As(err, &ce) {
			err = &envvars.ConfigError{Err: err}
		}
		return nil, err
	}
	out.Env = env
	out.Command, out.Args = envvars.CommandAndArgs(c, env)
	return out, nil
}

// ImagePullCredentials implements runtime.ContainerOptionsProvider: those
// of Credentials, none without it.
func (p Provider) ImagePullCredentials(ctx context.Context, pod *v1.Pod, image string) ([]runtime.ImageAuth, error) {
	if p.Credentials == nil {
		return nil, nil
	}
	return p.Credentials.ImagePullCredentials(ctx, pod, image)
}
