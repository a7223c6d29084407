package cri

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// HookRunner runs one lifecycle handler (postStart or preStop) of a
// container: exec in the container, HTTP GET, or sleep. ctx bounds it. An
// error is the hook's failure. Options.HookRunner replaces the default
// one, for tests or another transport.
type HookRunner interface {
	RunHook(ctx context.Context, h HookTarget, handler *v1.LifecycleHandler) error
}

// HookTarget is what a handler runs against.
type HookTarget struct {
	Pod         *v1.Pod
	Container   *v1.Container
	ContainerID string
	// PodIP is the default host of an httpGet handler ("" when unknown).
	PodIP string
}

// ErrHook marks the failure of a lifecycle hook.
var ErrHook = errors.New("lifecycle hook failed")

// criHooks is the default HookRunner: exec through CRI ExecSync, httpGet
// with net/http, sleep on the Runtime's clock.
type criHooks struct{ r *Runtime }

func (h criHooks) RunHook(ctx context.Context, t HookTarget, handler *v1.LifecycleHandler) error {
	switch {
	case handler.Exec != nil:
		return h.exec(ctx, t, handler.Exec.Command)
	case handler.HTTPGet != nil:
		return h.httpGet(ctx, t, handler.HTTPGet)
	case handler.Sleep != nil:
		select {
		case <-h.r.opts.Clock.After(time.Duration(handler.Sleep.Seconds) * time.Second):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	default:
		return errors.New("handler has no exec, httpGet or sleep action (tcpSocket is not supported, as in the kubelet)")
	}
}

func (h criHooks) exec(ctx context.Context, t HookTarget, cmd []string) error {
	if len(cmd) == 0 {
		return errors.New("exec handler with no command")
	}
	var timeout int64
	if dl, ok := ctx.Deadline(); ok {
		timeout = max(int64(time.Until(dl)/time.Second), 1)
	}
	resp, err := h.r.rs.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: t.ContainerID, Cmd: cmd, Timeout: timeout})
	if err != nil {
		return fromGRPC(err)
	}
	if resp.GetExitCode() != 0 {
		return fmt.Errorf("command %q exited with %d: %s", cmd, resp.GetExitCode(), truncate(string(resp.GetStdout())+string(resp.GetStderr()), 1024))
	}
	return nil
}

func (h criHooks) httpGet(ctx context.Context, t HookTarget, g *v1.HTTPGetAction) error {
	host := g.Host
	if host == "" {
		host = t.PodIP
	}
	if host == "" {
		return errors.New("httpGet handler: no host and the pod IP is not known")
	}
	port, err := resolvePort(g.Port, t.Container)
	if err != nil {
		return err
	}
	scheme := "http"
	if g.Scheme == v1.URISchemeHTTPS {
		scheme = "https"
	}
	u := &url.URL{Scheme: scheme, Host: net.JoinHostPort(host, strconv.Itoa(port)), Path: g.Path}
	if u.Path == "" {
		u.Path = "/"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	for _, hd := range g.HTTPHeaders {
		req.Header.Add(hd.Name, hd.Value)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	if resp.StatusCode < 200 || resp.StatusCode >= 400 {
		return fmt.Errorf("GET %s: %s: %s", u, resp.Status, body)
	}
	return nil
}

// resolvePort: a number, or the name of one of the container's ports.
func resolvePort(p intstr.IntOrString, c *v1.Container) (int, error) {
	if p.Type == intstr.Int {
		if p.IntVal <= 0 || p.IntVal > 65535 {
			return 0, fmt.Errorf("invalid port %d", p.IntVal)
		}
		return int(p.IntVal), nil
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return int(cp.ContainerPort), nil
		}
	}
	if n, err := strconv.Atoi(p.StrVal); err == nil && n > 0 && n <= 65535 {
		return n, nil
	}
	return 0, fmt.Errorf("port %q is not a port of container %q", p.StrVal, c.Name)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// findContainer returns the spec of a container of the pod, init or
// regular, or nil.
func findContainer(pod *v1.Pod, name string) *v1.Container {
	if pod == nil {
		return nil
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i]
		}
	}
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	return nil
}
