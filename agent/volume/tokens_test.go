package volume

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
)

// tokenServer answers TokenRequests of the fake clientset with numbered
// tokens valid for the requested time, recording
// each request.
type tokenServer struct {
	clk  *clocktesting.FakeClock
	n    int
	fail error
	reqs []*authv1.TokenRequest
}

func (s *tokenServer) install(c *fake.Clientset) {
	c.PrependReactor("create", "serviceaccounts", func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
		ca, ok := a.(k8stesting.CreateAction)
		if !ok || a.GetSubresource() != "token" {
			return false, nil, nil
		}
		tr := ca.GetObject().(*authv1.TokenRequest).DeepCopy()
		s.reqs = append(s.reqs, tr.DeepCopy())
		if s.fail != nil {
			return true, nil, s.fail
		}
		s.n++
		life := time.Duration(*tr.Spec.ExpirationSeconds) * time.Second
		tr.Status = authv1.TokenRequestStatus{Token: fmt.Sprintf("token-%d", s.n), ExpirationTimestamp: metav1.NewTime(s.clk.Now().Add(life))}
		return true, tr, nil
	})
}

func TestTokensRefreshAt80PercentAnd24h(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC))
	client := fake.NewClientset()
	srv := &tokenServer{clk: clk}
	srv.install(client)
	tokens := NewTokens(client, clk)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "u1"}, Spec: v1.PodSpec{ServiceAccountName: "sa"}}
	get := func() string {
		t.Helper()
		tok, err := tokens.Token(context.Background(), pod, "api", 1000)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	if got := get(); got != "token-1" {
		t.Fatalf("first = %q", got)
	}
	r := srv.reqs[0]
	if r.Spec.BoundObjectRef == nil || r.Spec.BoundObjectRef.Kind != "Pod" || r.Spec.BoundObjectRef.UID != "u1" || r.Spec.BoundObjectRef.Name != "p" ||
		len(r.Spec.Audiences) != 1 || r.Spec.Audiences[0] != "api" || *r.Spec.ExpirationSeconds != 1000 {
		t.Errorf("request %+v", r.Spec)
	}
	clk.Step(799 * time.Second)
	if got := get(); got != "token-1" {
		t.Errorf("at 79.9%% = %q, want the cached token", got)
	}
	clk.Step(time.Second)
	if got := get(); got != "token-2" {
		t.Errorf("at 80%% = %q, want a new token", got)
	}

	// A token valid for two days (80 %: 38.4 h) is refreshed after 24 h.
	long := func() string {
		t.Helper()
		tok, err := tokens.Token(context.Background(), pod, "api", 2*24*3600)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	if got := long(); got != "token-3" {
		t.Fatalf("two-day token = %q", got)
	}
	clk.Step(24*time.Hour - time.Second)
	if got := long(); got != "token-3" {
		t.Errorf("at 24h-1s = %q, want the cached token", got)
	}
	clk.Step(time.Second)
	if got := long(); got != "token-4" {
		t.Errorf("at 24h = %q, want a new token", got)
	}
	tokens.Forget("u1")
	if got := long(); got != "token-5" {
		t.Errorf("after Forget = %q, want a new token", got)
	}
}

func TestTokensFailureKeepsValidToken(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC))
	client := fake.NewClientset()
	srv := &tokenServer{clk: clk}
	srv.install(client)
	tokens := NewTokens(client, clk)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "u1"}}
	if tok, err := tokens.Token(context.Background(), pod, "", 0); err != nil || tok != "token-1" {
		t.Fatalf("first: %q, %v", tok, err)
	}
	if got := srv.reqs[0]; got.Spec.Audiences != nil || *got.Spec.ExpirationSeconds != 3600 {
		t.Errorf("defaults: %+v", got.Spec)
	}
	srv.fail = errors.New("forbidden")
	clk.Step(3000 * time.Second) // due, not expired
	tok, err := tokens.Token(context.Background(), pod, "", 0)
	if err == nil || tok != "token-1" {
		t.Errorf("refresh failed before expiry: %q, %v; want the old token and the error", tok, err)
	}
	clk.Step(600 * time.Second) // expired
	if tok, err := tokens.Token(context.Background(), pod, "", 0); err == nil || tok != "" {
		t.Errorf("refresh failed after expiry: %q, %v", tok, err)
	}
}
