package prober

import (
	"context"
	"fmt"
	"net"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// probeGRPC runs a grpc probe: grpc.health.v1.Health/Check of service on
// host:port, without TLS; SERVING is success.
func (m *Manager) probeGRPC(ctx context.Context, host string, port int, service string, timeout time.Duration) (Result, string) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	addr := hostPort(host, port)
	conn, err := grpc.NewClient("passthrough:///"+addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUserAgent(m.opts.UserAgent),
		grpc.WithContextDialer(func(ctx context.Context, a string) (net.Conn, error) { return m.opts.Dialer(ctx, "tcp", a) }),
	)
	if err != nil {
		return Unknown, fmt.Sprintf("grpc client for %s: %v", addr, err)
	}
	defer func() { _ = conn.Close() }()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		switch status.Code(err) {
		case codes.Unimplemented:
			return Failure, fmt.Sprintf("%s does not implement the grpc health protocol (grpc.health.v1.Health)", addr)
		case codes.DeadlineExceeded:
			return Failure, fmt.Sprintf("grpc health check of %s: timeout after %s", addr, timeout)
		}
		return Failure, fmt.Sprintf("grpc health check of %s: %v", addr, err)
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return Failure, fmt.Sprintf("service unhealthy (responded with %q)", resp.GetStatus())
	}
	return Success, "SERVING"
}
