package cri

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPodHostnameAndDomain(t *testing.T) {
	long := strings.Repeat("a", 60) + "-bc-" + strings.Repeat("d", 10) // 74: cut at 63 ends "-b"
	yes := true
	override := func(s string) *string { return &s }
	for _, tc := range []struct {
		what                 string
		name, host, sub      string
		override             *string
		fqdn                 *bool
		hostname, domain, kh string
		err                  string
	}{
		{what: "name", name: "web-0", hostname: "web-0", kh: "web-0"},
		{what: "spec.hostname", name: "web-0", host: "h", hostname: "h", kh: "h"},
		{what: "subdomain", name: "web-0", sub: "s", hostname: "web-0", domain: "s.ns.svc.cluster.local", kh: "web-0"},
		{what: "FQDN", name: "web-0", sub: "s", fqdn: &yes, hostname: "web-0", domain: "s.ns.svc.cluster.local", kh: "web-0.s.ns.svc.cluster.local"},
		{what: "FQDN without a subdomain", name: "web-0", fqdn: &yes, hostname: "web-0", kh: "web-0"},
		{what: "a long name is cut to 63", name: strings.Repeat("x", 70), hostname: strings.Repeat("x", 63), kh: strings.Repeat("x", 63)},
		{what: "the cut drops a trailing '-'", name: strings.Repeat("a", 62) + "-bbbb", hostname: strings.Repeat("a", 62), kh: strings.Repeat("a", 62)},
		{what: "cut, then trailing chars", name: long, hostname: long[:63], kh: long[:63]},
		{what: "override", name: "web-0", host: "h", sub: "s", override: override("override.example.host"), hostname: "override.example.host", kh: "override.example.host"},
		{what: "a long override is cut", name: "p", override: override(strings.Repeat("o", 40) + "." + strings.Repeat("p", 40)), hostname: strings.Repeat("o", 40) + "." + strings.Repeat("p", 22), kh: strings.Repeat("o", 40) + "." + strings.Repeat("p", 22)},
		{what: "FQDN too long", name: strings.Repeat("x", 40), sub: "sub", fqdn: &yes, err: "FQDN " + strings.Repeat("x", 40) + ".sub.ns.svc.cluster.local is too long (64 characters is the max, 65 characters requested)"},
		{what: "bad hostname", name: "p", host: "Not_A_Label", err: `pod Hostname "Not_A_Label" is not a valid DNS label`},
		{what: "bad override", name: "p", override: override("Not-RFC1123"), err: `pod HostnameOverride "Not-RFC1123" is not a valid DNS subdomain`},
	} {
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: tc.name, Namespace: "ns"},
			Spec: v1.PodSpec{Hostname: tc.host, Subdomain: tc.sub, HostnameOverride: tc.override, SetHostnameAsFQDN: tc.fqdn}}
		h, d, err := podHostnameAndDomain(pod, "cluster.local")
		kh := ""
		if err == nil {
			kh, err = kernelHostname(pod, h, d)
		}
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err %v, want %q", tc.what, err, tc.err)
			}
			continue
		}
		if err != nil || h != tc.hostname || d != tc.domain || kh != tc.kh {
			t.Errorf("%s: %q %q %q (%v), want %q %q %q", tc.what, h, d, kh, err, tc.hostname, tc.domain, tc.kh)
		}
		if len(kh) > 64 || strings.HasSuffix(kh, "-") || strings.HasSuffix(kh, ".") {
			t.Errorf("%s: kernel hostname %q", tc.what, kh)
		}
	}
}

func TestValidateHostFields(t *testing.T) {
	yes := true
	o := "o"
	pod := &v1.Pod{Spec: v1.PodSpec{
		HostAliases:      []v1.HostAlias{{IP: "10.0.0.1", Hostnames: []string{"ok", "bad\n10.9.9.9 evil"}}, {IP: "nope", Hostnames: []string{"x"}}},
		HostnameOverride: &o, SetHostnameAsFQDN: &yes, HostNetwork: true,
	}}
	errs := validateHostFields(pod)
	var got []string
	for _, e := range errs {
		got = append(got, e.Error()[:strings.Index(e.Error(), ":")])
	}
	want := []string{"spec.hostAliases[0].hostnames[1]", "spec.hostAliases[1].ip", "spec.hostnameOverride", "spec.hostnameOverride"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("fields refused (-want +got):\n%s\n%v", d, errs)
	}
	if errs := validateHostFields(&v1.Pod{Spec: v1.PodSpec{HostAliases: []v1.HostAlias{{IP: "::1", Hostnames: []string{"a.b"}}}}}); len(errs) != 0 {
		t.Errorf("valid aliases refused: %v", errs)
	}
}

