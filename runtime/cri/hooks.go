package cri

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podlife/podlife/runtime"
)

// Lifecycle hooks (postStart, preStop) as the kubelet runs them
// (pkg/kubelet/lifecycle and kuberuntime's startContainer/killContainer):
//
//   - postStart runs right after StartContainer; when it fails the
//     container is killed (its preStop runs first, as in the kubelet), a
//     FailedPostStartHook warning is recorded, and SyncPod returns an
//     error, so that the restart policy and the crash-loop back-off apply.
//     podlife bounds it by Options.Timeout (the kubelet does not bound it).
//   - preStop runs before StopContainer, when the grace period is above
//     zero; the time it took comes out of the grace period, and the stop
//     gets at least MinimumGracePeriod. A hook still running when the grace
//     period is over is cancelled. A failure records FailedPreStopHook and
//     the stop goes on.
//
// Handlers: exec (CRI ExecSync; a non-zero exit is a failure), httpGet
// (the pod's IP, or 127.0.0.1 for a pod on the node's network, unless
// host is set; any HTTP status is a success, as in the kubelet, only a
// failed request fails), and sleep (on Options.Clock).

// Event reasons of the hooks, as the kubelet names them.
const (
	eventFailedPostStartHook = "FailedPostStartHook"
	eventFailedPreStopHook   = "FailedPreStopHook"
)

// AnnotationPreStopHandler records a container's preStop handler (JSON,
// with a named port resolved to its number), as the kubelet's annotation
// of the same name does, so that a container stopped without its pod spec
// (KillContainer, KillPod with only a runtime.Pod) still runs it.
const AnnotationPreStopHandler = "io.kubernetes.container.preStopHandler"

// hookTarget is the container a handler runs against.
type hookTarget struct {
	pod       *v1.Pod // the object of events; never nil
	name      string  // container name
	id        string  // container ID
	sandboxID string  // for the pod IP of httpGet handlers; "" when unknown
}

// validateLifecycle refuses the lifecycle fields the adapter cannot honour,
// naming them: a handler with no action or several, tcpSocket (deprecated
// by the API and never run by the kubelet), an exec with no command, an
// httpGet port that is not a port of the container, a stop signal.
func validateLifecycle(path string, c *v1.Container) []error {
	if c.Lifecycle == nil {
		return nil
	}
	var errs []error
	if c.Lifecycle.StopSignal != nil {
		errs = append(errs, fmt.Errorf("%s.lifecycle.stopSignal: not supported by podlife's CRI adapter", path))
	}
	for _, hk := range []struct {
		name string
		h    *v1.LifecycleHandler
	}{{"postStart", c.Lifecycle.PostStart}, {"preStop", c.Lifecycle.PreStop}} {
		if hk.h == nil {
			continue
		}
		field := path + ".lifecycle." + hk.name
		if hk.h.TCPSocket != nil {
			errs = append(errs, fmt.Errorf("%s.tcpSocket: deprecated by the API and not supported by podlife's CRI adapter (use exec, httpGet or sleep)", field))
			continue
		}
		n := 0
		for _, set := range []bool{hk.h.Exec != nil, hk.h.HTTPGet != nil, hk.h.Sleep != nil} {
			if set {
				n++
			}
		}
		switch {
		case n == 0:
			errs = append(errs, fmt.Errorf("%s: a handler needs one action: exec, httpGet or sleep", field))
			continue
		case n > 1:
			errs = append(errs, fmt.Errorf("%s: a handler may have only one action of exec, httpGet and sleep", field))
			continue
		}
		if hk.h.Exec != nil && len(hk.h.Exec.Command) == 0 {
			errs = append(errs, fmt.Errorf("%s.exec.command: empty", field))
		}
		if hk.h.HTTPGet != nil {
			if _, err := resolvePort(hk.h.HTTPGet.Port, c); err != nil {
				errs = append(errs, fmt.Errorf("%s.httpGet.port: %w", field, err))
			}
		}
		if hk.h.Sleep != nil && hk.h.Sleep.Seconds < 0 {
			errs = append(errs, fmt.Errorf("%s.sleep.seconds: must not be negative, got %d", field, hk.h.Sleep.Seconds))
		}
	}
	return errs
}

// resolvePort: a number, a number in a string, or the name of one of the
// container's ports, as the kubelet resolves it.
func resolvePort(p intstr.IntOrString, c *v1.Container) (int, error) {
	port := -1
	if p.Type == intstr.Int {
		port = int(p.IntVal)
	} else if n, err := strconv.Atoi(p.StrVal); err == nil {
		port = n
	} else {
		for _, cp := range c.Ports {
			if cp.Name == p.StrVal {
				port = int(cp.ContainerPort)
			}
		}
		if port < 0 {
			return 0, fmt.Errorf("%q is not the name of a port of container %q", p.StrVal, c.Name)
		}
	}
	if port <= 0 || port > 65535 {
		return 0, fmt.Errorf("port %d out of range", port)
	}
	return port, nil
}

