package server

import (
	"errors"
	"fmt"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	authenticationv1 "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationv1 "k8s.io/client-go/kubernetes/typed/authorization/v1"
)

// The kubelet's defaults for delegated authentication and authorization.
const (
	DefaultTokenCacheTTL        = 2 * time.Minute
	DefaultAuthorizedCacheTTL   = 5 * time.Minute
	DefaultUnauthorizedCacheTTL = 30 * time.Second
)

// webhookRetryBackoff is the API server library's default retry of the
// TokenReview and SubjectAccessReview calls.
func webhookRetryBackoff() *wait.Backoff {
	return &wait.Backoff{Duration: 500 * time.Millisecond, Factor: 1.5, Jitter: 0.2, Steps: 5}
}

// AuthenticationOptions configure NewAuthenticator, as the kubelet's
// --client-ca-file, --authentication-token-webhook and --anonymous-auth.
type AuthenticationOptions struct {
	// ClientCAFile is a PEM bundle: a client certificate it verifies
	// authenticates as its CN, with its O as groups. Default "": no client
	// certificates.
	ClientCAFile string
	// TokenReviews, when set, authenticates bearer tokens through the API
	// server's TokenReview (the kubelet's token webhook). Default nil:
	// bearer tokens are ignored.
	TokenReviews authenticationv1.AuthenticationV1Interface
	// TokenCacheTTL keeps a TokenReview's answer. Default 2m.
	TokenCacheTTL time.Duration
	// Anonymous lets a request without credentials through as
	// system:anonymous (then subject to authorization). Default false: 401.
	Anonymous bool
}

// NewAuthenticator builds the kubelet's authenticator with the API
// server's delegating one (k8s.io/apiserver authenticatorfactory).
func NewAuthenticator(o AuthenticationOptions) (authenticator.Request, error) {
	cfg := authenticatorfactory.DelegatingAuthenticatorConfig{
		Anonymous:           &apiserver.AnonymousAuthConfig{Enabled: o.Anonymous},
		CacheTTL:            o.TokenCacheTTL,
		WebhookRetryBackoff: webhookRetryBackoff(),
	}
	if cfg.CacheTTL == 0 {
		cfg.CacheTTL = DefaultTokenCacheTTL
	}
	if o.ClientCAFile != "" {
		pem, err := os.ReadFile(o.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("client CA: %w", err)
		}
		ca, err := dynamiccertificates.NewStaticCAContent("client-ca-bundle::"+o.ClientCAFile, pem)
		if err != nil {
			return nil, fmt.Errorf("client CA %s: %w", o.ClientCAFile, err)
		}
		cfg.ClientCertificateCAContentProvider = ca
	}
	if o.TokenReviews != nil {
		cfg.TokenAccessReviewClient = o.TokenReviews
	}
	if o.ClientCAFile == "" && o.TokenReviews == nil && !o.Anonymous {
		return nil, errors.New("no authentication: give a client CA, a TokenReview client, or allow anonymous requests")
	}
	a, _, err := cfg.New()
	if err != nil {
		return nil, fmt.Errorf("authenticator: %w", err)
	}
	return a, nil
}

// AuthorizationMode is the kubelet's --authorization-mode.
type AuthorizationMode string

// The kubelet's authorization modes.
const (
	// AuthorizationModeWebhook asks the API server (SubjectAccessReview).
	AuthorizationModeWebhook AuthorizationMode = "Webhook"
	// AuthorizationModeAlwaysAllow lets every authenticated request in.
	AuthorizationModeAlwaysAllow AuthorizationMode = "AlwaysAllow"
)

// AuthorizationOptions configure NewAuthorizer.
type AuthorizationOptions struct {
	// Mode is Webhook (default) or AlwaysAllow.
	Mode AuthorizationMode
	// SubjectAccessReviews asks the API server. Required for Webhook.
	SubjectAccessReviews authorizationv1.AuthorizationV1Interface
	// AuthorizedCacheTTL and UnauthorizedCacheTTL keep the answers.
	// Default 5m and 30s.
	AuthorizedCacheTTL, UnauthorizedCacheTTL time.Duration
}

// NewAuthorizer builds the kubelet's authorizer with the API server's
// delegating one (k8s.io/apiserver authorizerfactory).
func NewAuthorizer(o AuthorizationOptions) (authorizer.Authorizer, error) {
	switch o.Mode {
	case AuthorizationModeAlwaysAllow:
		return authorizerfactory.NewAlwaysAllowAuthorizer(), nil
	case AuthorizationModeWebhook, "":
	default:
		return nil, fmt.Errorf("authorization mode %q: want Webhook or AlwaysAllow", o.Mode)
	}
	if o.SubjectAccessReviews == nil {
		return nil, errors.New("authorization mode Webhook needs a SubjectAccessReview client")
	}
	cfg := authorizerfactory.DelegatingAuthorizerConfig{
		SubjectAccessReviewClient: o.SubjectAccessReviews,
		AllowCacheTTL:             o.AuthorizedCacheTTL,
		DenyCacheTTL:              o.UnauthorizedCacheTTL,
		WebhookRetryBackoff:       webhookRetryBackoff(),
	}
	if cfg.AllowCacheTTL == 0 {
		cfg.AllowCacheTTL = DefaultAuthorizedCacheTTL
	}
	if cfg.DenyCacheTTL == 0 {
		cfg.DenyCacheTTL = DefaultUnauthorizedCacheTTL
	}
	a, err := cfg.New()
	if err != nil {
		return nil, fmt.Errorf("authorizer: %w", err)
	}
	return a, nil
}
