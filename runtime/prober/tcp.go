package prober

import (
	"context"
	"time"
)

// probeTCP succeeds when a TCP connection to host:port opens within the
// timeout.
func (m *Manager) probeTCP(ctx context.Context, host string, port int, timeout time.Duration) (Result, string) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := m.opts.Dialer(ctx, "tcp", hostPort(host, port))
	if err != nil {
		return Failure, err.Error()
	}
	_ = conn.Close()
	return Success, ""
}
