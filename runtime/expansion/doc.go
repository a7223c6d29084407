// Package expansion expands $(VAR) references as the kubelet does in a
// container's command, args, env values and volumeMounts' subPathExpr
// (its fork of os.Expand): $$ is an escaped $, a reference the lookup
// does not know is left as written, a value is never expanded again.
// It imports nothing but the standard library, so that runtime adapters
// and agents can share it.
package expansion
