package server_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"

	"github.com/podlife/podlife/agent/server"
)

// A real Server: TLS with a self-signed certificate for the node, client
// certificates verified by NewAuthenticator against the client CA, and a
// free port.
func TestRunTLSClientCertificates(t *testing.T) {
	dir := t.TempDir()
	ca, caKey := newCert(t, nil, nil, "test-ca", nil, true)
	writePEM(t, filepath.Join(dir, "ca.crt"), "CERTIFICATE", ca.Raw)
	admin, adminKey := newCert(t, ca, caKey, "kube-apiserver-kubelet-client", []string{"system:masters"}, false)
	other, otherKey := newCert(t, nil, nil, "stranger", nil, true) // not signed by the CA

	authn, err := server.NewAuthenticator(server.AuthenticationOptions{ClientCAFile: filepath.Join(dir, "ca.crt")})
	if err != nil {
		t.Fatal(err)
	}
	authz, err := server.NewAuthorizer(server.AuthorizationOptions{Mode: server.AuthorizationModeAlwaysAllow})
	if err != nil {
		t.Fatal(err)
	}
	s, err := server.New(server.Options{NodeName: "n1", Address: "127.0.0.1", Port: -1,
		Addresses: []string{"127.0.0.1"}, Authenticator: authn, Authorizer: authz, Logger: testr.New(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	if s.Port() == 0 || s.Port() == server.DefaultPort {
		t.Fatalf("port %d", s.Port())
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	var runErr error
	go func() { defer wg.Done(); runErr = s.Run(ctx) }()
	defer func() {
		cancel()
		wg.Wait()
		if runErr != nil {
			t.Errorf("Run: %v", runErr)
		}
	}()

	do := func(cert *x509.Certificate, key *ecdsa.PrivateKey) (int, string, *tls.ConnectionState) {
		cfg := &tls.Config{InsecureSkipVerify: true} // as the API server: no check of the node's certificate
		if cert != nil {
			cfg.Certificates = []tls.Certificate{{Certificate: [][]byte{cert.Raw}, PrivateKey: key}}
		}
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}, Timeout: 10 * time.Second}
		resp, err := c.Get(fmt.Sprintf("https://127.0.0.1:%d/healthz", s.Port()))
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), resp.TLS
	}
	code, body, st := do(admin, adminKey)
	if code != 200 || body != "ok" {
		t.Errorf("with the CA's client certificate: %d %q", code, body)
	}
	if leaf := st.PeerCertificates[0]; leaf.VerifyHostname("n1") != nil || leaf.VerifyHostname("127.0.0.1") != nil {
		t.Errorf("serving certificate for %v %v, want n1 and 127.0.0.1", leaf.DNSNames, leaf.IPAddresses)
	}
	if code, _, _ := do(other, otherKey); code != 401 {
		t.Errorf("with a stranger's certificate: %d, want 401", code)
	}
	if code, _, _ := do(nil, nil); code != 401 {
		t.Errorf("without a certificate: %d, want 401", code)
	}
}

func TestNewAuthenticatorNeedsAMethod(t *testing.T) {
	if _, err := server.NewAuthenticator(server.AuthenticationOptions{}); err == nil {
		t.Error("no method accepted")
	}
	if _, err := server.NewAuthorizer(server.AuthorizationOptions{Mode: server.AuthorizationModeWebhook}); err == nil {
		t.Error("Webhook without a client accepted")
	}
	if _, err := server.NewAuthorizer(server.AuthorizationOptions{Mode: "RBAC"}); err == nil {
		t.Error("mode RBAC accepted")
	}
}

// newCert makes a certificate signed by parent (self-signed when nil).
func newCert(t *testing.T, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, cn string, orgs []string, isCA bool) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: cn, Organization: orgs},
		NotBefore:    time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true, IsCA: isCA,
	}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c, key
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
