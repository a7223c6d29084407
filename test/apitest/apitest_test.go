package apitest_test

import (
	"context"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/podlife/podlife/test/apitest"
)

// A node credential has a kubelet's rights: it cannot list namespaces.
func TestNodeCredentialIsRestricted(t *testing.T) {
	api := apitest.New(t)
	ns := api.Namespace(t)
	c := api.NodeClient(t, "e2e-5")
	_, err := c.CoreV1().Namespaces().Get(context.Background(), ns, metav1.GetOptions{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("node reads a namespace: %v, want Forbidden", err)
	}
}

// The proxy drops the API server and brings it back on the same address.
func TestProxyDownAndUp(t *testing.T) {
	api := apitest.New(t)
	p := apitest.NewProxy(t, api.AdminConfig)
	cfg := p.Config(api.AdminConfig)
	cfg.Timeout = 2 * time.Second
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	get := func() error {
		_, err := c.CoreV1().Namespaces().Get(context.Background(), "default", metav1.GetOptions{})
		return err
	}
	if err := get(); err != nil {
		t.Fatalf("through the proxy: %v", err)
	}
	p.Down()
	if err := get(); err == nil {
		t.Fatal("the API server answered while the proxy was down")
	}
	if err := p.Up(); err != nil {
		t.Fatal(err)
	}
	api.Eventually(t, 10*time.Second, "API back through the proxy", func() (bool, error) {
		err := get()
		return err == nil, err
	})
}
