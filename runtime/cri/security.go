package cri

import (
	"fmt"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// effectiveSecurityContext is the container's security context over the
// pod's, field by field, for the fields both have (the kubelet's
// DetermineEffectiveSecurityContext): runAsUser, runAsGroup, runAsNonRoot,
// seccompProfile.
func effectiveSecurityContext(pod *v1.Pod, c *v1.Container) *v1.SecurityContext {
	sc := &v1.SecurityContext{}
	if c.SecurityContext != nil {
		sc = c.SecurityContext.DeepCopy()
	}
	ps := pod.Spec.SecurityContext
	if ps == nil {
		return sc
	}
	if sc.RunAsUser == nil {
		sc.RunAsUser = ps.RunAsUser
	}
	if sc.RunAsGroup == nil {
		sc.RunAsGroup = ps.RunAsGroup
	}
	if sc.RunAsNonRoot == nil {
		sc.RunAsNonRoot = ps.RunAsNonRoot
	}
	if sc.SeccompProfile == nil {
		sc.SeccompProfile = ps.SeccompProfile
	}
	return sc
}

// needsImageUser reports whether starting the container needs its image's
// user: runAsNonRoot without a runAsUser to check instead.
func needsImageUser(sc *v1.SecurityContext) bool {
	return sc.RunAsNonRoot != nil && *sc.RunAsNonRoot && sc.RunAsUser == nil
}

// verifyRunAsNonRoot refuses, with the kubelet's messages, a container
// that has runAsNonRoot but would run as root: its runAsUser (the
// container's, else the pod's) is 0, or it has none and its image's user
// is root (uid 0, or no user at all), or a name whose uid cannot be known
// before the container runs. img is the image's CRI status (nil: unknown,
// treated as root, as the kubelet does). The error wraps
// runtime.ErrFailedPrecondition: like the kubelet's
// CreateContainerConfigError, it is retried at the next sync.
func verifyRunAsNonRoot(pod *v1.Pod, c *v1.Container, sc *v1.SecurityContext, img *runtimeapi.Image) error {
	if sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		return nil
	}
	var msg string
	switch {
	case sc.RunAsUser != nil && *sc.RunAsUser == 0:
		msg = "container's runAsUser breaks non-root policy"
	case sc.RunAsUser != nil:
		return nil
	case img.GetUid() != nil && img.GetUid().GetValue() == 0, img.GetUid() == nil && img.GetUsername() == "":
		msg = "container has runAsNonRoot and image will run as root"
	case img.GetUid() == nil:
		msg = fmt.Sprintf("container has runAsNonRoot and image has non-numeric user (%s), cannot verify user is non-root", img.GetUsername())
	default:
		return nil
	}
	return failedPrecondition(fmt.Errorf("%s (pod: %q, container: %s)", msg, kubeletPodName(pod), c.Name))
}

// containerSecurityContext maps the container's effective security context
// to CRI as the kubelet does: user and group, privileged, read-only root
// file system, no_new_privs (only when allowPrivilegeEscalation is false),
// capabilities, seccomp (the container's profile, else the pod's, else
// Unconfined), and as supplemental groups the pod's fsGroup then its
// supplementalGroups.
func (r *Runtime) containerSecurityContext(pod *v1.Pod, c *v1.Container) *runtimeapi.LinuxContainerSecurityContext {
	sc := effectiveSecurityContext(pod, c)
	out := &runtimeapi.LinuxContainerSecurityContext{NamespaceOptions: r.namespaceOptions(pod)}
	if sc.RunAsUser != nil {
		out.RunAsUser = &runtimeapi.Int64Value{Value: *sc.RunAsUser}
	}
	if sc.RunAsGroup != nil {
		out.RunAsGroup = &runtimeapi.Int64Value{Value: *sc.RunAsGroup}
	}
	if sc.Privileged != nil {
		out.Privileged = *sc.Privileged
	}
	if sc.ReadOnlyRootFilesystem != nil {
		out.ReadonlyRootfs = *sc.ReadOnlyRootFilesystem
	}
	if sc.AllowPrivilegeEscalation != nil {
		out.NoNewPrivs = !*sc.AllowPrivilegeEscalation
	}
	if caps := sc.Capabilities; caps != nil {
		out.Capabilities = &runtimeapi.Capability{}
		for _, a := range caps.Add {
			out.Capabilities.AddCapabilities = append(out.Capabilities.AddCapabilities, string(a))
		}
		for _, d := range caps.Drop {
			out.Capabilities.DropCapabilities = append(out.Capabilities.DropCapabilities, string(d))
		}
	}
	out.SupplementalGroups = podGroups(pod)
	out.Seccomp = r.seccompProfile(sc.SeccompProfile)
	return out
}

