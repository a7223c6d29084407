package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	authorizationv1 "k8s.io/api/authorization/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/podlife/podlife/agent"
	"github.com/podlife/podlife/agent/events"
	"github.com/podlife/podlife/agent/node"
	"github.com/podlife/podlife/agent/status"
)

// clusterClients loads the kubeconfig (clientcmd: contexts, exec plugins,
// certificate files; in-cluster config without a file), with the kubelet's
// client settings and qps/burst when positive, and builds the agent's
// client (its requests counted in reg) and a separate events client, as
// the kubelet has. It checks, once, that the credentials may do a node's
// work: every problem is one error naming the file and the cause.
func clusterClients(ctx context.Context, kubeconfig, nodeName string, qps float32, burst int, reg prometheus.Registerer) (client, events kubernetes.Interface, host string, err error) {
	where := kubeconfig
	if where == "" {
		where = "in-cluster config"
	}
	cfg, err := node.LoadClientConfig(kubeconfig, qps, burst)
	if err != nil {
		return nil, nil, "", err
	}
	counted, err := status.InstrumentConfig(cfg, reg, "")
	if err != nil {
		return nil, nil, "", err
	}
	if client, err = kubernetes.NewForConfig(counted); err != nil {
		return nil, nil, "", fmt.Errorf("%s: %w", where, err)
	}
	ecfg := rest.CopyConfig(cfg) // the kubelet's events client: its own limits
	if events, err = kubernetes.NewForConfig(ecfg); err != nil {
		return nil, nil, "", fmt.Errorf("%s: %w", where, err)
	}
	if err := checkNodeRights(ctx, client, nodeName); err != nil {
		return nil, nil, "", fmt.Errorf("%s (%s): %w", where, cfg.Host, err)
	}
	return client, events, cfg.Host, nil
}

// checkNodeRights asks the API server whether the credentials may create
// the Node and list the pods bound to it. An unreachable server is not an
// error here: the agent runs its pods and retries the API in the
// background.
func checkNodeRights(ctx context.Context, client kubernetes.Interface, nodeName string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for _, attr := range []authorizationv1.ResourceAttributes{
		{Verb: "create", Resource: "nodes", Name: nodeName},
		// The Node authorizer lets a node list only its own pods.
		{Verb: "list", Resource: "pods", FieldSelector: &authorizationv1.FieldSelectorAttributes{RawSelector: "spec.nodeName=" + nodeName}},
		{Verb: "patch", Resource: "pods", Subresource: "status"},
	} {
		r, err := client.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx,
			&authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &attr}}, metav1.CreateOptions{})
		if err != nil {
			if isUnreachable(err) {
				return nil
			}
			return fmt.Errorf("check rights: %w", err)
		}
		if !r.Status.Allowed {
			return fmt.Errorf("the credentials may not %s %s%s (a node's credentials, user system:node:%s, are needed): %s",
				attr.Verb, attr.Resource, subresource(attr.Subresource), nodeName, r.Status.Reason)
		}
	}
	return nil
}

func subresource(s string) string {
	if s == "" {
		return ""
	}
	return "/" + s
}

// isUnreachable reports whether err means that no API server answered
// (no Status in the error).
func isUnreachable(err error) bool {
	var st apierrors.APIStatus
	return !errors.As(err, &st)
}

// withCluster makes the agent a node of the cluster: Node and Lease, the
// pods bound to the node, mirror pods, statuses, events.
func withCluster(opts *agent.Options, c config, client, eventClient kubernetes.Interface) {
	opts.Cluster = &agent.Cluster{Client: client, EventClient: eventClient,
		Events: events.Options{QPS: c.eventQPS, Burst: c.eventBurst}}
	if c.nodeIP != "" {
		host, _ := os.Hostname()
		opts.Cluster.Node.Addresses = []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: c.nodeIP}}
		if host != "" {
			opts.Cluster.Node.Addresses = append(opts.Cluster.Node.Addresses, v1.NodeAddress{Type: v1.NodeHostName, Address: host})
		}
	}
}
