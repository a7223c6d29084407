package status

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"
)

// InstrumentConfig returns a copy of cfg whose requests are counted in the
// counter <namespace>_api_requests_total{verb, resource, code}, registered
// into reg (namespace "" means DefaultMetricsNamespace). Apply it to the
// agent's whole client, so that the count covers the watch, the mirror pods
// and the node's own objects as well as the status writes:
//
//	cfg, err := status.InstrumentConfig(cfg, reg, "")
//	client, err := kubernetes.NewForConfig(cfg)
//
// verb is the Kubernetes verb (get, list, watch, create, update, patch,
// delete, deletecollection), resource the resource with its subresource
// ("pods/status"), code the HTTP status code or "error" when no response
// came. A request retried by client-go counts once per try.
func InstrumentConfig(cfg *rest.Config, reg prometheus.Registerer, namespace string) (*rest.Config, error) {
	if cfg == nil || reg == nil {
		return nil, fmt.Errorf("status: InstrumentConfig: a config and a Registerer are required")
	}
	if namespace == "" {
		namespace = DefaultMetricsNamespace
	}
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace,
		Name:      "api_requests_total",
		Help:      "Requests to the API server by Kubernetes verb, resource (with subresource) and HTTP status code (\"error\" when none came).",
	}, []string{"verb", "resource", "code"})
	if err := reg.Register(requests); err != nil {
		return nil, fmt.Errorf("status: register api_requests_total into namespace %q: %w", namespace, err)
	}
	out := rest.CopyConfig(cfg)
	out.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return countingTransport{next: rt, requests: requests}
	})
	return out, nil
}

type countingTransport struct {
	next     http.RoundTripper
	requests *prometheus.CounterVec
}

func (t countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	code := "error"
	if err == nil {
		code = strconv.Itoa(resp.StatusCode)
	}
	verb, resource := RequestVerb(req)
	t.requests.WithLabelValues(verb, resource, code).Inc()
	return resp, err
}

// RequestVerb derives the Kubernetes verb (get, list, watch, create,
// update, patch, delete, deletecollection) and resource ("pods",
// "pods/status", "leases", ...) of a request from its method and path
// (/api/v1/namespaces/NS/pods/NAME/status, /apis/GROUP/VERSION/nodes, ...),
// as api_requests_total labels them. A path outside the API gives the
// lower-case method and "".
func RequestVerb(req *http.Request) (verb, resource string) {
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return strings.ToLower(req.Method), ""
	}
	if len(parts) >= 3 && parts[0] == "namespaces" {
		parts = parts[2:] // namespaced resource
	}
	if len(parts) == 0 {
		return strings.ToLower(req.Method), ""
	}
	resource = parts[0]
	named := len(parts) >= 2
	if len(parts) >= 3 {
		resource += "/" + parts[2]
	}
	switch req.Method {
	case http.MethodGet, http.MethodHead:
		switch {
		case req.URL.Query().Get("watch") == "true" || req.URL.Query().Get("watch") == "1":
			verb = "watch"
		case named:
			verb = "get"
		default:
			verb = "list"
		}
	case http.MethodPost:
		verb = "create"
	case http.MethodPut:
		verb = "update"
	case http.MethodPatch:
		verb = "patch"
	case http.MethodDelete:
		verb = "delete"
		if !named {
			verb = "deletecollection"
		}
	default:
		verb = strings.ToLower(req.Method)
	}
	return verb, resource
}
