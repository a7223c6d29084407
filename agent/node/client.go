package node

import (
	"errors"
	"fmt"
	"os"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// The kubelet's API client defaults (--kube-api-qps, --kube-api-burst).
const (
	DefaultClientQPS   = 50
	DefaultClientBurst = 100
)

// ErrNoClientConfig is returned by LoadClientConfig when no kubeconfig
// was given and the process does not run in a cluster.
var ErrNoClientConfig = errors.New("no kubeconfig given and not running in a cluster")

// LoadClientConfig returns the API client configuration of a node agent,
// set as the kubelet sets its own: QPS 50 and burst 100 unless qps and
// burst are positive, protobuf for core objects (JSON for the rest), and
// the user agent "podlife/VERSION (OS/ARCH)".
//
// With a kubeconfig path, the file is read through client-go's clientcmd
// (contexts, exec and auth-provider plugins, certificate and token files);
// without one, the in-cluster configuration of a pod is used, and
// ErrNoClientConfig is returned outside a cluster. Every error names the
// file and the cause.
func LoadClientConfig(kubeconfig string, qps float32, burst int) (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	switch {
	case kubeconfig != "":
		if _, serr := os.Stat(kubeconfig); serr != nil {
			return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, serr)
		}
		rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: kubeconfig}
		cfg, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
		}
	default:
		cfg, err = rest.InClusterConfig()
		if errors.Is(err, rest.ErrNotInCluster) {
			return nil, ErrNoClientConfig
		}
		if err != nil {
			return nil, fmt.Errorf("in-cluster config: %w", err)
		}
	}
	cfg.QPS, cfg.Burst = DefaultClientQPS, DefaultClientBurst
	if qps > 0 {
		cfg.QPS = qps
	}
	if burst > 0 {
		cfg.Burst = burst
	}
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	cfg.UserAgent = UserAgent()
	return cfg, nil
}
