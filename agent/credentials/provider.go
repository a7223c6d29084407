package credentials

import (
	"context"
	"fmt"
	"strings"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	"github.com/podlife/podlife/runtime"
)

// SecretReader reads one Secret. Errors of a Secret that does not exist
// satisfy apierrors.IsNotFound.
type SecretReader interface {
	Secret(ctx context.Context, namespace, name string) (*v1.Secret, error)
}

// ClientSecrets is a SecretReader that GETs the Secret from the API server
// at each call, with the node's rights (the Node authorizer lets a node
// read the Secrets its pods name, and no others).
type ClientSecrets struct {
	Client kubernetes.Interface
}

// Secret implements SecretReader.
func (c ClientSecrets) Secret(ctx context.Context, namespace, name string) (*v1.Secret, error) {
	return c.Client.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
}

// EventRecorder records events about pods (client-go's
// record.EventRecorder and agent/events.Recorder have this method).
type EventRecorder interface {
	Eventf(object k8sruntime.Object, eventtype, reason, messageFmt string, args ...interface{})
}

// Event reasons.
const (
	// ReasonFailedToRetrieve: some imagePullSecrets could not be read
	// (the kubelet's reason and message).
	ReasonFailedToRetrieve = "FailedToRetrieveImagePullSecret"
	// ReasonInvalid: an imagePullSecret's data does not parse.
	ReasonInvalid = "InvalidImagePullSecret"
)

// Options configures a Provider.
type Options struct {
	// Secrets reads the pull secrets. Nil: the node has no API server;
	// imagePullSecrets are ignored and every pull is anonymous.
	Secrets SecretReader
	// Recorder receives the warnings about Secrets that cannot be read or
	// parsed. Nil: they are only logged.
	Recorder EventRecorder
	// Logger. The zero value discards.
	Logger logr.Logger
}

// Provider gives pods' image pull credentials from their
// imagePullSecrets (runtime.ContainerOptionsProvider's
// ImagePullCredentials). It keeps nothing between calls: each pull reads
// the Secrets afresh, so a rotated Secret applies to the next pull. Safe
// for concurrent use; it starts no goroutine.
type Provider struct {
	opts Options
}

// New returns a Provider.
func New(opts Options) *Provider { return &Provider{opts: opts} }

// Keyring reads pod's imagePullSecrets and returns their credentials.
// Secrets that cannot be read or parsed are skipped and reported (event
// and log); the error is only the context's, when it is done.
func (p *Provider) Keyring(ctx context.Context, pod *v1.Pod) (*Keyring, error) {
	k := &Keyring{}
	if p.opts.Secrets == nil || len(pod.Spec.ImagePullSecrets) == 0 {
		return k, nil
	}
	log := p.opts.Logger.WithValues("pod", pod.Namespace+"/"+pod.Name)
	var failed []string
	for _, ref := range pod.Spec.ImagePullSecrets {
		if ref.Name == "" {
			continue // the API server lets empty names through; the kubelet ignores them
		}
		s, err := p.opts.Secrets.Secret(ctx, pod.Namespace, ref.Name)
		if err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("reading image pull secret %q: %w", ref.Name, ctx.Err())
			}
			log.Info("Unable to retrieve pull secret, the image pull may not succeed.", "secret", pod.Namespace+"/"+ref.Name, "err", err)
			failed = append(failed, ref.Name)
			continue
		}
		cfg, ok, err := FromSecret(s)
		if err != nil {
			log.Info("Image pull secret is malformed, pulling without it", "secret", pod.Namespace+"/"+ref.Name, "err", err)
			p.event(pod, ReasonInvalid, "Image pull secret %q is malformed (%v); attempting to pull the image without it.", ref.Name, err)
			continue
		}
		if !ok {
			log.V(2).Info("Image pull secret is not a docker config, ignored", "secret", pod.Namespace+"/"+ref.Name, "type", s.Type)
			continue
		}
		for _, loc := range k.Add(cfg) {
			log.Info("Entry in image pull secret is not a valid registry location, ignored", "secret", pod.Namespace+"/"+ref.Name, "location", loc)
		}
	}
	if len(failed) > 0 {
		p.event(pod, ReasonFailedToRetrieve, "Unable to retrieve some image pull secrets (%s); attempting to pull the image may not succeed.", strings.Join(failed, ", "))
	}
	return k, nil
}

// ImagePullCredentials returns the credentials of pod's imagePullSecrets
// that match image, in the order to try them; none means an anonymous
// pull. It implements the method of runtime.ContainerOptionsProvider.
func (p *Provider) ImagePullCredentials(ctx context.Context, pod *v1.Pod, image string) ([]runtime.ImageAuth, error) {
	k, err := p.Keyring(ctx, pod)
	if err != nil {
		return nil, err
	}
	return k.Lookup(image), nil
}

func (p *Provider) event(pod *v1.Pod, reason, format string, args ...any) {
	if p.opts.Recorder != nil {
		p.opts.Recorder.Eventf(pod, v1.EventTypeWarning, reason, format, args...)
	}
}
