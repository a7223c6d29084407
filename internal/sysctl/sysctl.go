// Package sysctl holds the kubelet's rules for pod sysctls
// (securityContext.sysctls): their names with either separator, the
// Linux namespace each belongs to, and the allowlist of the kubelet's
// admission (the safe sysctls plus --allowed-unsafe-sysctls patterns).
// The CRI adapter passes a pod's sysctls to its sandbox; the agent's
// admission refuses the pods whose sysctls the node does not allow.
package sysctl

import (
	"fmt"
	"strings"
)

// Namespace is the Linux namespace a sysctl belongs to.
type Namespace string

const (
	// IPC sysctls: kernel.shm*, kernel.msg*, kernel.sem, fs.mqueue.*.
	IPC Namespace = "IPC"
	// Net sysctls: net.*.
	Net Namespace = "net"
	// Unknown: a sysctl of no namespace, which would change the whole node.
	Unknown Namespace = ""
)

// Normalize writes a sysctl name with dots as separators, as the kubelet:
// a name whose first separator is '/' has its '/' and '.' swapped
// ("net/ipv4/conf/eth0.100/rp_filter" is "net.ipv4.conf.eth0/100.rp_filter").
func Normalize(name string) string {
	i := strings.IndexAny(name, "./")
	if i < 0 || name[i] == '.' {
		return name
	}
	return strings.Map(func(r rune) rune {
		switch r {
		case '.':
			return '/'
		case '/':
			return '.'
		}
		return r
	}, name)
}

// NamespaceOf is the namespace of a sysctl (a normalized name) or of a
// pattern ending with '*'.
func NamespaceOf(name string) Namespace {
	switch {
	case strings.HasPrefix(name, "kernel.shm"), strings.HasPrefix(name, "kernel.msg"),
		name == "kernel.sem", strings.HasPrefix(name, "fs.mqueue."):
		return IPC
	case strings.HasPrefix(name, "net."):
		return Net
	}
	return Unknown
}

// Safe returns the sysctls every pod may set (the kubelet's
// SafeSysctlAllowlist): namespaced, and unable to hurt other pods.
func Safe() []string {
	return []string{
		"kernel.shm_rmid_forced",
		"net.ipv4.ip_local_port_range",
		"net.ipv4.tcp_syncookies",
		"net.ipv4.ping_group_range",
		"net.ipv4.ip_unprivileged_port_start",
		"net.ipv4.ip_local_reserved_ports",
		"net.ipv4.tcp_keepalive_time",
		"net.ipv4.tcp_fin_timeout",
		"net.ipv4.tcp_keepalive_intvl",
		"net.ipv4.tcp_keepalive_probes",
		"net.ipv4.tcp_rmem",
		"net.ipv4.tcp_wmem",
	}
}

// Allowlist decides which sysctls pods may set.
type Allowlist struct {
	names    map[string]Namespace
	prefixes map[string]Namespace
}

// NewAllowlist is the safe sysctls plus the unsafe ones the node allows:
// names or patterns ending with '*' (the kubelet's
// --allowed-unsafe-sysctls), each of a namespace: a sysctl of no
// namespace would change the node, and is refused here.
func NewAllowlist(unsafe []string) (*Allowlist, error) {
	a := &Allowlist{names: map[string]Namespace{}, prefixes: map[string]Namespace{}}
	for _, s := range Safe() {
		a.names[s] = NamespaceOf(s)
	}
	for _, p := range unsafe {
		p = Normalize(p)
		ns := NamespaceOf(p)
		if ns == Unknown {
			return nil, fmt.Errorf("sysctl %q: not known to be namespaced, it cannot be allowed to pods", p)
		}
		if prefix, ok := strings.CutSuffix(p, "*"); ok {
			if strings.Contains(prefix, "*") {
				return nil, fmt.Errorf("sysctl pattern %q: '*' is allowed only at the end", p)
			}
			a.prefixes[prefix] = ns
			continue
		}
		if strings.Contains(p, "*") {
			return nil, fmt.Errorf("sysctl pattern %q: '*' is allowed only at the end", p)
		}
		a.names[p] = ns
	}
	return a, nil
}

// Validate is nil when a pod may set sysctl name: it is allowed, and the
// pod does not share the namespace it belongs to with the node
// (hostNetwork for net.*, hostIPC for the IPC ones). Its error is the
// kubelet's: "NAME" not allowlisted, or "NAME" not allowed with host
// NAMESPACE enabled.
func (a *Allowlist) Validate(name string, hostNet, hostIPC bool) error {
	name = Normalize(name)
	ns, ok := a.names[name]
	if !ok {
		for p, pns := range a.prefixes {
			if strings.HasPrefix(name, p) {
				ns, ok = pns, true
				break
			}
		}
	}
	if !ok {
		return fmt.Errorf("%q not allowlisted", name)
	}
	if (ns == IPC && hostIPC) || (ns == Net && hostNet) {
		return fmt.Errorf("%q not allowed with host %s enabled", name, ns)
	}
	return nil
}
