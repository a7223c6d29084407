package envvars

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/podlife/podlife/runtime"
)

// EnvVar is one variable of a container's environment.
type EnvVar = runtime.EnvVar

// Reader reads the objects a container's environment refers to. Errors
// of objects that do not exist satisfy apierrors.IsNotFound.
type Reader interface {
	ConfigMap(ctx context.Context, namespace, name string) (*v1.ConfigMap, error)
	Secret(ctx context.Context, namespace, name string) (*v1.Secret, error)
	ServiceReader
}

// ServiceReader is the part of a Reader that reads Services. Unlike
// ConfigMaps and Secrets, which the Node authorizer lets a node read only
// for its own pods, every node may list all Services, so that one
// ServiceReader (a WatchingReader) can serve many nodes.
type ServiceReader interface {
	// Services lists the Services of a namespace.
	Services(ctx context.Context, namespace string) ([]*v1.Service, error)
}

// EventRecorder records events about pods (client-go's
// record.EventRecorder and agent/events.Recorder have this method).
type EventRecorder interface {
	Eventf(object k8sruntime.Object, eventtype, reason, messageFmt string, args ...interface{})
}

// ReasonInvalidEnvVarNames is the reason of the warning event about
// envFrom keys that cannot be variable names.
const ReasonInvalidEnvVarNames = "InvalidEnvironmentVariableNames"

// Options configures a Resolver.
type Options struct {
	// Reader reads ConfigMaps, Secrets and Services. Nil: the node has no
	// API server; a reference to a ConfigMap or Secret is then an error
	// (as in a kubelet without a client), and there are no service
	// variables.
	Reader Reader
	// HostIPs gives the node's IPs (status.hostIP, status.hostIPs). Nil:
	// not known (those references are errors).
	HostIPs func() []string
	// Allocatable gives the node's allocatable resources, the default of a
	// limit a container does not set in a resourceFieldRef. Nil: none (0).
	Allocatable func() v1.ResourceList
	// Recorder receives the InvalidEnvironmentVariableNames warnings. Nil:
	// they are only logged.
	Recorder EventRecorder
	// Logger. The zero value discards.
	Logger logr.Logger
}

// Resolver makes containers' environments as the kubelet does
// (makeEnvironmentVariables). It is safe for concurrent use and starts no
// goroutine.
type Resolver struct {
	opts Options
}

// New returns a Resolver.
func New(opts Options) *Resolver {
	return &Resolver{opts: opts}
}

// ConfigError is a container whose environment or volumes cannot be made
// now: a ConfigMap, Secret or key it needs does not exist (yet), or it
// could not be read. The container is not created; the sync is retried
// (the kubelet's CreateContainerConfigError). Error is the kubelet's
// message; it wraps runtime.ErrFailedPrecondition and the cause.
type ConfigError struct {
	Err error
}

func (e *ConfigError) Error() string { return e.Err.Error() }

// Unwrap returns the cause and runtime.ErrFailedPrecondition.
func (e *ConfigError) Unwrap() []error { return []error{e.Err, runtime.ErrFailedPrecondition} }

func configErr(format string, args ...any) error {
	return &ConfigError{Err: fmt.Errorf(format, args...)}
}

// envBuilder keeps variables in the order they were first defined.
type envBuilder struct {
	names  []string
	values map[string]string
}

func (b *envBuilder) set(name, value string) {
	if _, ok := b.values[name]; !ok {
		b.names = append(b.names, name)
	}
	b.values[name] = value
}

