package cri

import (
	"fmt"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podlife/podlife/runtime"
)

// imageUser is the user an image runs as: uid when numeric, else name.
type imageUser struct {
	uid  *int64
	name string
}

// effectiveSecurityContext merges the pod's security context under the
// container's, field by field, as the kubelet does.
func effectiveSecurityContext(pod *v1.Pod, c *v1.Container) *v1.SecurityContext {
	sc := &v1.SecurityContext{}
	if c.SecurityContext != nil {
		sc = c.SecurityContext.DeepCopy()
	}
	psc := pod.Spec.SecurityContext
	if psc == nil {
		return sc
	}
	if sc.RunAsUser == nil {
		sc.RunAsUser = psc.RunAsUser
	}
	if sc.RunAsGroup == nil {
		sc.RunAsGroup = psc.RunAsGroup
	}
	if sc.RunAsNonRoot == nil {
		sc.RunAsNonRoot = psc.RunAsNonRoot
	}
	if sc.SeccompProfile == nil {
		sc.SeccompProfile = psc.SeccompProfile
	}
	return sc
}

// verifyRunAsNonRoot refuses a container that must not run as root but
// would, with the kubelet's messages.
func verifyRunAsNonRoot(pod *v1.Pod, c *v1.Container, sc *v1.SecurityContext, user imageUser) error {
	if sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		return nil
	}
	if sc.RunAsUser != nil {
		if *sc.RunAsUser == 0 {
			return fmt.Errorf("container's runAsUser breaks non-root policy (pod: %q, container: %s): %w", podRef(pod), c.Name, runtime.ErrInvalidArgument)
		}
		return nil
	}
	switch {
	case user.uid != nil && *user.uid == 0, user.uid == nil && user.name == "":
		return fmt.Errorf("container has runAsNonRoot and image will run as root (pod: %q, container: %s): %w", podRef(pod), c.Name, runtime.ErrInvalidArgument)
	case user.uid == nil:
		return fmt.Errorf("container has runAsNonRoot and image has non-numeric user (%s), cannot verify user is non-root (pod: %q, container: %s): %w", user.name, podRef(pod), c.Name, runtime.ErrInvalidArgument)
	}
	return nil
}

// linuxSecurityContext maps the effective security context to CRI.
func (r *Runtime) linuxSecurityContext(pod *v1.Pod, sc *v1.SecurityContext) *runtimeapi.LinuxContainerSecurityContext {
	out := &runtimeapi.LinuxContainerSecurityContext{NamespaceOptions: r.namespaceOptions(pod)}
	if sc.Privileged != nil {
		out.Privileged = *sc.Privileged
	}
	if sc.Capabilities != nil {
		for _, c := range sc.Capabilities.Add {
			out.Capabilities = ensureCaps(out.Capabilities)
			out.Capabilities.AddCapabilities = append(out.Capabilities.AddCapabilities, string(c))
		}
		for _, c := range sc.Capabilities.Drop {
			out.Capabilities = ensureCaps(out.Capabilities)
			out.Capabilities.DropCapabilities = append(out.Capabilities.DropCapabilities, string(c))
		}
	}
	if sc.RunAsUser != nil {
		out.RunAsUser = &runtimeapi.Int64Value{Value: *sc.RunAsUser}
	}
	if sc.RunAsGroup != nil {
		out.RunAsGroup = &runtimeapi.Int64Value{Value: *sc.RunAsGroup}
	}
	if sc.ReadOnlyRootFilesystem != nil {
		out.ReadonlyRootfs = *sc.ReadOnlyRootFilesystem
	}
	// As the kubelet: no_new_privs only when allowPrivilegeEscalation is
	// explicitly false.
	out.NoNewPrivs = sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation
	if psc := pod.Spec.SecurityContext; psc != nil {
		out.SupplementalGroups = append(out.SupplementalGroups, psc.SupplementalGroups...)
		if psc.FSGroup != nil {
			out.SupplementalGroups = append(out.SupplementalGroups, *psc.FSGroup)
		}
	}
	out.Seccomp = r.seccompProfile(sc.SeccompProfile)
	return out
}

func ensureCaps(c *runtimeapi.Capability) *runtimeapi.Capability {
	if c == nil {
		return &runtimeapi.Capability{}
	}
	return c
}

// seccompProfile: RuntimeDefault, Localhost (under Options.SeccompProfileRoot)
// or, unset, Unconfined (the kubelet's default without --seccomp-default).
func (r *Runtime) seccompProfile(p *v1.SeccompProfile) *runtimeapi.SecurityProfile {
	if p == nil {
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}
	}
	switch p.Type {
	case v1.SeccompProfileTypeRuntimeDefault:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}
	case v1.SeccompProfileTypeLocalhost:
		ref := ""
		if p.LocalhostProfile != nil {
			ref = filepath.Join(r.opts.SeccompProfileRoot, *p.LocalhostProfile)
		}
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: ref}
	default:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}
	}
}
