package cri

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podlife/podlife/runtime"
)

// Container options from a provider.
//
// A runtime.ContainerOptionsProvider (SetContainerOptionsProvider) takes
// over what the pod's spec alone cannot give: the volumes it says it
// handles (configMap, secret, projected, downwardAPI, ...) are prepared
// by it and bound here from its folders, and each container's whole
// environment, command and arguments come from it, resolved and expanded.
// Without one, the adapter runs what the spec alone describes and refuses
// the rest (validatePod), as before.

// providerBox holds the provider, set after New.
type providerBox struct {
	p runtime.ContainerOptionsProvider
}

// SetContainerOptionsProvider makes the adapter take the volumes p
// handles, and every container's environment, command and arguments,
// from p (the agent calls it when it has a cluster client). nil restores
// the spec-only behaviour. It is safe to call at any time; a pod being
// synced may see either.
func (r *Runtime) SetContainerOptionsProvider(p runtime.ContainerOptionsProvider) {
	if p == nil {
		r.provider.Store(nil)
		return
	}
	r.provider.Store(&providerBox{p})
}

func (r *Runtime) optionsProvider() runtime.ContainerOptionsProvider {
	if b := r.provider.Load(); b != nil {
		return b.p
	}
	return nil
}

// checkPod is validatePod for this adapter: with a provider, the volumes
// it handles and every env source are its business (errors about them
// come when a container is created, and are retried), and the rest of
// the spec is checked as without one.
func (r *Runtime) checkPod(pod *v1.Pod) error {
	if err := validatePod(providerView(pod, r.optionsProvider())); err != nil {
		return err
	}
	if err := errors.Join(r.validateSysctls(pod)...); err != nil {
		return fmt.Errorf("invalid pod %s: %w", podRef(pod), errors.Join(runtime.ErrInvalidArgument, err))
	}
	return nil
}

// providerView is the pod as the spec-only checks should see it when p
// takes over part of it: a copy in which the volumes p handles are plain
// emptyDirs (names kept, so mounts still resolve) and no env var has a
// valueFrom nor any container an envFrom. Without p it is pod itself.
func providerView(pod *v1.Pod, p runtime.ContainerOptionsProvider) *v1.Pod {
	if p == nil || pod == nil {
		return pod
	}
	view := pod.DeepCopy()
	for i := range view.Spec.Volumes {
		v := &view.Spec.Volumes[i]
		if p.HandlesVolume(&pod.Spec.Volumes[i]) {
			v.VolumeSource = v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}
		}
	}
	strip := func(c *v1.Container) {
		c.EnvFrom = nil
		for j := range c.Env {
			c.Env[j].ValueFrom = nil
		}
	}
	for _, list := range podContainerLists(view) {
		for i := range list.cs {
			strip(&list.cs[i])
		}
	}
	for i := range view.Spec.EphemeralContainers {
		strip(asContainer(&view.Spec.EphemeralContainers[i]))
	}
	return view
}

// containerRunOptions is what the CRI config of a container takes from
// its run options.
type containerRunOptions struct {
	mounts  []*runtimeapi.Mount
	envs    []*runtimeapi.KeyValue
	command []string
	args    []string
}

// runOptions prepares container c's volumes and environment: from the
// provider when there is one, else from the spec alone (emptyDir and
// hostPath volumes, env values and the pod's own downward API). podIPs
// gives the pod's IPs (empty when unknown); it is called only when there
// is a provider, so that a runtime without one makes no extra CRI call. Its errors wrap
// runtime.ErrFailedPrecondition: nothing was created, and the next sync
// tries again (the kubelet's CreateContainerConfigError).
func (r *Runtime) runOptions(ctx context.Context, pod *v1.Pod, c *v1.Container, podIPs func() []string) (*containerRunOptions, error) {
	p := r.optionsProvider()
	if p == nil {
		envs := specEnv(pod, c)
		env := make(map[string]string, len(envs))
		for _, e := range envs {
			env[e.Key] = string(e.Value)
		}
		mounts, err := r.volumeMounts(pod, c, env)
		if err != nil {
			return nil, failedPrecondition(err)
		}
		return &containerRunOptions{mounts: mounts, envs: envs, command: c.Command, args: c.Args}, nil
	}
	var ips []string
	if podIPs != nil {
		ips = podIPs()
	}
	ro, err := p.RunContainerOptions(ctx, pod, c, ips)
	if err != nil {
		return nil, failedPrecondition(err)
	}
	if ro == nil {
		ro = &runtime.RunContainerOptions{}
	}
	for _, m := range c.VolumeMounts {
		if v := findVolume(pod, m.Name); v != nil && p.HandlesVolume(v) {
			if _, ok := ro.Volumes[m.Name]; !ok {
				return nil, failedPrecondition(fmt.Errorf("volume %q: not prepared by the container options provider", m.Name))
			}
		}
	}
	env := make(map[string]string, len(ro.Env))
	for _, e := range ro.Env {
		env[e.Name] = e.Value
	}
	mounts, err := r.volumeMountsWith(pod, c, ro.Volumes, env)
	if err != nil {
		return nil, failedPrecondition(err)
	}
	out := &containerRunOptions{mounts: mounts, command: ro.Command, args: ro.Args}
	for _, e := range ro.Env {
		out.envs = append(out.envs, &runtimeapi.KeyValue{Key: e.Name, Value: []byte(e.Value)})
	}
	return out, nil
}

// specEnv is the container's environment from the spec alone: values,
// and the valueFroms validatePod let through (the pod's own metadata and
// the container's resources).
func specEnv(pod *v1.Pod, c *v1.Container) []*runtimeapi.KeyValue {
	var out []*runtimeapi.KeyValue
	for _, e := range c.Env {
		v := e.Value
		if e.ValueFrom != nil {
			v, _ = envValue(pod, c, e.ValueFrom) // validatePod refused what does not resolve
		}
		out = append(out, &runtimeapi.KeyValue{Key: e.Name, Value: []byte(v)})
	}
	return out
}

// pullAuths are the CRI credentials to try, in order, to pull image for
// pod: the provider's, or none (an anonymous pull).
func (r *Runtime) pullAuths(ctx context.Context, pod *v1.Pod, image string) ([]*runtimeapi.AuthConfig, error) {
	p := r.optionsProvider()
	if p == nil {
		return nil, nil
	}
	auths, err := p.ImagePullCredentials(ctx, pod, image)
	if err != nil {
		return nil, fmt.Errorf("credentials to pull image %q: %w", image, err)
	}
	out := make([]*runtimeapi.AuthConfig, 0, len(auths))
	for _, a := range auths {
		out = append(out, &runtimeapi.AuthConfig{
			Username: a.Username, Password: a.Password, Auth: a.Auth,
			ServerAddress: a.ServerAddress, IdentityToken: a.IdentityToken, RegistryToken: a.RegistryToken,
		})
	}
	return out, nil
}

// sandboxIPs are the IPs of the sandbox (its primary IP first), none when
// it has no IP of its own (the node's network) or its status cannot be
// read: the podIPs to give runOptions.
func (r *Runtime) sandboxIPs(ctx context.Context, sandboxID string) []string {
	if sandboxID == "" {
		return nil
	}
	st, err := r.sandboxStatus(ctx, sandboxID)
	if err != nil || st.GetNetwork().GetIp() == "" {
		return nil
	}
	ips := []string{st.GetNetwork().GetIp()}
	for _, ip := range st.GetNetwork().GetAdditionalIps() {
		ips = append(ips, ip.GetIp())
	}
	return ips
}
