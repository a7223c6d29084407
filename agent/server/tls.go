package server

import (
	"crypto/tls"
	"fmt"
	"net"

	certutil "k8s.io/client-go/util/cert"
)

// tlsConfig loads CertFile and KeyFile, or makes a self-signed certificate
// for the node's name and addresses, as the kubelet does without
// --tls-cert-file. Client certificates are requested, not required: the
// Authenticator verifies them against its CA.
func (s *Server) tlsConfig() (*tls.Config, error) {
	var cert tls.Certificate
	var err error
	if s.opts.CertFile != "" {
		cert, err = tls.LoadX509KeyPair(s.opts.CertFile, s.opts.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("server: serving certificate: %w", err)
		}
	} else {
		var ips []net.IP
		var names []string
		for _, a := range s.opts.Addresses {
			if ip := net.ParseIP(a); ip != nil {
				ips = append(ips, ip)
			} else if a != "" && a != s.opts.NodeName {
				names = append(names, a)
			}
		}
		certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(s.opts.NodeName, ips, names)
		if err != nil {
			return nil, fmt.Errorf("server: self-signed certificate: %w", err)
		}
		if cert, err = tls.X509KeyPair(certPEM, keyPEM); err != nil {
			return nil, fmt.Errorf("server: self-signed certificate: %w", err)
		}
	}
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		ClientAuth:   tls.RequestClientCert,
		MinVersion:   tls.VersionTLS12,
		NextProtos:   []string{"http/1.1"}, // streams upgrade HTTP/1.1 connections
	}, nil
}