// Env is container c's whole environment: the variables of envFrom (in
// order; a later source wins; each source's keys sorted), then those of
// env (a name already defined keeps its place and takes the new value),
// then the service variables not defined otherwise. An env value has its
// $(VAR) references expanded against what is defined before it and the
// service variables; a valueFrom is not expanded. podIPs are the pod's
// IPs (first: status.podIP); none means the node's (HostIPs). A missing ConfigMap, Secret or key that is
// not optional gives a *ConfigError with the kubelet's message.
func (r *Resolver) Env(ctx context.Context, pod *v1.Pod, c *v1.Container, podIPs []string) ([]EnvVar, error) {
	services, err := r.serviceEnv(ctx, pod)
	if err != nil {
		return nil, err
	}
	serviceMap := map[string]string{}
	for _, e := range services {
		serviceMap[e.Name] = e.Value
	}
	objs := &objectCache{r: r, ns: pod.Namespace, cms: map[string]*v1.ConfigMap{}, secrets: map[string]*v1.Secret{}}
	env := &envBuilder{values: map[string]string{}}
	for _, from := range c.EnvFrom {
		if err := r.envFrom(ctx, pod, objs, from, env); err != nil {
			return nil, err
		}
	}
	if len(podIPs) == 0 && r.opts.HostIPs != nil {
		// No IP of its own: the pod is on the node's network, and its
		// IPs are the node's (as its status reports them).
		podIPs = r.opts.HostIPs()
	}
	lookup := Lookup(env.values, serviceMap)
	for _, e := range c.Env {
		v := e.Value
		switch {
		case v != "":
			v = Expand(v, lookup)
		case e.ValueFrom != nil:
			var skip bool
			v, skip, err = r.valueFrom(ctx, pod, c, objs, e.ValueFrom, podIPs)
			if err != nil {
				return nil, err
			}
			if skip {
				continue
			}
		}
		env.set(e.Name, v)
	}
	out := make([]EnvVar, 0, len(env.names)+len(services))
	for _, n := range env.names {
		out = append(out, EnvVar{Name: n, Value: env.values[n]})
	}
	for _, e := range services {
		if _, ok := env.values[e.Name]; !ok {
			out = append(out, e)
		}
	}
	return out, nil
}

// serviceEnv is the service variables of pod: the kubernetes Service's
// always, its namespace's when enableServiceLinks is true or unset (the
// API server's default).
func (r *Resolver) serviceEnv(ctx context.Context, pod *v1.Pod) ([]EnvVar, error) {
	if r.opts.Reader == nil {
		return nil, nil
	}
	links := pod.Spec.EnableServiceLinks == nil || *pod.Spec.EnableServiceLinks
	var all []*v1.Service
	for _, ns := range []string{MasterServiceNamespace, pod.Namespace} {
		if ns == MasterServiceNamespace && len(all) > 0 || ns != MasterServiceNamespace && !links {
			continue
		}
		list, err := r.opts.Reader.Services(ctx, ns)
		if err != nil {
			return nil, &ConfigError{Err: fmt.Errorf("failed to list services when setting up env vars: %w", err)}
		}
		all = append(all, list...)
	}
	return ServiceEnv(ServicesFor(all, pod.Namespace, links)), nil
}

// envFrom adds the keys of one envFrom source.
func (r *Resolver) envFrom(ctx context.Context, pod *v1.Pod, objs *objectCache, from v1.EnvFromSource, env *envBuilder) error {
	var kind, name string
	data := map[string]string{}
	switch {
	case from.ConfigMapRef != nil:
		kind, name = "configMap", from.ConfigMapRef.Name
		cm, err := objs.configMap(ctx, name)
		if err != nil {
			if apierrors.IsNotFound(err) && isTrue(from.ConfigMapRef.Optional) {
				return nil
			}
			return err
		}
		for k, v := range cm.Data {
			data[k] = v
		}
	case from.SecretRef != nil:
		kind, name = "secret", from.SecretRef.Name
		s, err := objs.secret(ctx, name)
		if err != nil {
			if apierrors.IsNotFound(err) && isTrue(from.SecretRef.Optional) {
				return nil
			}
			return err
		}
		for k, v := range s.Data {
			data[k] = string(v)
		}
	default:
		return nil
	}
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var invalid []string
	for _, k := range keys {
		n := from.Prefix + k
		if len(validation.IsRelaxedEnvVarName(n)) > 0 || strings.ContainsRune(data[k], 0) {
			invalid = append(invalid, n)
			continue
		}
		env.set(n, data[k])
	}
	if len(invalid) > 0 {
		r.opts.Logger.Info("envFrom keys skipped", "pod", pod.Namespace+"/"+pod.Name, kind, name, "keys", invalid)
		if r.opts.Recorder != nil {
			r.opts.Recorder.Eventf(pod, v1.EventTypeWarning, ReasonInvalidEnvVarNames,
				"Keys [%s] from the EnvFrom %s %s/%s were skipped since they are considered invalid environment variable names.",
				strings.Join(invalid, ", "), kind, pod.Namespace, name)
		}
	}
	return nil
}

