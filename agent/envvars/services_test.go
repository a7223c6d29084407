package envvars

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func svc(ns, name, ip string, ports ...v1.ServicePort) *v1.Service {
	return &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1.ServiceSpec{ClusterIP: ip, Ports: ports}}
}

func TestServiceEnv(t *testing.T) {
	got := ServiceEnv([]*v1.Service{
		svc("ns", "my-db", "10.0.0.5", v1.ServicePort{Port: 5432}, v1.ServicePort{Name: "metrics-port", Port: 9187, Protocol: v1.ProtocolUDP}),
		svc("ns", "headless", "None", v1.ServicePort{Port: 1}),
		svc("ns", "v6", "fd00::1", v1.ServicePort{Name: "https", Port: 443, Protocol: v1.ProtocolTCP}),
		svc("ns", "noports", "10.0.0.6"),
	})
	want := []EnvVar{
		{Name: "MY_DB_SERVICE_HOST", Value: "10.0.0.5"},
		{Name: "MY_DB_SERVICE_PORT", Value: "5432"},
		{Name: "MY_DB_SERVICE_PORT_METRICS_PORT", Value: "9187"},
		{Name: "MY_DB_PORT", Value: "tcp://10.0.0.5:5432"},
		{Name: "MY_DB_PORT_5432_TCP", Value: "tcp://10.0.0.5:5432"},
		{Name: "MY_DB_PORT_5432_TCP_PROTO", Value: "tcp"},
		{Name: "MY_DB_PORT_5432_TCP_PORT", Value: "5432"},
		{Name: "MY_DB_PORT_5432_TCP_ADDR", Value: "10.0.0.5"},
		{Name: "MY_DB_PORT_9187_UDP", Value: "udp://10.0.0.5:9187"},
		{Name: "MY_DB_PORT_9187_UDP_PROTO", Value: "udp"},
		{Name: "MY_DB_PORT_9187_UDP_PORT", Value: "9187"},
		{Name: "MY_DB_PORT_9187_UDP_ADDR", Value: "10.0.0.5"},
		{Name: "V6_SERVICE_HOST", Value: "fd00::1"},
		{Name: "V6_SERVICE_PORT", Value: "443"},
		{Name: "V6_SERVICE_PORT_HTTPS", Value: "443"},
		{Name: "V6_PORT", Value: "tcp://[fd00::1]:443"},
		{Name: "V6_PORT_443_TCP", Value: "tcp://[fd00::1]:443"},
		{Name: "V6_PORT_443_TCP_PROTO", Value: "tcp"},
		{Name: "V6_PORT_443_TCP_PORT", Value: "443"},
		{Name: "V6_PORT_443_TCP_ADDR", Value: "fd00::1"},
		{Name: "NOPORTS_SERVICE_HOST", Value: "10.0.0.6"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

func TestServicesFor(t *testing.T) {
	kube := svc("default", "kubernetes", "10.96.0.1", v1.ServicePort{Port: 443})
	other := svc("default", "other", "10.96.0.2", v1.ServicePort{Port: 80})
	mine := svc("ns", "web", "10.96.0.3", v1.ServicePort{Port: 80})
	shadow := svc("ns", "kubernetes", "10.96.0.4", v1.ServicePort{Port: 443})
	headless := svc("ns", "hl", "None")
	names := func(list []*v1.Service) []string {
		var out []string
		for _, s := range list {
			out = append(out, s.Namespace+"/"+s.Name)
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		ns    string
		links bool
		in    []*v1.Service
		want  []string
	}{
		{"links off: only kubernetes", "ns", false, []*v1.Service{kube, other, mine}, []string{"default/kubernetes"}},
		{"links on: kubernetes and the namespace's", "ns", true, []*v1.Service{kube, other, mine, headless}, []string{"default/kubernetes", "ns/web"}},
		{"the default namespace with links", "default", true, []*v1.Service{other, kube}, []string{"default/kubernetes", "default/other"}},
		{"the default namespace without links", "default", false, []*v1.Service{other, kube}, []string{"default/kubernetes"}},
		{"a namespace's kubernetes wins, either order", "ns", true, []*v1.Service{kube, shadow}, []string{"ns/kubernetes"}},
		{"... the other order", "ns", true, []*v1.Service{shadow, kube}, []string{"ns/kubernetes"}},
		{"... not without links", "ns", false, []*v1.Service{shadow, kube}, []string{"default/kubernetes"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, names(ServicesFor(tc.in, tc.ns, tc.links))); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}