// resolvedHandler returns a copy of h whose httpGet port is a number (h
// was validated).
func resolvedHandler(c *v1.Container, h *v1.LifecycleHandler) *v1.LifecycleHandler {
	if h == nil || h.HTTPGet == nil {
		return h
	}
	out := h.DeepCopy()
	if port, err := resolvePort(h.HTTPGet.Port, c); err == nil {
		out.HTTPGet.Port = intstr.FromInt32(int32(port))
	}
	return out
}

// preStopOf is the container's preStop handler, resolved, or nil.
func preStopOf(c *v1.Container) *v1.LifecycleHandler {
	if c == nil || c.Lifecycle == nil {
		return nil
	}
	return resolvedHandler(c, c.Lifecycle.PreStop)
}

// preStopAnnotation adds the container's preStop handler to annotations.
func preStopAnnotation(c *v1.Container, a map[string]string) {
	if h := preStopOf(c); h != nil {
		if b, err := json.Marshal(h); err == nil {
			a[AnnotationPreStopHandler] = string(b)
		}
	}
}

// preStopFromAnnotations reads the handler preStopAnnotation recorded; nil
// when none or malformed.
func preStopFromAnnotations(a map[string]string) *v1.LifecycleHandler {
	s := a[AnnotationPreStopHandler]
	if s == "" {
		return nil
	}
	h := &v1.LifecycleHandler{}
	if err := json.Unmarshal([]byte(s), h); err != nil {
		return nil
	}
	return h
}

// findContainer returns the spec of a container of the pod, init,
// regular or ephemeral (as a Container: asContainer), or nil.
func findContainer(pod *v1.Pod, name string) *v1.Container {
	if pod == nil {
		return nil
	}
	for _, list := range podContainerLists(pod) {
		for i := range list.cs {
			if list.cs[i].Name == name {
				return &list.cs[i]
			}
		}
	}
	if ec := findEphemeral(pod, name); ec != nil {
		return asContainer(ec)
	}
	return nil
}

// eventObject is the pod events are recorded on: the pod, or one named
// from the container's labels when the caller has no spec.
func eventObject(pod *v1.Pod, id podIdentity) *v1.Pod {
	if pod != nil {
		return pod
	}
	p := &v1.Pod{}
	p.Name, p.Namespace, p.UID = id.Name, id.Namespace, id.UID
	return p
}

// runHandler runs one handler; timeout bounds an exec command (zero: only
// ctx does). The error is the kubelet's message of a failed hook.
func (r *Runtime) runHandler(ctx context.Context, t hookTarget, h *v1.LifecycleHandler, timeout time.Duration) error {
	switch {
	case h.Exec != nil:
		stdout, stderr, code, err := r.ExecSync(ctx, t.id, h.Exec.Command, timeout)
		if err == nil && code != 0 {
			err = fmt.Errorf("command '%v' exited with %d", h.Exec.Command, code)
		}
		if err != nil {
			return fmt.Errorf("Exec lifecycle hook (%v) for Container %q in Pod %q failed - error: %w, message: %q",
				h.Exec.Command, t.name, podName(t.pod), err, string(stdout)+string(stderr))
		}
		return nil
	case h.HTTPGet != nil:
		if err := r.httpGetHook(ctx, t, h.HTTPGet); err != nil {
			return fmt.Errorf("HTTP lifecycle hook (%s) for Container %q in Pod %q failed - error: %w", h.HTTPGet.Path, t.name, podName(t.pod), err)
		}
		return nil
	case h.Sleep != nil:
		timer := r.opts.Clock.NewTimer(time.Duration(h.Sleep.Seconds) * time.Second)
		defer timer.Stop()
		select {
		case <-timer.C():
			return nil
		case <-ctx.Done():
			return fmt.Errorf("Sleep lifecycle hook (%d) for Container %q in Pod %q failed - error: container terminated before sleep hook finished", h.Sleep.Seconds, t.name, podName(t.pod))
		}
	}
	return errors.New("lifecycle handler has no action")
}

func podName(pod *v1.Pod) string {
	return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
}

