package envvars

import (
	"context"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// ClientReader is a Reader that asks the API server at each call (GET of
// the ConfigMap or Secret, LIST of the namespace's Services), with a
// node's rights: the Node authorizer lets a node read the ConfigMaps and
// Secrets of the pods bound to it, and list Services.
type ClientReader struct {
	Client kubernetes.Interface
}

var _ Reader = ClientReader{}

// ConfigMap implements Reader.
func (c ClientReader) ConfigMap(ctx context.Context, namespace, name string) (*v1.ConfigMap, error) {
	return c.Client.CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
}

// Secret implements Reader.
func (c ClientReader) Secret(ctx context.Context, namespace, name string) (*v1.Secret, error) {
	return c.Client.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
}

// Services implements Reader.
func (c ClientReader) Services(ctx context.Context, namespace string) ([]*v1.Service, error) {
	list, err := c.Client.CoreV1().Services(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := make([]*v1.Service, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}
