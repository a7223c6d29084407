package main

import (
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/net/websocket"
	"k8s.io/client-go/rest"
)

// wsLog reads a container's log through the API server over a WebSocket
// (protocol binary.k8s.io), as the e2e spec "Pods should support retrieving
// logs from the container over websockets" and browsers' consoles do, and
// returns what the messages held.
func (d *debugNode) wsLog(t *testing.T, pod, container string) string {
	t.Helper()
	cfg := d.api.AdminConfig
	u, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	u.Scheme = "wss"
	u.Path = "/api/v1/namespaces/" + d.ns + "/pods/" + pod + "/log"
	u.RawQuery = url.Values{"container": {container}}.Encode()
	ws, err := websocket.NewConfig(u.String(), "http://localhost")
	if err != nil {
		t.Fatal(err)
	}
	ws.Protocol = []string{"binary.k8s.io"}
	if ws.TlsConfig, err = rest.TLSConfigFor(cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.BearerToken != "" {
		ws.Header = http.Header{"Authorization": {"Bearer " + cfg.BearerToken}}
	}
	conn, err := websocket.DialConfig(ws)
	if err != nil {
		t.Fatalf("websocket to %s: %v", u, err)
	}
	defer conn.Close()
	var b strings.Builder
	for {
		var msg []byte
		if err := websocket.Message.Receive(conn, &msg); err != nil {
			if errors.Is(err, io.EOF) {
				return b.String()
			}
			t.Fatalf("websocket read: %v (read so far %q)", err, b.String())
		}
		b.Write(msg)
	}
}