func TestManagedHostsContent(t *testing.T) {
	aliases := []v1.HostAlias{{IP: "123.45.67.89", Hostnames: []string{"foo", "bar"}}, {IP: "::2", Hostnames: []string{"six"}}}
	got := string(managedHostsContent([]string{"10.1.0.5", "fd00::5"}, "web-0", "s.ns.svc.cluster.local", aliases))
	want := "# Kubernetes-managed hosts file.\n" +
		"127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\nfe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n" +
		"10.1.0.5\tweb-0.s.ns.svc.cluster.local\tweb-0\nfd00::5\tweb-0.s.ns.svc.cluster.local\tweb-0\n" +
		"\n# Entries added by HostAliases.\n123.45.67.89\tfoo\tbar\n::2\tsix\n"
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("managed hosts (-want +got):\n%s", d)
	}
	if got := string(managedHostsContent([]string{"10.1.0.5"}, "h", "", nil)); !strings.HasSuffix(got, "fe00::2\tip6-allrouters\n10.1.0.5\th\n") {
		t.Errorf("managed hosts without domain nor aliases:\n%s", got)
	}
	if got := string(nodeHostsContent([]byte("127.0.0.1 localhost\n"), aliases[:1])); got != "# Kubernetes-managed hosts file (host network).\n127.0.0.1 localhost\n\n# Entries added by HostAliases.\n123.45.67.89\tfoo\tbar\n" {
		t.Errorf("node hosts:\n%q", got)
	}
}

func TestHostsMount(t *testing.T) {
	root := t.TempDir()
	nodeHosts := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(nodeHosts, []byte("127.0.0.1 localhost\n10.0.0.1 node\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o := Options{VolumeRoot: root, NetworkMode: NetworkModePod, etcHosts: nodeHosts}.withDefaults()
	r := &Runtime{opts: o}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "ns", UID: "u1"},
		Spec: v1.PodSpec{Subdomain: "s", HostAliases: []v1.HostAlias{{IP: "1.2.3.4", Hostnames: []string{"foo"}}}}}
	c := &v1.Container{Name: "c"}
	path := filepath.Join(root, "u1", "etc-hosts")
	read := func() string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}

	// Own network, no IP yet: nothing.
	if m, err := r.hostsMount(pod, c, func() []string { return nil }); m != nil || err != nil {
		t.Fatalf("without pod IPs: %v, %v", m, err)
	}
	m, err := r.hostsMount(pod, c, func() []string { return []string{"10.1.0.5"} })
	if err != nil || m == nil || m.ContainerPath != "/etc/hosts" || m.HostPath != path || m.Readonly {
		t.Fatalf("mount %v, %v", m, err)
	}
	if got := read(); !strings.HasPrefix(got, managedHostsHeader) || !strings.Contains(got, "10.1.0.5\tweb-0.s.ns.svc.cluster.local\tweb-0\n") || !strings.HasSuffix(got, "1.2.3.4\tfoo\n") {
		t.Errorf("managed file:\n%s", got)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("file mode: %v, %v", fi, err)
	}
	ino := inode(t, path)

	// The node's network: the node's file and the aliases, in place (a
	// running container keeps seeing it).
	pod.Spec.HostNetwork = true
	if m, err = r.hostsMount(pod, c, nil); err != nil || m == nil {
		t.Fatalf("host network: %v, %v", m, err)
	}
	if got, want := read(), managedHostsHeaderWithHostNetwork+"127.0.0.1 localhost\n10.0.0.1 node\n\n# Entries added by HostAliases.\n1.2.3.4\tfoo\n"; got != want {
		t.Errorf("host-network file:\n%q\nwant\n%q", got, want)
	}
	if inode(t, path) != ino {
		t.Error("the file was replaced, not rewritten in place")
	}

	// A container mounting /etc/hosts itself gets none.
	c.VolumeMounts = []v1.VolumeMount{{Name: "h", MountPath: "/etc/hosts"}}
	if m, err := r.hostsMount(pod, c, nil); m != nil || err != nil {
		t.Errorf("container with its own /etc/hosts: %v, %v", m, err)
	}

	// The node's file unreadable: a clear error.
	r.opts.etcHosts = filepath.Join(root, "missing")
	c.VolumeMounts = nil
	if _, err := r.hostsMount(pod, c, nil); err == nil || !strings.Contains(err.Error(), "managed /etc/hosts of pod ns/web-0 (u1): read the node's") {
		t.Errorf("unreadable node hosts: %v", err)
	}
}

func inode(t *testing.T, path string) uint64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		t.Skip("no inode numbers here")
	}
	return st.Ino
}
