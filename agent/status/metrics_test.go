package status

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
)

func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	a, b := testPod("a", "uid-a"), testPod("b", "uid-b")
	h := newHarness(t, func(o *Options) { o.Registerer = reg; o.MetricsNamespace = "podlife" }, a, b)
	h.react("patch", "pods", func(act k8stesting.Action) (bool, runtime.Object, error) {
		if act.(k8stesting.PatchAction).GetName() == "b" {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "b", errors.New("no"))
		}
		return false, nil, nil
	})
	h.run()
	_ = h.m.SetPodStatus(context.Background(), a, nil, running("x"))
	_ = h.m.SetPodStatus(context.Background(), b, nil, running("x"))
	h.settle()
	want := `
# HELP podlife_status_pods_dropped_total Pods whose status is no longer written because their API object is gone, by reason: not_found, forbidden (the Node authorizer's answer for a pod gone or bound elsewhere) or uid_changed.
# TYPE podlife_status_pods_dropped_total counter
podlife_status_pods_dropped_total{reason="forbidden"} 1
podlife_status_pods_dropped_total{reason="not_found"} 0
podlife_status_pods_dropped_total{reason="uid_changed"} 0
# HELP podlife_status_queue_length The number of pods whose status waits to be written: queued, held (a transient status) or backing off after an error.
# TYPE podlife_status_queue_length gauge
podlife_status_queue_length 0
# HELP podlife_status_writes_total Pod status writes by result: written (one PATCH), unchanged (the API server had it, no request), no_mirror (a static pod without mirror pod yet), gone (the pod is gone, dropped) or error (retried after a back-off).
# TYPE podlife_status_writes_total counter
podlife_status_writes_total{result="error"} 0
podlife_status_writes_total{result="gone"} 1
podlife_status_writes_total{result="no_mirror"} 0
podlife_status_writes_total{result="unchanged"} 0
podlife_status_writes_total{result="written"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"podlife_status_pods_dropped_total", "podlife_status_queue_length", "podlife_status_writes_total"); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(reg, "podlife_status_write_duration_seconds"); n != 1 {
		t.Fatalf("latency histogram series = %d", n)
	}
	problems, err := promlint.NewWithMetricFamilies(mustGather(t, reg)).Lint()
	if err != nil || len(problems) > 0 {
		t.Fatalf("promlint: %v %v", problems, err)
	}
	// A second Manager on the same registry and namespace fails cleanly.
	if _, err := New(Options{Client: h.client, PodStates: h.states, Registerer: reg, MetricsNamespace: "podlife"}); !errors.As(err, new(prometheus.AlreadyRegisteredError)) {
		t.Fatalf("second New = %v, want AlreadyRegisteredError", err)
	}
}

func mustGather(t *testing.T, reg *prometheus.Registry) []*dto.MetricFamily {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	return mfs
}

func TestInstrumentConfigCountsByVerbResourceCode(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodPatch {
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403}`))
			return
		}
		_, _ = w.Write([]byte(`{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a"}}`))
	}))
	defer srv.Close()
	reg := prometheus.NewRegistry()
	cfg, err := InstrumentConfig(&rest.Config{Host: srv.URL}, reg, "")
	if err != nil {
		t.Fatal(err)
	}
	client := kubernetes.NewForConfigOrDie(cfg)
	ctx := context.Background()
	_, _ = client.CoreV1().Pods("ns").Get(ctx, "a", metav1.GetOptions{})
	_, _ = client.CoreV1().Pods("ns").Patch(ctx, "a", "application/strategic-merge-patch+json", []byte(`{}`), metav1.PatchOptions{}, "status")
	want := `
# HELP kubelet_api_requests_total Requests to the API server by Kubernetes verb, resource (with subresource) and HTTP status code ("error" when none came).
# TYPE kubelet_api_requests_total counter
kubelet_api_requests_total{code="200",resource="pods",verb="get"} 1
kubelet_api_requests_total{code="403",resource="pods/status",verb="patch"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "kubelet_api_requests_total"); err != nil {
		t.Fatal(err)
	}
	if _, err := InstrumentConfig(&rest.Config{Host: srv.URL}, reg, ""); !errors.As(err, new(prometheus.AlreadyRegisteredError)) {
		t.Fatalf("second InstrumentConfig = %v, want AlreadyRegisteredError", err)
	}
}

func TestRequestVerb(t *testing.T) {
	for _, tc := range []struct{ method, url, verb, resource string }{
		{"GET", "/api/v1/namespaces/ns/pods/a", "get", "pods"},
		{"GET", "/api/v1/pods?fieldSelector=spec.nodeName%3Dn", "list", "pods"},
		{"GET", "/api/v1/pods?watch=true", "watch", "pods"},
		{"PATCH", "/api/v1/namespaces/ns/pods/a/status", "patch", "pods/status"},
		{"DELETE", "/api/v1/namespaces/ns/pods/a", "delete", "pods"},
		{"DELETE", "/api/v1/namespaces/ns/pods", "deletecollection", "pods"},
		{"POST", "/api/v1/namespaces/ns/events", "create", "events"},
		{"PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n", "update", "leases"},
		{"GET", "/api/v1/nodes/n", "get", "nodes"},
		{"PATCH", "/api/v1/nodes/n/status", "patch", "nodes/status"},
		{"GET", "/api/v1/namespaces/ns", "get", "namespaces"},
		{"GET", "/healthz", "get", ""},
	} {
		req := httptest.NewRequest(tc.method, tc.url, nil)
		verb, resource := RequestVerb(req)
		if verb != tc.verb || resource != tc.resource {
			t.Errorf("%s %s = (%q, %q), want (%q, %q)", tc.method, tc.url, verb, resource, tc.verb, tc.resource)
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
		want string
	}{
		{"no client", Options{PodStates: &podStates{}}, "Client is required"},
		{"no pod states", Options{Client: newHarness(t, nil).client}, "PodStates is required"},
		{"negative workers", Options{Client: newHarness(t, nil).client, PodStates: &podStates{}, Workers: -1}, "Workers -1 is negative"},
		{"bad back-off", Options{Client: newHarness(t, nil).client, PodStates: &podStates{}, BackoffBase: 2e9, BackoffMax: 1e9}, "BackoffBase"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := New(tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New = %v, want an error with %q", err, tc.want)
			}
		})
	}
}