// valueFrom resolves one env var's source; skip means an optional
// reference to something missing (the variable is left out).
func (r *Resolver) valueFrom(ctx context.Context, pod *v1.Pod, c *v1.Container, objs *objectCache, src *v1.EnvVarSource, podIPs []string) (v string, skip bool, err error) {
	switch {
	case src.FieldRef != nil:
		var hostIPs []string
		if r.opts.HostIPs != nil {
			hostIPs = r.opts.HostIPs()
		}
		v, err = PodFieldValue(pod, src.FieldRef.FieldPath, podIPs, hostIPs)
		if err != nil {
			err = &ConfigError{Err: err}
		}
		return v, false, err
	case src.ResourceFieldRef != nil:
		var alloc v1.ResourceList
		if r.opts.Allocatable != nil {
			alloc = r.opts.Allocatable()
		}
		v, err = ResourceValue(pod, c, src.ResourceFieldRef, alloc)
		if err != nil {
			err = &ConfigError{Err: err}
		}
		return v, false, err
	case src.ConfigMapKeyRef != nil:
		ref := src.ConfigMapKeyRef
		cm, err := objs.configMap(ctx, ref.Name)
		if err != nil {
			return "", apierrors.IsNotFound(err) && isTrue(ref.Optional), ignoreOptional(err, ref.Optional)
		}
		v, ok := cm.Data[ref.Key]
		if !ok {
			if isTrue(ref.Optional) {
				return "", true, nil
			}
			return "", false, configErr("couldn't find key %v in ConfigMap %v/%v", ref.Key, pod.Namespace, ref.Name)
		}
		return v, false, nil
	case src.SecretKeyRef != nil:
		ref := src.SecretKeyRef
		s, err := objs.secret(ctx, ref.Name)
		if err != nil {
			return "", apierrors.IsNotFound(err) && isTrue(ref.Optional), ignoreOptional(err, ref.Optional)
		}
		b, ok := s.Data[ref.Key]
		if !ok {
			if isTrue(ref.Optional) {
				return "", true, nil
			}
			return "", false, configErr("couldn't find key %v in Secret %v/%v", ref.Key, pod.Namespace, ref.Name)
		}
		return string(b), false, nil
	}
	return "", false, configErr("env var source not supported: %s", describeSource(src))
}

func describeSource(src *v1.EnvVarSource) string {
	if src.FileKeyRef != nil {
		return "fileKeyRef"
	}
	return "(empty)"
}

func ignoreOptional(err error, optional *bool) error {
	if apierrors.IsNotFound(err) && isTrue(optional) {
		return nil
	}
	return err
}

func isTrue(b *bool) bool { return b != nil && *b }

// objectCache reads each ConfigMap and Secret of one container's
// environment once.
type objectCache struct {
	r       *Resolver
	ns      string
	cms     map[string]*v1.ConfigMap
	secrets map[string]*v1.Secret
}

func (o *objectCache) configMap(ctx context.Context, name string) (*v1.ConfigMap, error) {
	if cm, ok := o.cms[name]; ok {
		return cm, nil
	}
	if o.r.opts.Reader == nil {
		return nil, configErr("couldn't get configMap %v/%v, no kubeClient defined", o.ns, name)
	}
	cm, err := o.r.opts.Reader.ConfigMap(ctx, o.ns, name)
	if err != nil {
		return nil, asConfigError(err)
	}
	o.cms[name] = cm
	return cm, nil
}

func (o *objectCache) secret(ctx context.Context, name string) (*v1.Secret, error) {
	if s, ok := o.secrets[name]; ok {
		return s, nil
	}
	if o.r.opts.Reader == nil {
		return nil, configErr("couldn't get secret %v/%v, no kubeClient defined", o.ns, name)
	}
	s, err := o.r.opts.Reader.Secret(ctx, o.ns, name)
	if err != nil {
		return nil, asConfigError(err)
	}
	o.secrets[name] = s
	return s, nil
}

func asConfigError(err error) error {
	var ce *ConfigError
	if errors.As(err, &ce) {
		return err
	}
	return &ConfigError{Err: err}
}
