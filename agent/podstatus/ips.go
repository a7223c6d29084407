package podstatus

import (
	"net/netip"

	v1 "k8s.io/api/core/v1"
)

// setIPs sets podIP(s) from the runtime's sandbox IPs, ordered as the
// kubelet orders them (the first IP of the node's primary family, then the
// first of the other family), and hostIP(s) from the node's IPs. A pod on
// the node's network (spec.hostNetwork, or a sandbox that the runtime put in
// the node's network namespace) without an IP of its own gets the node's.
// Without node IPs, the previous hostIPs are kept.
func (g *generator) setIPs(s *v1.PodStatus) {
	for _, ip := range sortIPs(g.rt.IPs, g.in.NodeIPs) {
		s.PodIPs = append(s.PodIPs, v1.PodIP{IP: ip})
	}
	nodeIPs := sortIPs(g.in.NodeIPs, g.in.NodeIPs)
	if len(nodeIPs) == 0 {
		s.HostIP = g.old.HostIP
		s.HostIPs = append([]v1.HostIP(nil), g.old.HostIPs...)
	} else {
		s.HostIP = nodeIPs[0]
		for _, ip := range nodeIPs {
			s.HostIPs = append(s.HostIPs, v1.HostIP{IP: ip})
		}
	}
	if len(s.PodIPs) == 0 && g.onNodeNetwork() {
		for _, h := range s.HostIPs {
			s.PodIPs = append(s.PodIPs, v1.PodIP{IP: h.IP})
		}
	}
	if len(s.PodIPs) > 0 {
		s.PodIP = s.PodIPs[0].IP
	}
}

func (g *generator) onNodeNetwork() bool {
	if g.pod.Spec.HostNetwork {
		return true
	}
	for _, sb := range g.rt.SandboxStatuses {
		if sb != nil && sb.Network == "node" {
			return true
		}
	}
	return false
}

// sortIPs returns at most two of ips: the first valid one of the primary
// family (that of prefer's first valid IP; IPv4 without one), then the first
// of the other family, each in its canonical form.
func sortIPs(ips, prefer []string) []string {
	v6first := false
	for _, p := range prefer {
		if a, err := netip.ParseAddr(p); err == nil {
			v6first = a.Unmap().Is6()
			break
		}
	}
	var primary, secondary string
	for _, s := range ips {
		a, err := netip.ParseAddr(s)
		if err != nil {
			continue
		}
		a = a.Unmap()
		if a.Is6() == v6first {
			if primary == "" {
				primary = a.String()
			}
		} else if secondary == "" {
			secondary = a.String()
		}
	}
	var out []string
	for _, s := range []string{primary, secondary} {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}
