// Package server is a node's HTTPS API as the kubelet serves it on port
// 10250, for any node agent: what the API server proxies `kubectl logs`,
// `exec`, `attach`, `port-forward`, `cp`, `top` and `get --raw
// /api/v1/nodes/N/proxy/...` to.
//
// Endpoints (paths and query parameters as the kubelet's):
//
//	GET  /healthz
//	GET  /pods                                         the agent's pods, a v1.PodList
//	GET  /containerLogs/{ns}/{pod}/{container}         follow, previous, tailLines, sinceSeconds,
//	                                                   sinceTime, timestamps, limitBytes
//	GET|POST /exec/{ns}/{pod}[/{uid}]/{container}      command (repeated), stdin, stdout, stderr, tty
//	GET|POST /attach/{ns}/{pod}[/{uid}]/{container}
//	GET|POST /portForward/{ns}/{pod}[/{uid}]
//	POST /run/{ns}/{pod}[/{uid}]/{container}           cmd
//	GET  /stats/summary                                k8s.io/kubelet stats/v1alpha1 Summary
//	GET  /metrics/resource                             what metrics-server reads
//	GET  /metrics                                      Options.Metrics, when given
//
// Every request is authenticated (Options.Authenticator: client
// certificates, bearer tokens through TokenReview; anonymous only when
// enabled, else 401) and authorized (Options.Authorizer) as the kubelet
// does: the verb from the method, the nodes resource named after the node,
// and the subresource stats, metrics, log or proxy from the path
// (RequestAttributes); a refusal is 403. NewAuthenticator and NewAuthorizer
// build the kubelet's from the API server's delegating ones
// (k8s.io/apiserver); tests pass fakes.
//
// Logs are read from the containers' CRI log files with the kubelet's own
// reader (k8s.io/cri-client/pkg/logs). Exec, attach and port-forward ask
// the runtime for the URL of its streaming server (CRI Exec, Attach,
// PortForward) and proxy the client's upgraded connection (SPDY or
// WebSocket) to it with k8s.io/apimachinery's UpgradeAwareHandler, as the
// kubelet; a stream idle past Options.StreamingIdleTimeout is closed.
//
// What the Server needs of the agent and the runtime comes through small
// interfaces (PodLister, ContainerLogs, Streaming, CommandRunner, PodStats,
// NodeStats): runtime/cri implements the runtime's, and an agent whose
// pods run elsewhere implements its own. A runtime error wrapping
// runtime.ErrUnavailable is 503; the other endpoints keep serving.
//
// New opens nothing; Listen binds the port (Port then tells which, for the
// Node's status.daemonEndpoints); Run serves until its context ends.
package server
