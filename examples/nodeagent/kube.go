package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/go-logr/logr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	kubeconfigv1 "k8s.io/client-go/tools/clientcmd/api/v1"
	"sigs.k8s.io/yaml"

	"github.com/podlife/podlife/agent"
	"github.com/podlife/podlife/podmanager"
	"github.com/podlife/podlife/podmanager/kubemirror"
	"github.com/podlife/podlife/podmanager/source"
)

// errKubeconfig wraps every problem with the kubeconfig file.
var errKubeconfig = errors.New("kubeconfig")

// loadKubeconfig reads the current context of a kubeconfig file into a
// rest.Config. It understands servers, CA and client certificates (files
// or inline data), tokens (inline or file), basic auth and
// insecure-skip-tls-verify; exec and auth-provider plugins are not supported
// (this example avoids client-go's clientcmd and its dependencies).
func loadKubeconfig(path string) (*rest.Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errKubeconfig, err)
	}
	var kc kubeconfigv1.Config
	if err := yaml.Unmarshal(data, &kc); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", errKubeconfig, path, err)
	}
	ctxName := kc.CurrentContext
	if ctxName == "" && len(kc.Contexts) == 1 {
		ctxName = kc.Contexts[0].Name
	}
	var kctx *kubeconfigv1.Context
	for i := range kc.Contexts {
		if kc.Contexts[i].Name == ctxName {
			kctx = &kc.Contexts[i].Context
		}
	}
	if kctx == nil {
		return nil, fmt.Errorf("%w: %s: no context %q", errKubeconfig, path, ctxName)
	}
	var cluster *kubeconfigv1.Cluster
	for i := range kc.Clusters {
		if kc.Clusters[i].Name == kctx.Cluster {
			cluster = &kc.Clusters[i].Cluster
		}
	}
	if cluster == nil || cluster.Server == "" {
		return nil, fmt.Errorf("%w: %s: context %q has no cluster with a server", errKubeconfig, path, ctxName)
	}
	var user kubeconfigv1.AuthInfo
	for i := range kc.AuthInfos {
		if kc.AuthInfos[i].Name == kctx.AuthInfo {
			user = kc.AuthInfos[i].AuthInfo
		}
	}
	if user.Exec != nil || user.AuthProvider != nil {
		return nil, fmt.Errorf("%w: %s: exec and auth-provider credentials are not supported by this example", errKubeconfig, path)
	}
	dir := filepath.Dir(path)
	abs := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(dir, p)
	}
	return &rest.Config{
		Host:            cluster.Server,
		BearerToken:     user.Token,
		BearerTokenFile: abs(user.TokenFile),
		Username:        user.Username,
		Password:        user.Password,
		TLSClientConfig: rest.TLSClientConfig{
			Insecure:   cluster.InsecureSkipTLSVerify,
			ServerName: cluster.TLSServerName,
			CAFile:     abs(cluster.CertificateAuthority),
			CAData:     cluster.CertificateAuthorityData,
			CertFile:   abs(user.ClientCertificate),
			CertData:   user.ClientCertificateData,
			KeyFile:    abs(user.ClientKey),
			KeyData:    user.ClientKeyData,
		},
		UserAgent: "podlife-nodeagent",
	}, nil
}

// withAPIServer adds what an API server gives an agent: mirror pods for its
// static pods, the pods bound to the node (an "api" source), and statuses
// written to the API (a static pod's through its mirror pod). The Node
// object must exist: mirror pods are owned by it.
func withAPIServer(opts *agent.Options, client kubernetes.Interface, log logr.Logger) error {
	mirrors, err := kubemirror.New(client, kubemirror.Options{NodeName: opts.NodeName, Logger: log.WithName("mirror")})
	if err != nil {
		return err
	}
	opts.MirrorClient = mirrors
	opts.Sources = append(opts.Sources, agent.Source{Name: podmanager.APISource, New: func(sink source.Sink) (agent.Runner, error) {
		return source.NewAPI(sink, source.APIOptions{Client: client, NodeName: opts.NodeName, Logger: log.WithName("api"), OnError: opts.OnSourceError})
	}})
	opts.StatusReporter = func(pods agent.PodStateProvider) (agent.StatusReporter, error) {
		return agent.NewAPIStatusReporter(pods, agent.APIStatusReporterOptions{Client: client, Logger: log.WithName("status")})
	}
	return nil
}
