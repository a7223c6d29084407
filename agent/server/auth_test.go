package server_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/podlife/podlife/agent/server"
)

func TestAuthentication(t *testing.T) {
	w, _ := newWorld(t)
	base, _ := newServer(t, w)
	for _, p := range []string{"/healthz", "/pods", "/containerLogs/default/p/c", "/stats/summary", "/metrics/resource"} {
		if code, _ := get(t, "GET", base+p, ""); code != http.StatusUnauthorized {
			t.Errorf("GET %s without credentials: %d, want 401", p, code)
		}
	}
	if code, body := get(t, "GET", base+"/healthz", "admin"); code != 200 || body != "ok" {
		t.Errorf("healthz: %d %q", code, body)
	}
}

func TestAuthorizationForbidden(t *testing.T) {
	w, _ := newWorld(t, "2026-01-01T00:00:00.000000000Z stdout F hello")
	base, authz := newServer(t, w)
	code, body := get(t, "GET", base+"/containerLogs/default/p/c", "nobody")
	if code != http.StatusForbidden {
		t.Fatalf("logs as nobody: %d %s", code, body)
	}
	a := authz.last()
	if a.GetVerb() != "get" || a.GetResource() != "nodes" || a.GetSubresource() != "proxy" || a.GetName() != "n1" {
		t.Errorf("asked %+v", a)
	}
	if code, _ := get(t, "POST", base+"/exec/default/p/c?command=ls&stdout=1", "nobody"); code != http.StatusForbidden {
		t.Errorf("exec as nobody: %d", code)
	}
	if code, _ := get(t, "OPTIONS", base+"/pods", "admin"); code != http.StatusForbidden {
		t.Errorf("OPTIONS: %d, want 403", code)
	}
}

func TestRequestAttributes(t *testing.T) {
	u := &user.DefaultInfo{Name: "u"}
	for _, tc := range []struct {
		method, path, verb, sub string
	}{
		{"GET", "/stats/summary", "get", "stats"},
		{"GET", "/stats", "get", "stats"},
		{"GET", "/metrics", "get", "metrics"},
		{"GET", "/metrics/resource", "get", "metrics"},
		{"GET", "/logs/syslog", "get", "log"},
		{"GET", "/containerLogs/ns/p/c", "get", "proxy"},
		{"POST", "/exec/ns/p/c", "create", "proxy"},
		{"GET", "/exec/ns/p/c", "get", "proxy"},
		{"POST", "/portForward/ns/p", "create", "proxy"},
		{"PUT", "/pods", "update", "proxy"},
		{"PATCH", "/pods", "patch", "proxy"},
		{"DELETE", "/pods", "delete", "proxy"},
		{"GET", "/statsx", "get", "proxy"},
		{"HEAD", "/healthz", "get", "proxy"},
	} {
		r := httptest.NewRequest(tc.method, tc.path, nil)
		a, ok := server.RequestAttributes(u, r, "n1")
		if !ok || a.Verb != tc.verb || a.Subresource != tc.sub || a.Resource != "nodes" || a.Name != "n1" || !a.ResourceRequest {
			t.Errorf("%s %s: %+v %v, want verb %s subresource %s", tc.method, tc.path, a, ok, tc.verb, tc.sub)
		}
	}
	if _, ok := server.RequestAttributes(u, httptest.NewRequest("OPTIONS", "/pods", nil), "n1"); ok {
		t.Error("OPTIONS has a verb")
	}
}

func TestOptionsValidate(t *testing.T) {
	if _, err := server.New(server.Options{}); err == nil {
		t.Error("empty options accepted")
	}
	if _, err := server.New(server.Options{NodeName: "n1", Authenticator: tokenAuth, Authorizer: &recordingAuthz{}, CertFile: "x"}); err == nil {
		t.Error("CertFile without KeyFile accepted")
	}
}
