package envvars

import (
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// MasterServiceNamespace is the namespace of the kubernetes Service, whose
// variables (KUBERNETES_SERVICE_HOST, ...) every container gets.
const MasterServiceNamespace = "default"

// masterService is the Service every pod gets the variables of.
const masterService = "kubernetes"

// serviceIPSet reports whether the Service has a cluster IP (not headless).
func serviceIPSet(s *v1.Service) bool {
	return s.Spec.ClusterIP != "" && s.Spec.ClusterIP != v1.ClusterIPNone
}

// ServicesFor picks, from services (any namespaces), those whose variables
// a pod of namespace ns gets, as the kubelet does: the kubernetes Service
// of the default namespace always; the Services of ns when links are
// enabled (a Service named kubernetes in ns then replaces the default
// namespace's, as in the kubelet). Services without a cluster IP are left out. The
// result is sorted by name.
func ServicesFor(services []*v1.Service, ns string, enableServiceLinks bool) []*v1.Service {
	byName := map[string]*v1.Service{}
	for _, s := range services {
		if !serviceIPSet(s) {
			continue
		}
		switch {
		case s.Namespace == ns && enableServiceLinks:
			byName[s.Name] = s
		case s.Namespace == MasterServiceNamespace && s.Name == masterService:
			if _, ok := byName[s.Name]; !ok {
				byName[s.Name] = s
			}
		}
	}
	out := make([]*v1.Service, 0, len(byName))
	for _, s := range byName {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// ServiceEnv is the variables of services, in order, as the kubelet makes
// them: NAME_SERVICE_HOST, NAME_SERVICE_PORT (the first port),
// NAME_SERVICE_PORT_PORTNAME for each named port, and the Docker link
// variables NAME_PORT, NAME_PORT_P_PROTO, ..._PROTO, ..._PORT, ..._ADDR,
// with NAME the Service's name in upper case, dashes as underscores.
// Services without a cluster IP give nothing; one without ports gives
// only its host.
func ServiceEnv(services []*v1.Service) []EnvVar {
	var out []EnvVar
	for _, s := range services {
		if !serviceIPSet(s) {
			continue
		}
		prefix := envName(s.Name)
		ip := s.Spec.ClusterIP
		out = append(out, ev(prefix+"_SERVICE_HOST", ip))
		if len(s.Spec.Ports) == 0 {
			continue
		}
		out = append(out, ev(prefix+"_SERVICE_PORT", strconv.Itoa(int(s.Spec.Ports[0].Port))))
		for _, p := range s.Spec.Ports {
			if p.Name != "" {
				out = append(out, ev(prefix+"_SERVICE_PORT_"+envName(p.Name), strconv.Itoa(int(p.Port))))
			}
		}
		for i, p := range s.Spec.Ports {
			proto := string(p.Protocol)
			if proto == "" {
				proto = string(v1.ProtocolTCP)
			}
			lower := strings.ToLower(proto)
			url := fmt.Sprintf("%s://%s", lower, net.JoinHostPort(ip, strconv.Itoa(int(p.Port))))
			if i == 0 {
				out = append(out, ev(prefix+"_PORT", url))
			}
			pp := fmt.Sprintf("%s_PORT_%d_%s", prefix, p.Port, strings.ToUpper(proto))
			out = append(out,
				ev(pp, url),
				ev(pp+"_PROTO", lower),
				ev(pp+"_PORT", strconv.Itoa(int(p.Port))),
				ev(pp+"_ADDR", ip),
			)
		}
	}
	return out
}

func envName(s string) string {
	return strings.ToUpper(strings.ReplaceAll(s, "-", "_"))
}

func ev(name, value string) EnvVar { return EnvVar{Name: name, Value: value} }