// sandboxSecurityContext is the sandbox's: the pod's user and group, its
// fsGroup and supplementalGroups as supplemental groups, its seccomp
// profile (Unconfined when it sets none), and privileged when a container
// of the pod is (a runtime refuses a privileged container in a sandbox that
// is not: containerd's "no privileged container allowed in sandbox"), as
// the kubelet sets them.
func (r *Runtime) sandboxSecurityContext(pod *v1.Pod) *runtimeapi.LinuxSandboxSecurityContext {
	out := &runtimeapi.LinuxSandboxSecurityContext{NamespaceOptions: r.namespaceOptions(pod), Privileged: hasPrivilegedContainer(pod)}
	var profile *v1.SeccompProfile
	if ps := pod.Spec.SecurityContext; ps != nil {
		if ps.RunAsUser != nil {
			out.RunAsUser = &runtimeapi.Int64Value{Value: *ps.RunAsUser}
		}
		if ps.RunAsGroup != nil {
			out.RunAsGroup = &runtimeapi.Int64Value{Value: *ps.RunAsGroup}
		}
		profile = ps.SeccompProfile
	}
	out.SupplementalGroups = podGroups(pod)
	out.Seccomp = r.seccompProfile(profile)
	return out
}

// podGroups is the pod's fsGroup, then its supplementalGroups.
func podGroups(pod *v1.Pod) []int64 {
	ps := pod.Spec.SecurityContext
	if ps == nil {
		return nil
	}
	var out []int64
	if ps.FSGroup != nil {
		out = append(out, *ps.FSGroup)
	}
	return append(out, ps.SupplementalGroups...)
}

// seccompProfile maps a pod or container seccomp profile to CRI:
// RuntimeDefault, Localhost (SeccompProfileRoot/localhostProfile), and
// Unconfined, also when none is set (the kubelet's default without
// --seccomp-default). validateSecurity refused the malformed ones.
func (r *Runtime) seccompProfile(p *v1.SeccompProfile) *runtimeapi.SecurityProfile {
	switch {
	case p == nil:
	case p.Type == v1.SeccompProfileTypeRuntimeDefault:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}
	case p.Type == v1.SeccompProfileTypeLocalhost && p.LocalhostProfile != nil:
		return &runtimeapi.SecurityProfile{
			ProfileType:  runtimeapi.SecurityProfile_Localhost,
			LocalhostRef: filepath.Join(r.opts.SeccompProfileRoot, *p.LocalhostProfile),
		}
	}
	return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}
}

// validateSeccomp refuses, naming the field, a profile the runtime could
// not be given: an unknown type, Localhost without a profile or with one
// that leaves SeccompProfileRoot (the API server refuses them too).
func validateSeccomp(field string, p *v1.SeccompProfile) error {
	if p == nil {
		return nil
	}
	switch p.Type {
	case v1.SeccompProfileTypeRuntimeDefault, v1.SeccompProfileTypeUnconfined:
		return nil
	case v1.SeccompProfileTypeLocalhost:
		switch lp := p.LocalhostProfile; {
		case lp == nil || *lp == "":
			return fmt.Errorf("%s.localhostProfile: must be set if seccompProfile type is Localhost", field)
		case filepath.IsAbs(*lp) || strings.Contains(*lp, ".."):
			return fmt.Errorf("%s.localhostProfile: %q must be a relative path without '..'", field, *lp)
		}
		return nil
	}
	return fmt.Errorf("%s.type: unknown seccomp profile type %q", field, p.Type)
}

// validateSecurity refuses the security-context fields the adapter cannot
// pass on, naming them.
func validateSecurity(pod *v1.Pod) []error {
	var errs []error
	if ps := pod.Spec.SecurityContext; ps != nil {
		if err := validateSeccomp("spec.securityContext.seccompProfile", ps.SeccompProfile); err != nil {
			errs = append(errs, err)
		}
	}
	for _, list := range podContainerLists(pod) {
		for i := range list.cs {
			errs = append(errs, containerSecurityErrors(fmt.Sprintf("%s[%d]", list.field, i), &list.cs[i])...)
		}
	}
	return errs
}

// containerSecurityErrors are validateSecurity's problems with one
// container, whose field is path.
func containerSecurityErrors(path string, c *v1.Container) []error {
	if c.SecurityContext == nil {
		return nil
	}
	if err := validateSeccomp(path+".securityContext.seccompProfile", c.SecurityContext.SeccompProfile); err != nil {
		return []error{err}
	}
	return nil
}

// hasPrivilegedContainer reports whether a container of the pod, init,
// regular or ephemeral, is privileged (the kubelet's
// HasPrivilegedContainer).
func hasPrivilegedContainer(pod *v1.Pod) bool {
	privileged := func(sc *v1.SecurityContext) bool {
		return sc != nil && sc.Privileged != nil && *sc.Privileged
	}
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if privileged(list[i].SecurityContext) {
				return true
			}
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if privileged(pod.Spec.EphemeralContainers[i].SecurityContext) {
			return true
		}
	}
	return false
}
