package server

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"time"
)

// idleHijacker hands the stream proxy a connection that closes after
// timeout without a byte either way, or when ctx (the request's: it ends
// with the handler, and with the Server) is done.
type idleHijacker struct {
	http.ResponseWriter
	ctx     context.Context
	timeout time.Duration
}

func (h idleHijacker) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := http.NewResponseController(h.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	ic := &idleConn{Conn: c, timeout: h.timeout}
	ic.extend()
	context.AfterFunc(h.ctx, func() { _ = c.Close() })
	return ic, rw, nil
}

// Unwrap lets http.ResponseController reach the real writer.
func (h idleHijacker) Unwrap() http.ResponseWriter { return h.ResponseWriter }

// idleConn moves its deadline on with every byte read or written. Socket
// deadlines are wall-clock time, so this timer cannot take the Server's
// clock.
type idleConn struct {
	net.Conn
	timeout time.Duration
}

func (c *idleConn) extend() { _ = c.Conn.SetDeadline(time.Now().Add(c.timeout)) }

func (c *idleConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.extend()
	}
	return n, err
}

func (c *idleConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if n > 0 {
		c.extend()
	}
	return n, err
}
