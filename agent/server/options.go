package server

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/utils/clock"
)

// Defaults of Options, the kubelet's.
const (
	DefaultPort                  = 10250
	DefaultStreamingIdleTimeout  = 4 * time.Hour
	DefaultRuntimeRequestTimeout = 2 * time.Minute
)

// Options configure a Server. NodeName, Authenticator and Authorizer are
// required; every other field's zero value means its documented default.
type Options struct {
	// NodeName is the node's name: the name of the nodes resource the
	// Authorizer is asked about, and a name of the self-signed certificate.
	NodeName string

	// Address is the IP address to listen on. Default "0.0.0.0" (the
	// kubelet's --address).
	Address string
	// Port is the port to listen on. Default 10250 (the kubelet's --port);
	// negative: any free port (see Server.Port).
	Port int

	// CertFile and KeyFile are the serving certificate and key (PEM), the
	// kubelet's --tls-cert-file and --tls-private-key-file. Default: a
	// self-signed certificate for NodeName and Addresses, made in memory
	// at Listen, as the kubelet makes one.
	CertFile, KeyFile string
	// Addresses are the node's IPs and DNS names, for the self-signed
	// certificate. Default: none besides NodeName.
	Addresses []string

	// Authenticator authenticates every request; one it cannot
	// authenticate gets 401. NewAuthenticator builds the kubelet's
	// (client certificates, bearer tokens through TokenReview, anonymous
	// when enabled). Required.
	Authenticator authenticator.Request
	// Authorizer (any authorizer.Authorizer; only Authorize is called)
	// authorizes every authenticated request, asked about the
	// nodes resource (Name NodeName) with the subresource of the path (see
	// RequestAttributes); a refusal is 403. NewAuthorizer builds the
	// kubelet's (SubjectAccessReview, or AlwaysAllow). Required.
	Authorizer authorizer.UnconditionalAuthorizer

	// Pods lists the pods the agent runs. Default nil: no pod is known,
	// so every per-pod endpoint answers 404.
	Pods PodLister
	// Logs, Streaming, Commands and Stats are the runtime's parts (see
	// their interfaces). Default nil: their endpoints answer 501.
	Logs      ContainerLogs
	Streaming Streaming
	Commands  CommandRunner
	Stats     PodStats
	// NodeStats gives the node's own figures. Default: read from /proc
	// (ProcNodeStats).
	NodeStats NodeStats
	// Metrics, when set, is served at /metrics (the agent's lifecycle
	// metrics, promhttp.HandlerFor its registry). Default nil: 404.
	Metrics http.Handler
	// Healthy, when set, is asked by /healthz: an error makes it 500 with
	// the error. Default: always healthy.
	Healthy func() error

	// StreamingIdleTimeout closes an exec, attach or port-forward stream
	// idle (no byte either way) this long. Default 4h (the kubelet's
	// --streaming-connection-idle-timeout).
	StreamingIdleTimeout time.Duration
	// RuntimeRequestTimeout bounds every runtime call but followed logs
	// and streams. Default 2m (the kubelet's --runtime-request-timeout).
	RuntimeRequestTimeout time.Duration

	// Logger: errors, V(2) for served streams, V(4) for every request.
	// The zero value discards.
	Logger logr.Logger
	// Clock gives the time of stats and "since" log queries. Default: the
	// real clock.
	Clock clock.Clock
}

func (o Options) withDefaults() Options {
	if o.Address == "" {
		o.Address = "0.0.0.0"
	}
	if o.Port == 0 {
		o.Port = DefaultPort
	}
	if o.Port < 0 {
		o.Port = 0
	}
	if o.StreamingIdleTimeout == 0 {
		o.StreamingIdleTimeout = DefaultStreamingIdleTimeout
	}
	if o.RuntimeRequestTimeout == 0 {
		o.RuntimeRequestTimeout = DefaultRuntimeRequestTimeout
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.NodeStats == nil {
		o.NodeStats = ProcNodeStats{Clock: o.Clock}
	}
	return o
}

func (o Options) validate() error {
	var errs []error
	if o.NodeName == "" {
		errs = append(errs, errors.New("NodeName is required"))
	} else if msgs := validation.IsDNS1123Subdomain(o.NodeName); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("NodeName %q: %v", o.NodeName, msgs))
	}
	if o.Authenticator == nil {
		errs = append(errs, errors.New("Authenticator is required (see NewAuthenticator)"))
	}
	if o.Authorizer == nil {
		errs = append(errs, errors.New("Authorizer is required (see NewAuthorizer)"))
	}
	if o.Port > 65535 {
		errs = append(errs, fmt.Errorf("Port %d is not a port", o.Port))
	}
	if (o.CertFile == "") != (o.KeyFile == "") {
		errs = append(errs, errors.New("CertFile and KeyFile go together"))
	}
	if o.StreamingIdleTimeout < 0 || o.RuntimeRequestTimeout < 0 {
		errs = append(errs, errors.New("StreamingIdleTimeout and RuntimeRequestTimeout must not be negative"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("server: %w", err)
	}
	return nil
}
