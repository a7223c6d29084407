package cri

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The kubelet-managed /etc/hosts.
//
// As the kubelet, every container gets VolumeRoot/UID/etc-hosts as its
// /etc/hosts, written again before each container is created, unless it
// mounts something at /etc/hosts itself:
//   - a pod with its own network namespace: the managed file (localhost
//     entries, then one line per pod IP with the FQDN and the hostname,
//     then the pod's hostAliases); none when the sandbox has no IP yet;
//   - a pod on the node's network (hostNetwork, or every pod with
//     NetworkModeNode): the node's /etc/hosts, then the hostAliases.

const (
	etcHostsPath                      = "/etc/hosts"
	managedHostsHeader                = "# Kubernetes-managed hosts file.\n"
	managedHostsHeaderWithHostNetwork = "# Kubernetes-managed hosts file (host network).\n"
)

// hostsMount writes the pod's managed hosts file and returns its mount,
// or nil when container c gets none: c mounts /etc/hosts itself, or the
// pod has its own network and podIPs gives no IP.
func (r *Runtime) hostsMount(pod *v1.Pod, c *v1.Container, podIPs func() []string) (*runtimeapi.Mount, error) {
	for _, m := range c.VolumeMounts {
		if m.MountPath == etcHostsPath {
			return nil, nil
		}
	}
	dir, err := r.podDir(pod.UID)
	if err != nil {
		return nil, nil // a UID that cannot name a folder: no files
	}
	var content []byte
	if r.usesNodeNetwork(pod) {
		node, err := os.ReadFile(r.opts.etcHosts)
		if err != nil {
			return nil, fmt.Errorf("managed /etc/hosts of pod %s: read the node's: %w", podRef(pod), err)
		}
		content = nodeHostsContent(node, pod.Spec.HostAliases)
	} else {
		ips := podIPs()
		if len(ips) == 0 {
			return nil, nil
		}
		hostname, domain, err := podHostnameAndDomain(pod, r.opts.ClusterDomain)
		if err != nil {
			return nil, err
		}
		content = managedHostsContent(ips, hostname, domain, pod.Spec.HostAliases)
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("managed /etc/hosts of pod %s: %w", podRef(pod), err)
	}
	path := filepath.Join(dir, "etc-hosts")
	// Rewritten in place, as the kubelet: running containers have the file
	// bind-mounted, and a rename would leave them the old one.
	if err := os.WriteFile(path, content, 0o644); err != nil {
		return nil, fmt.Errorf("managed /etc/hosts of pod %s: %w", podRef(pod), err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		return nil, fmt.Errorf("managed /etc/hosts of pod %s: %w", podRef(pod), err)
	}
	return &runtimeapi.Mount{ContainerPath: etcHostsPath, HostPath: path, SelinuxRelabel: true}, nil
}

// managedHostsContent is the hosts file of a pod with its own network.
func managedHostsContent(ips []string, hostname, domain string, aliases []v1.HostAlias) []byte {
	var b bytes.Buffer
	b.WriteString(managedHostsHeader)
	b.WriteString("127.0.0.1\tlocalhost\n")
	b.WriteString("::1\tlocalhost ip6-localhost ip6-loopback\n")
	b.WriteString("fe00::0\tip6-localnet\n")
	b.WriteString("fe00::0\tip6-mcastprefix\n")
	b.WriteString("fe00::1\tip6-allnodes\n")
	b.WriteString("fe00::2\tip6-allrouters\n")
	for _, ip := range ips {
		if domain != "" {
			fmt.Fprintf(&b, "%s\t%s.%s\t%s\n", ip, hostname, domain, hostname)
		} else {
			fmt.Fprintf(&b, "%s\t%s\n", ip, hostname)
		}
	}
	b.Write(hostAliasEntries(aliases))
	return b.Bytes()
}

// nodeHostsContent is the hosts file of a pod on the node's network.
func nodeHostsContent(node []byte, aliases []v1.HostAlias) []byte {
	var b bytes.Buffer
	b.WriteString(managedHostsHeaderWithHostNetwork)
	b.Write(node)
	b.Write(hostAliasEntries(aliases))
	return b.Bytes()
}

// hostAliasEntries are the hostAliases' lines, one per IP, after a blank
// line and a comment; nothing without aliases.
func hostAliasEntries(aliases []v1.HostAlias) []byte {
	if len(aliases) == 0 {
		return nil
	}
	var b bytes.Buffer
	b.WriteString("\n# Entries added by HostAliases.\n")
	for _, a := range aliases {
		fmt.Fprintf(&b, "%s\t%s\n", a.IP, strings.Join(a.Hostnames, "\t"))
	}
	return b.Bytes()
}
