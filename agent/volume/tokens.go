package volume

import (
	"context"
	"fmt"
	"sync"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
)

// Token lifetimes, the kubelet's.
const (
	// DefaultTokenExpirationSeconds is a projection's expirationSeconds
	// when it sets none (the API's default).
	DefaultTokenExpirationSeconds = int64(3600)
	// tokenMaxAge: a token older than this is refreshed, however long it
	// is valid (the API server may extend a token's life to a year).
	tokenMaxAge = 24 * time.Hour
	// tokenRefreshPercent: a token is refreshed once this share of its
	// life has passed.
	tokenRefreshPercent = 80
)

// tokenKey names one cached token.
type tokenKey struct {
	namespace, serviceAccount, audience string
	expirationSeconds                   int64
	podUID                              types.UID
}

// Tokens gets service-account tokens bound to pods through the
// TokenRequest API and caches them until they need a refresh: once 80 %
// of their life has passed, or they are 24 h old (the kubelet's token
// manager). It is safe for concurrent use and starts no goroutine.
type Tokens struct {
	client kubernetes.Interface
	clock  clock.Clock

	mu    sync.Mutex
	cache map[tokenKey]*authv1.TokenRequest
}

// NewTokens returns a token cache over client (a node's: the Node
// authorizer lets a node request tokens only for pods bound to it).
func NewTokens(client kubernetes.Interface, clk clock.Clock) *Tokens {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Tokens{client: client, clock: clk, cache: map[tokenKey]*authv1.TokenRequest{}}
}

// Token is a token of pod's service account for audience ("" the API
// server's own) valid for expirationSeconds (0: one hour), bound to the
// pod: from the cache when it needs no refresh, else a new one. When a
// refresh fails and the cached token has not expired yet, the cached
// token is returned together with the error.
func (t *Tokens) Token(ctx context.Context, pod *v1.Pod, audience string, expirationSeconds int64) (string, error) {
	if expirationSeconds == 0 {
		expirationSeconds = DefaultTokenExpirationSeconds
	}
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	key := tokenKey{pod.Namespace, sa, audience, expirationSeconds, pod.UID}
	t.mu.Lock()
	cached := t.cache[key]
	t.mu.Unlock()
	now := t.clock.Now()
	if cached != nil && !requiresRefresh(cached, now) {
		return cached.Status.Token, nil
	}
	req := &authv1.TokenRequest{Spec: authv1.TokenRequestSpec{
		ExpirationSeconds: &expirationSeconds,
		BoundObjectRef:    &authv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
	}}
	if audience != "" {
		req.Spec.Audiences = []string{audience}
	}
	if t.client == nil {
		return "", fmt.Errorf("token for service account %s/%s: no API server", pod.Namespace, sa)
	}
	tr, err := t.client.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, sa, req, metav1.CreateOptions{})
	if err != nil {
		err = fmt.Errorf("failed to fetch token: %w", err)
		if cached != nil && now.Before(cached.Status.ExpirationTimestamp.Time) {
			return cached.Status.Token, err
		}
		return "", err
	}
	if tr.Spec.ExpirationSeconds == nil {
		tr.Spec.ExpirationSeconds = &expirationSeconds
	}
	t.mu.Lock()
	t.cache[key] = tr
	t.mu.Unlock()
	return tr.Status.Token, nil
}

// requiresRefresh reports whether a token is due: 24 h after it was
// issued, or within the last 20 % of its life.
func requiresRefresh(tr *authv1.TokenRequest, now time.Time) bool {
	exp := tr.Status.ExpirationTimestamp.Time
	ttl := time.Duration(*tr.Spec.ExpirationSeconds) * time.Second
	iat := exp.Add(-ttl)
	if !now.Before(iat.Add(tokenMaxAge)) {
		return true
	}
	return !now.Before(iat.Add(ttl * tokenRefreshPercent / 100))
}

// Forget drops the cached tokens of a pod.
func (t *Tokens) Forget(uid types.UID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k := range t.cache {
		if k.podUID == uid {
			delete(t.cache, k)
		}
	}
}
