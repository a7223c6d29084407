package runtime

import (
	"context"

	v1 "k8s.io/api/core/v1"
)

// EnvVar is one variable of a container's environment.
type EnvVar struct {
	Name  string
	Value string
}

// PreparedVolume is a pod volume made ready on the host by a
// ContainerOptionsProvider (the files of a configMap, a secret, a projected
// token...). The runtime binds it into each container that mounts it, as
// the container's volumeMounts say (mountPath, subPath, readOnly,
// mountPropagation).
type PreparedVolume struct {
	// HostPath is the volume's folder on the host, absolute and visible to
	// the runtime at that path.
	HostPath string
	// ReadOnly makes every mount of the volume read-only, whatever the
	// volumeMount says (the kubelet mounts configMap, secret, downwardAPI
	// and projected volumes read-only).
	ReadOnly bool
}

// RunContainerOptions is what one container instance needs from outside
// the runtime before it is created: the kubelet's RunContainerOptions,
// made by its GenerateRunContainerOptions.
type RunContainerOptions struct {
	// Env is the container's whole environment, in order: service
	// variables, envFrom, env, each value resolved and $(VAR)-expanded.
	// It replaces what the runtime would make from the spec alone.
	Env []EnvVar
	// Command and Args are the container's, $(VAR)-expanded against Env.
	Command []string
	Args    []string
	// Volumes holds, by volume name, the pod volumes the provider has
	// prepared (those its HandlesVolume accepts). The runtime prepares the
	// others itself (emptyDir, hostPath).
	Volumes map[string]PreparedVolume
}

// ImageAuth is one set of credentials for an image registry, as the CRI's
// AuthConfig carries it. Set Username and Password, or Auth (base64 of
// "user:password"), or a token.
type ImageAuth struct {
	Username      string
	Password      string
	Auth          string
	ServerAddress string
	IdentityToken string
	RegistryToken string
}

// ContainerOptionsProvider gives a runtime what a pod's containers need
// from the cluster (the kubelet's volume manager, GenerateRunContainerOptions
// and pull-secret keyring): ready volumes, the environment, expanded
// command and arguments, and image pull credentials. A runtime without one
// (nil) runs what the pod's spec alone describes (emptyDir and hostPath
// volumes, env values and the downward API of the pod's own metadata) and
// refuses the rest, naming the field.
//
// Implementations live outside package runtime (agent/volume,
// agent/envvars, agent/credentials, wired in agent); they are safe for
// concurrent use.
type ContainerOptionsProvider interface {
	// HandlesVolume reports whether the provider prepares volume v for
	// RunContainerOptions. It is a pure function of v.
	HandlesVolume(v *v1.Volume) bool
	// RunContainerOptions prepares the volumes container c mounts and
	// resolves its environment. podIPs are the pod's IPs (the first is
	// status.podIP), empty when unknown. An error means the container must
	// not be created now (the kubelet's CreateContainerConfigError, or
	// a volume not ready yet); it is retried at the next sync, and should
	// wrap ErrFailedPrecondition when the cause is missing data (a
	// ConfigMap, Secret or key that does not exist yet).
	RunContainerOptions(ctx context.Context, pod *v1.Pod, c *v1.Container, podIPs []string) (*RunContainerOptions, error)
	// ImagePullCredentials are the credentials to try, in order, when
	// pulling image for pod (from its imagePullSecrets); none means an
	// anonymous pull.
	ImagePullCredentials(ctx context.Context, pod *v1.Pod, image string) ([]ImageAuth, error)
}