// httpGetHook sends the GET; any response is a success, as in the kubelet.
// Certificates are not verified (the kubelet does not either).
func (r *Runtime) httpGetHook(ctx context.Context, t hookTarget, g *v1.HTTPGetAction) error {
	host := g.Host
	if host == "" {
		host = r.podIP(ctx, t.sandboxID)
	}
	port := g.Port.IntValue() // resolved before
	scheme := "http"
	if g.Scheme == v1.URISchemeHTTPS {
		scheme = "https"
	}
	u := &url.URL{Scheme: scheme, Host: net.JoinHostPort(host, strconv.Itoa(port)), Path: g.Path}
	if u.Path == "" {
		u.Path = "/"
	}
	if path, query, ok := strings.Cut(g.Path, "?"); ok {
		u.Path, u.RawQuery = path, query
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	req.Header.Set("User-Agent", "podlife-lifecycle")
	req.Header.Set("Accept", "*/*")
	for _, hd := range g.HTTPHeaders {
		if http.CanonicalHeaderKey(hd.Name) == "Host" {
			req.Host = hd.Value
			continue
		}
		req.Header.Add(hd.Name, hd.Value)
	}
	// One transport per hook, without keep-alive: hooks are rare and
	// nothing is left open after them.
	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	return resp.Body.Close()
}

// podIP is the sandbox's IP, or 127.0.0.1 when it has none (a pod on the
// node's network, which podlife uses without CNI) or it cannot be read.
func (r *Runtime) podIP(ctx context.Context, sandboxID string) string {
	if sandboxID != "" {
		if st, err := r.sandboxStatus(ctx, sandboxID); err == nil {
			if ip := st.GetNetwork().GetIp(); ip != "" {
				return ip
			}
		}
	}
	return "127.0.0.1"
}

// postStart runs the container's postStart handler, if any. When it fails
// the container is killed with the pod's grace period, and the error is a
// *runtime.StartError with reason PostStartHookError, as the kubelet's.
func (r *Runtime) postStart(ctx context.Context, pod *v1.Pod, c *v1.Container, id, sandboxID string) error {
	if c.Lifecycle == nil || c.Lifecycle.PostStart == nil {
		return nil
	}
	t := hookTarget{pod: pod, name: c.Name, id: id, sandboxID: sandboxID}
	hctx, cancel := context.WithTimeout(ctx, r.opts.Timeout)
	err := r.runHandler(hctx, t, resolvedHandler(c, c.Lifecycle.PostStart), 0)
	cancel()
	if err == nil {
		return nil
	}
	r.log.Info("postStart hook failed; killing the container", "pod", podRef(pod), "container", c.Name, "containerID", id, "err", err)
	// Not the message: it may hold secrets (the kubelet's reason too).
	r.event(pod, v1.EventTypeWarning, eventFailedPostStartHook, "PostStartHook failed")
	herr := fmt.Errorf("container %q of pod %s: %w", c.Name, podRef(pod),
		&runtime.StartError{Container: c.Name, Reason: runtime.ErrPostStartHook, Message: err.Error(), Err: err})
	if kerr := r.killOne(ctx, t, preStopOf(c), gracePeriodOf(pod)); kerr != nil {
		return errors.Join(herr, fmt.Errorf("kill after failed postStart: %w", kerr))
	}
	return herr
}

// killOne runs the preStop handler h (if any, and if the grace period is
// above zero) then stops the container with what is left of the grace
// period.
func (r *Runtime) killOne(ctx context.Context, t hookTarget, h *v1.LifecycleHandler, grace int64) error {
	return r.stopContainer(ctx, t.id, r.preStop(ctx, t, h, grace))
}

// preStop runs h within the grace period and returns what is left of it:
// the grace period minus the whole seconds the hook took, on Options.Clock
// (stopContainer floors it at MinimumGracePeriod).
func (r *Runtime) preStop(ctx context.Context, t hookTarget, h *v1.LifecycleHandler, grace int64) int64 {
	if h == nil || grace <= 0 {
		return grace
	}
	start := r.opts.Clock.Now()
	hctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- r.runHandler(hctx, t, h, graceDuration(grace)) }()
	timer := r.opts.Clock.NewTimer(graceDuration(grace))
	defer timer.Stop()
	var err error
	select {
	case err = <-done:
	case <-timer.C():
		r.log.V(2).Info("preStop hook not completed within the grace period; cancelled", "pod", podRef(t.pod), "container", t.name, "gracePeriod", grace)
		cancel()
		<-done
	case <-ctx.Done():
		cancel()
		err = <-done
	}
	if err != nil {
		r.log.Info("preStop hook failed", "pod", podRef(t.pod), "container", t.name, "containerID", t.id, "err", err)
		r.event(t.pod, v1.EventTypeWarning, eventFailedPreStopHook, "PreStopHook failed")
	}
	return grace - int64(r.opts.Clock.Since(start)/time.Second)
}

// containerTarget finds a container by ID for KillContainer: its pod
// (from labels), sandbox and recorded preStop handler. ok is false when
// the container cannot be listed.
func (r *Runtime) containerTarget(ctx context.Context, id string) (hookTarget, *v1.LifecycleHandler, bool) {
	cs, err := r.listContainers(ctx, &runtimeapi.ContainerFilter{Id: id})
	if err != nil || len(cs) != 1 {
		return hookTarget{}, nil, false
	}
	c := cs[0]
	pid := identityFromLabels(c.GetLabels())
	t := hookTarget{pod: eventObject(nil, pid), name: c.GetLabels()[LabelContainerName], id: c.GetId(), sandboxID: c.GetPodSandboxId()}
	if t.name == "" {
		t.name = c.GetMetadata().GetName()
	}
	return t, preStopFromAnnotations(c.GetAnnotations()), true
}
