package cri

import (
	"errors"
	"fmt"
	"net"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Hostnames, as the kubelet's GeneratePodHostNameAndDomain and
// GetNodenameForKernel give them.

// hostnameMaxLen caps a pod's hostname: the kernel's nodename holds 64
// bytes with the terminating NUL.
const hostnameMaxLen = 63

// fqdnMaxLen caps a hostname set to the pod's FQDN (setHostnameAsFQDN).
const fqdnMaxLen = 64

// podHostnameAndDomain are a pod's hostname and DNS domain: its
// hostnameOverride (no domain then), else its spec.hostname, else its
// name, cut to 63 characters without a trailing '-' or '.'; the domain
// is SUBDOMAIN.NAMESPACE.svc.CLUSTERDOMAIN when it has a subdomain.
func podHostnameAndDomain(pod *v1.Pod, clusterDomain string) (hostname, domain string, err error) {
	if o := pod.Spec.HostnameOverride; o != nil {
		if msgs := validation.IsDNS1123Subdomain(*o); len(msgs) > 0 {
			return "", "", fmt.Errorf("pod HostnameOverride %q is not a valid DNS subdomain: %s", *o, strings.Join(msgs, ";"))
		}
		h, err := truncateHostname(pod.Name, *o)
		return h, "", err
	}
	hostname = pod.Name
	if h := pod.Spec.Hostname; h != "" {
		if msgs := validation.IsDNS1123Label(h); len(msgs) > 0 {
			return "", "", fmt.Errorf("pod Hostname %q is not a valid DNS label: %s", h, strings.Join(msgs, ";"))
		}
		hostname = h
	}
	if hostname, err = truncateHostname(pod.Name, hostname); err != nil {
		return "", "", err
	}
	if s := pod.Spec.Subdomain; s != "" {
		if msgs := validation.IsDNS1123Label(s); len(msgs) > 0 {
			return "", "", fmt.Errorf("pod Subdomain %q is not a valid DNS label: %s", s, strings.Join(msgs, ";"))
		}
		domain = fmt.Sprintf("%s.%s.svc.%s", s, pod.Namespace, clusterDomain)
	}
	return hostname, domain, nil
}

// truncateHostname cuts a hostname longer than the kernel takes to 63
// characters, then drops the '-' and '.' it would end with.
func truncateHostname(podName, hostname string) (string, error) {
	if len(hostname) <= hostnameMaxLen {
		return hostname, nil
	}
	t := strings.TrimRight(hostname[:hostnameMaxLen], "-.")
	if t == "" {
		return "", fmt.Errorf("hostname for pod %q was invalid: %q", podName, hostname)
	}
	return t, nil
}

// kernelHostname is the hostname the sandbox gets: the FQDN when the pod
// sets setHostnameAsFQDN and has a domain (at most 64 characters), else
// the hostname.
func kernelHostname(pod *v1.Pod, hostname, domain string) (string, error) {
	if domain == "" || pod.Spec.SetHostnameAsFQDN == nil || !*pod.Spec.SetHostnameAsFQDN {
		return hostname, nil
	}
	fqdn := hostname + "." + domain
	if len(fqdn) > fqdnMaxLen {
		return "", fmt.Errorf("failed to construct FQDN from pod hostname and cluster domain, FQDN %s is too long (%d characters is the max, %d characters requested)", fqdn, fqdnMaxLen, len(fqdn))
	}
	return fqdn, nil
}

// validateHostFields checks what the API server checks of the pod's
// names for itself (a pod from a manifest has not been through it):
// hostAliases (their lines go into /etc/hosts), and hostnameOverride,
// which neither setHostnameAsFQDN nor hostNetwork may come with.
func validateHostFields(pod *v1.Pod) []error {
	var errs []error
	for i, a := range pod.Spec.HostAliases {
		if net.ParseIP(a.IP) == nil {
			errs = append(errs, fmt.Errorf("spec.hostAliases[%d].ip: %q is not an IP address", i, a.IP))
		}
		for j, h := range a.Hostnames {
			if msgs := validation.IsDNS1123Subdomain(h); len(msgs) > 0 {
				errs = append(errs, fmt.Errorf("spec.hostAliases[%d].hostnames[%d]: %q: %s", i, j, h, strings.Join(msgs, "; ")))
			}
		}
	}
	if pod.Spec.HostnameOverride != nil {
		if pod.Spec.SetHostnameAsFQDN != nil && *pod.Spec.SetHostnameAsFQDN {
			errs = append(errs, errors.New("spec.hostnameOverride: may not be set with setHostnameAsFQDN"))
		}
		if pod.Spec.HostNetwork {
			errs = append(errs, errors.New("spec.hostnameOverride: may not be set with hostNetwork"))
		}
	}
	return errs
}
