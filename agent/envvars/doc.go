// Package envvars makes a container's environment as the kubelet does
// (its makeEnvironmentVariables and ExpandContainerCommandAndArgs), for a
// node agent that has an API server:
//
//   - envFrom: every key of a ConfigMap or Secret, with the source's
//     prefix; a later source wins; keys that cannot be variable names
//     (an '=', a control character; the API server lets none through) are
//     skipped and named in an InvalidEnvironmentVariableNames warning;
//   - env: value with $(VAR) expanded (Expand: $$ escapes, unknown
//     references left as written, only what is defined before the
//     variable and the service variables are seen); valueFrom:
//     configMapKeyRef and secretKeyRef (optional ones may be missing),
//     fieldRef (PodFieldValue: the pod's metadata, spec.nodeName,
//     spec.serviceAccountName, status.podIP, podIPs, hostIP, hostIPs),
//     resourceFieldRef (ResourceValue, with divisor; a limit the
//     container does not set is the node's allocatable);
//   - service variables (ServicesFor, ServiceEnv): those of the default
//     namespace's kubernetes Service always (KUBERNETES_SERVICE_HOST,
//     ...), those of every Service of the pod's namespace when
//     enableServiceLinks is true or unset, Docker link style, unless the
//     container defines the name itself;
//   - command and args with $(VAR) expanded against the final
//     environment (CommandAndArgs).
//
// A ConfigMap, Secret or key that is missing and not optional gives a
// *ConfigError carrying the kubelet's message (for instance
// `configmap "x" not found`, `couldn't find key k in ConfigMap ns/x`);
// it wraps runtime.ErrFailedPrecondition: the container is not created
// now, and the next sync tries again (CreateContainerConfigError).
//
// The objects are read through a Reader: ClientReader asks the API
// server at each call; WatchingReader does so for ConfigMaps and Secrets
// and keeps every Service from one list and watch (the kubelet's service
// lister), so that service variables cost no request per container; tests
// use fakes. The Resolver starts no goroutine and keeps no state between
// calls; a WatchingReader's watch runs in its Run, owned by the caller
// (the agent runs it with the cluster's other parts). Every node may read
// every Service, so one WatchingReader, as a ServiceReader, can serve the
// Services of many nodes (agent.Cluster.Services; agent/fleet does so),
// while each node reads ConfigMaps and Secrets with its own client.
package envvars
