package kubemirror

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/podlife/podlife/podmanager"
)

// Options configures a Client.
type Options struct {
	// NodeName is the name of the Node that owns the mirror pods. Required.
	NodeName string
	// Logger receives V(2) lines for creates and deletes and V(4) detail.
	// The zero value discards.
	Logger logr.Logger
}

// Client is the client-go podmanager.MirrorClient.
type Client struct {
	client   kubernetes.Interface
	nodeName string
	log      logr.Logger
}

var _ podmanager.MirrorClient = (*Client)(nil)

// New returns a Client that talks to the API server through client.
func New(client kubernetes.Interface, opts Options) (*Client, error) {
	if client == nil {
		return nil, errors.New("kubemirror: client is required")
	}
	if opts.NodeName == "" {
		return nil, errors.New("kubemirror: Options.NodeName is required")
	}
	return &Client{client: client, nodeName: opts.NodeName, log: opts.Logger}, nil
}

// CreateMirrorPod creates the mirror pod of the static pod. It reads the Node
// first: failing to read it, or a Node being deleted
// (podmanager.ErrNodeBeingDeleted), is an error and nothing is created. A
// mirror that already exists with the same hash is success; one with another
// hash is an AlreadyExists error (delete it first, see
// podmanager.ReconcileMirrorPod).
func (c *Client) CreateMirrorPod(ctx context.Context, pod *v1.Pod) error {
	fullName := podmanager.FullName(pod)
	node, err := c.client.CoreV1().Nodes().Get(ctx, c.nodeName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("create mirror pod %q: get node %q: %w", fullName, c.nodeName, err)
	}
	if node.UID == "" {
		return fmt.Errorf("create mirror pod %q: node %q has no UID", fullName, c.nodeName)
	}
	if node.DeletionTimestamp != nil {
		return fmt.Errorf("create mirror pod %q: node %q: %w", fullName, c.nodeName, podmanager.ErrNodeBeingDeleted)
	}

	hash := podmanager.PodHash(pod)
	mirror := pod.DeepCopy()
	// The API server assigns identity and version; the static pod's own are
	// meaningless there.
	mirror.UID = ""
	mirror.ResourceVersion = ""
	mirror.Generation = 0
	mirror.CreationTimestamp = metav1.Time{}
	mirror.ManagedFields = nil
	if mirror.Annotations == nil {
		mirror.Annotations = make(map[string]string, 1)
	}
	mirror.Annotations[podmanager.ConfigMirrorAnnotationKey] = hash
	controller := true
	mirror.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: v1.SchemeGroupVersion.String(),
		Kind:       "Node",
		Name:       node.Name,
		UID:        node.UID,
		Controller: &controller,
	}}

	pods := c.client.CoreV1().Pods(mirror.Namespace)
	_, err = pods.Create(ctx, mirror, metav1.CreateOptions{})
	if err == nil {
		c.log.V(2).Info("mirror pod created", "pod", klogRef(pod), "hash", hash)
		return nil
	}
	if apierrors.IsAlreadyExists(err) {
		existing, getErr := pods.Get(ctx, mirror.Name, metav1.GetOptions{})
		if getErr == nil {
			if h, ok := podmanager.MirrorHash(existing); ok && h == hash {
				c.log.V(4).Info("mirror pod already exists", "pod", klogRef(pod), "hash", hash)
				return nil
			}
		}
	}
	return fmt.Errorf("create mirror pod %q: %w", fullName, err)
}

// DeleteMirrorPod deletes the mirror pod named fullName with grace period 0
// and, when uid is set, a UID precondition. It returns (false, nil) when the
// pod is already gone (NotFound) or has been replaced by another UID
// (Conflict); other API errors are returned. A malformed full name is an
// error.
func (c *Client) DeleteMirrorPod(ctx context.Context, fullName string, uid *types.UID) (bool, error) {
	name, namespace, err := podmanager.ParseFullName(fullName)
	if err != nil {
		return false, fmt.Errorf("delete mirror pod: %w", err)
	}
	var grace int64
	opts := metav1.DeleteOptions{GracePeriodSeconds: &grace}
	if uid != nil {
		opts.Preconditions = &metav1.Preconditions{UID: uid}
	}
	err = c.client.CoreV1().Pods(namespace).Delete(ctx, name, opts)
	switch {
	case err == nil:
		c.log.V(2).Info("mirror pod deleted", "pod", namespace+"/"+name, "podUID", uidString(uid))
		return true, nil
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		c.log.V(4).Info("mirror pod not deleted", "pod", namespace+"/"+name, "podUID", uidString(uid), "reason", apierrors.ReasonForError(err))
		return false, nil
	default:
		return false, fmt.Errorf("delete mirror pod %q: %w", fullName, err)
	}
}

func klogRef(pod *v1.Pod) string { return pod.Namespace + "/" + pod.Name }

func uidString(uid *types.UID) string {
	if uid == nil {
		return ""
	}
	return string(*uid)
}
