package main

import (
	"io"
	"testing"
)

func TestNodeServerFlags(t *testing.T) {
	c, err := parseFlags(nil, io.Discard)
	if err != nil || c.port != 10250 || c.address != "0.0.0.0" || c.anonymousAuth || c.authorizationMode != "Webhook" {
		t.Errorf("defaults: %+v, %v", c, err)
	}
	for _, bad := range [][]string{
		{"--port", "-2"}, {"--port", "70000"}, {"--authorization-mode", "RBAC"},
		{"--tls-cert-file", "/x.crt"}, {"--node-ip", "not-an-ip"},
	} {
		if _, err := parseFlags(bad, io.Discard); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
	// Without a cluster, a client CA or anonymous requests, nobody could
	// be authenticated: no server.
	if o, err := serverOptions(c, nil, nil); err != nil || o != nil {
		t.Errorf("no cluster: %+v, %v", o, err)
	}
	// Webhook authorization needs the API server.
	c.anonymousAuth = true
	if _, err := serverOptions(c, nil, nil); err == nil {
		t.Error("Webhook without a cluster: no error")
	}
	c.authorizationMode = "AlwaysAllow"
	if o, err := serverOptions(c, nil, nil); err != nil || o == nil || o.Port != 10250 {
		t.Errorf("anonymous AlwaysAllow: %+v, %v", o, err)
	}
	c.port = 0
	if o, _ := serverOptions(c, nil, nil); o == nil || o.Port != -1 {
		t.Errorf("--port 0: %+v, want any free port (-1)", o)
	}
	c.port = -1
	if o, _ := serverOptions(c, nil, nil); o != nil {
		t.Errorf("--port -1: %+v, want no server", o)
	}
}
