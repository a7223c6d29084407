// Package credentials gives the image pull credentials of a pod from its
// imagePullSecrets, as the kubelet's keyring does
// (pkg/credentialprovider): for each pull, a GET of each Secret the pod
// names (the Node authorizer lets a node read exactly those; the service
// account's pull secrets are already copied into the pod at admission),
// the registry entries of those of type kubernetes.io/dockerconfigjson
// (key .dockerconfigjson, {"auths": {...}}) and kubernetes.io/dockercfg
// (key .dockercfg, the entries alone), and the entries that match the
// image, most specific first. The runtime tries them in order and stops
// at the first pull that succeeds (runtime/cri); none is an anonymous
// pull.
//
// An entry is keyed by a registry location: a host with an optional port
// and path prefix ("registry.example.com:5000/team"), "http://" or
// "https://" and a "/v1/" or "/v2/" path ignored; each label of the host
// may be a glob ("*.example.com" matches "a.example.com", not
// "a.b.example.com"); ports must be equal; the key's path must be a
// prefix (as a string) of the image's repository path. Every matching
// entry is returned, those of longer (reverse-sorted) keys first; several
// Secrets with the same key give their entries in the order of
// imagePullSecrets. An image without a registry ("busybox",
// "team/app") is on Docker Hub: "docker.io" entries match it, and
// "index.docker.io" (or "https://index.docker.io/v1/") entries apply when
// nothing else matched. An entry has "username" and "password", or
// "auth" (base64 of "user:password", which wins over them), or an
// "identitytoken".
//
// Faults, as the kubelet, never holding a pod up: a Secret that cannot be
// read (missing, forbidden, the API server down) is skipped with a
// FailedToRetrieveImagePullSecret warning event on the pod naming it; a
// Secret whose data does not parse is skipped with an
// InvalidImagePullSecret warning event naming it (the kubelet fails the
// pull instead); the pull is attempted with what remains. A Secret of
// another type, or without its key, is ignored. Credentials are never
// logged nor put in events.
package credentials
