package main

import (
	"errors"
	"net/http"

	"k8s.io/client-go/kubernetes"

	"github.com/podlife/podlife/agent/server"
)

// serverOptions are the node server's options from the flags, nil when it
// does not run: --port -1, or neither a cluster (whose API server
// authenticates tokens and authorizes) nor --client-ca-file nor
// --anonymous-auth to authenticate anyone with. client is the node's
// client, nil without a cluster.
func serverOptions(c config, client kubernetes.Interface, metrics http.Handler) (*server.Options, error) {
	if c.port == -1 || (client == nil && c.clientCAFile == "" && !c.anonymousAuth) {
		return nil, nil
	}
	ao := server.AuthenticationOptions{ClientCAFile: c.clientCAFile, Anonymous: c.anonymousAuth}
	zo := server.AuthorizationOptions{Mode: server.AuthorizationMode(c.authorizationMode)}
	if client != nil {
		ao.TokenReviews = client.AuthenticationV1()
		zo.SubjectAccessReviews = client.AuthorizationV1()
	} else if zo.Mode == server.AuthorizationModeWebhook {
		return nil, errors.New("--authorization-mode Webhook needs a cluster (--kubeconfig or --in-cluster); use AlwaysAllow without one")
	}
	authn, err := server.NewAuthenticator(ao)
	if err != nil {
		return nil, err
	}
	authz, err := server.NewAuthorizer(zo)
	if err != nil {
		return nil, err
	}
	port := c.port
	if port == 0 {
		port = -1 // server.Options: any free port
	}
	var addrs []string
	if c.nodeIP != "" {
		addrs = []string{c.nodeIP}
	}
	return &server.Options{
		Address: c.address, Port: port, Addresses: addrs,
		CertFile: c.tlsCertFile, KeyFile: c.tlsKeyFile,
		Authenticator: authn, Authorizer: authz,
		Metrics: metrics,
	}, nil
}
