package apitest

import (
	"io"
	"net"
	"net/url"
	"sync"
	"testing"

	"k8s.io/client-go/rest"
)

// Proxy is a TCP forwarder in front of the API server that a test can take
// down and bring back, so that a client sees the API server go away (every
// connection dropped, new ones refused) and return on the same address,
// without touching the control plane other tests share.
type Proxy struct {
	target string

	mu    sync.Mutex
	addr  string
	ln    net.Listener
	conns map[net.Conn]bool
	wg    sync.WaitGroup
}

// NewProxy starts a Proxy to the host of cfg and stops it when the test
// ends.
func NewProxy(t testing.TB, cfg *rest.Config) *Proxy {
	t.Helper()
	u, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatalf("apitest: proxy: %v", err)
	}
	p := &Proxy{target: u.Host, addr: "127.0.0.1:0", conns: map[net.Conn]bool{}}
	if err := p.Up(); err != nil {
		t.Fatalf("apitest: proxy: %v", err)
	}
	t.Cleanup(func() {
		p.Down()
		p.wg.Wait()
	})
	return p
}

// Config returns a copy of cfg that talks to the API server through the
// proxy.
func (p *Proxy) Config(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	p.mu.Lock()
	c.Host = "https://" + p.addr
	p.mu.Unlock()
	return c
}

// Down closes the listener and every open connection.
func (p *Proxy) Down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		_ = p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		_ = c.Close()
	}
	clear(p.conns)
}

// Up listens again, on the same address as before.
func (p *Proxy) Up() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		return nil
	}
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		return err
	}
	p.ln, p.addr = ln, ln.Addr().String()
	p.wg.Add(1)
	go p.accept(ln)
	return nil
}

func (p *Proxy) accept(ln net.Listener) {
	defer p.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		p.mu.Lock()
		if p.ln != ln { // went down meanwhile
			p.mu.Unlock()
			_ = c.Close()
			_ = up.Close()
			continue
		}
		p.conns[c], p.conns[up] = true, true
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(c, up)
		go p.pipe(up, c)
	}
}

func (p *Proxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	// The copy ends when either side closes (or Down closes both); either
	// way the pair is done.
	_, _ = io.Copy(dst, src)
	_ = dst.Close()
	_ = src.Close()
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
}
