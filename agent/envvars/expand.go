package envvars

import (
	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/runtime/expansion"
)

// Expand replaces each $(VAR) reference in s by lookup(VAR), with the
// kubelet's rules: expansion.Expand.
func Expand(s string, lookup func(name string) (string, bool)) string {
	return expansion.Expand(s, lookup)
}

// Lookup looks names up in maps, the first map that has the name wins:
// expansion.Lookup.
func Lookup(maps ...map[string]string) func(string) (string, bool) {
	return expansion.Lookup(maps...)
}

// ExpandAll expands each string of list (a container's command or args)
// against lookup; nil stays nil.
func ExpandAll(list []string, lookup func(string) (string, bool)) []string {
	if list == nil {
		return nil
	}
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = Expand(s, lookup)
	}
	return out
}

// CommandAndArgs are c's command and args with their $(VAR) references
// expanded against env, the container's final environment (the kubelet's
// ExpandContainerCommandAndArgs).
func CommandAndArgs(c *v1.Container, env []EnvVar) (command, args []string) {
	m := make(map[string]string, len(env))
	for _, e := range env {
		m[e.Name] = e.Value
	}
	lookup := Lookup(m)
	return ExpandAll(c.Command, lookup), ExpandAll(c.Args, lookup)
}
