package prober

import (
	"context"
	"fmt"
	"net"
	"strconv"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// maxOutput bounds the output kept of a probe (exec output, HTTP body), as
// the kubelet's 10 KiB.
const maxOutput = 10 << 10

// runProbe runs one probe of w's container and returns its outcome and
// output. Unknown means it could not be run.
func (m *Manager) runProbe(ctx context.Context, w *worker, t target) (Result, string) {
	p := w.probe
	if m.opts.Probe != nil {
		ctx, cancel := context.WithTimeout(ctx, w.timeout)
		defer cancel()
		return m.opts.Probe(ctx, Request{
			PodUID: w.pod.uid, PodName: w.pod.name, PodNamespace: w.pod.namespace,
			Container: w.c.spec, ContainerID: t.containerID, StartedAt: t.startedAt,
			Probe: p, Type: w.typ, PodIP: t.podIP, Timeout: w.timeout,
		})
	}
	switch {
	case p.Exec != nil:
		return m.probeExec(ctx, t.containerID, p.Exec.Command, w.timeout)
	case p.HTTPGet != nil:
		port, err := resolvePort(p.HTTPGet.Port, w.c.spec)
		if err != nil {
			return Unknown, err.Error()
		}
		host := p.HTTPGet.Host
		if host == "" {
			host = t.podIP
		}
		if host == "" {
			return Unknown, "the pod has no IP yet"
		}
		return m.probeHTTP(ctx, p.HTTPGet, host, port, w.timeout)
	case p.TCPSocket != nil:
		port, err := resolvePort(p.TCPSocket.Port, w.c.spec)
		if err != nil {
			return Unknown, err.Error()
		}
		host := p.TCPSocket.Host
		if host == "" {
			host = t.podIP
		}
		if host == "" {
			return Unknown, "the pod has no IP yet"
		}
		return m.probeTCP(ctx, host, port, w.timeout)
	case p.GRPC != nil:
		service := ""
		if p.GRPC.Service != nil {
			service = *p.GRPC.Service
		}
		if t.podIP == "" {
			return Unknown, "the pod has no IP yet"
		}
		return m.probeGRPC(ctx, t.podIP, int(p.GRPC.Port), service, w.timeout)
	}
	return Unknown, "probe has no handler"
}

// resolvePort returns a port given by number, or by the name of one of the
// container's ports.
func resolvePort(p intstr.IntOrString, c *v1.Container) (int, error) {
	port := -1
	if p.Type == intstr.Int {
		port = p.IntValue()
	} else {
		for _, cp := range c.Ports {
			if cp.Name == p.StrVal {
				port = int(cp.ContainerPort)
				break
			}
		}
		if port < 0 {
			if n, err := strconv.Atoi(p.StrVal); err == nil {
				port = n
			} else {
				return 0, fmt.Errorf("no port named %q in container %q", p.StrVal, c.Name)
			}
		}
	}
	if port < 1 || port > 65535 {
		return 0, fmt.Errorf("invalid port %d", port)
	}
	return port, nil
}

func hostPort(host string, port int) string {
	return net.JoinHostPort(host, strconv.Itoa(port))
}

func truncate(b []byte) string {
	if len(b) > maxOutput {
		b = b[:maxOutput]
	}
	return string(b)
}
