package prober

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
)

// maxRedirects is how many same-host redirects an HTTP probe follows.
const maxRedirects = 10

// defaultTransport is the kubelet's probe transport: no proxy, no TLS
// verification, a new connection per probe.
func defaultTransport(dial func(ctx context.Context, network, address string) (net.Conn, error)) http.RoundTripper {
	return &http.Transport{
		Proxy:              nil,
		DialContext:        dial,
		TLSClientConfig:    &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // as the kubelet: probes do not verify
		DisableKeepAlives:  true,
		DisableCompression: true,
	}
}

// sameHostRedirects follows redirects to the same host only; a redirect
// elsewhere ends the probe with the redirect's own response (a 3xx, which
// counts as success).
func sameHostRedirects(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	if req.URL.Hostname() != via[0].URL.Hostname() {
		return http.ErrUseLastResponse
	}
	return nil
}

// probeHTTP runs an httpGet probe: a status in [200, 400) is success.
func (m *Manager) probeHTTP(ctx context.Context, g *v1.HTTPGetAction, host string, port int, timeout time.Duration) (Result, string) {
	u, err := url.Parse(g.Path)
	if err != nil {
		u = &url.URL{Path: g.Path}
	}
	u.Scheme = strings.ToLower(string(g.Scheme))
	if u.Scheme == "" {
		u.Scheme = "http"
	}
	u.Host = hostPort(host, port)
	if u.Path != "" && !strings.HasPrefix(u.Path, "/") {
		u.Path = "/" + u.Path
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return Unknown, err.Error()
	}
	for _, h := range g.HTTPHeaders {
		if http.CanonicalHeaderKey(h.Name) == "Host" {
			req.Host = h.Value
			continue
		}
		req.Header.Add(h.Name, h.Value)
	}
	if _, ok := req.Header["User-Agent"]; !ok {
		req.Header.Set("User-Agent", m.opts.UserAgent)
	}
	if _, ok := req.Header["Accept"]; !ok {
		req.Header.Set("Accept", "*/*")
	} else if req.Header.Get("Accept") == "" {
		req.Header.Del("Accept") // an empty Accept header means none
	}
	resp, err := m.http.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return Failure, fmt.Sprintf("GET %s: timeout after %s", u, timeout)
		}
		return Failure, err.Error()
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxOutput))
	if err != nil {
		return Failure, fmt.Sprintf("GET %s: read body: %v", u, err)
	}
	if resp.StatusCode >= http.StatusOK && resp.StatusCode < http.StatusBadRequest {
		if resp.StatusCode >= http.StatusMultipleChoices {
			// A redirect to another host, not followed: a success with a
			// warning, and the kubelet's words.
			return warning, fmt.Sprintf("Probe terminated redirects, Response body: %s", body)
		}
		return Success, string(body)
	}
	return Failure, fmt.Sprintf("HTTP probe failed with status code %d: %s", resp.StatusCode, body)
}
