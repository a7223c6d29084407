package fakecri

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/cri-streaming/pkg/streaming"
	remotecommandserver "k8s.io/cri-streaming/pkg/streaming/remotecommand"
	utilexec "k8s.io/utils/exec"
)

// The streaming calls (Exec, Attach, PortForward) return URLs of a
// streaming server (k8s.io/cri-streaming, the one containerd and CRI-O
// embed) that the Server starts on 127.0.0.1 at the first such call and
// stops with Stop:
//
//   - exec runs the command as ExecSync does (SetExec's function, or the
//     built-in words), its output on the streams, its exit code as the
//     session's;
//   - attach waits until the container stops (a fake container writes
//     nothing);
//   - port-forward connects to the port on 127.0.0.1 (pods without a pod
//     network share the node's).

// streamer is the Server's streaming server, started once.
type streamer struct {
	once sync.Once
	err  error
	srv  streaming.Server
	http *http.Server
	done chan struct{}
}

// streamServer starts the streaming server if it is not running.
func (s *Server) streamServer() (streaming.Server, error) {
	st := &s.stream
	st.once.Do(func() {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			st.err = fmt.Errorf("fakecri: streaming server: %w", err)
			return
		}
		cfg := streaming.DefaultConfig
		cfg.Addr = ln.Addr().String()
		cfg.BaseURL = &url.URL{Scheme: "http", Host: ln.Addr().String()}
		if st.srv, err = streaming.NewServer(cfg, streamRuntime{s}); err != nil {
			_ = ln.Close()
			st.err = fmt.Errorf("fakecri: streaming server: %w", err)
			return
		}
		st.http = &http.Server{Handler: st.srv}
		st.done = make(chan struct{})
		go func() {
			defer close(st.done)
			_ = st.http.Serve(ln)
		}()
	})
	return st.srv, st.err
}

// stopStreaming stops the streaming server, if it ran, and its sessions.
func (s *Server) stopStreaming() {
	st := &s.stream
	st.once.Do(func() { st.err = errors.New("fakecri: server stopped") })
	if st.http != nil {
		_ = st.http.Close()
		<-st.done
	}
}

func (r *runtimeService) Exec(_ context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	if _, err := r.s.runningContainer(req.GetContainerId()); err != nil {
		return nil, err
	}
	srv, err := r.s.streamServer()
	if err != nil {
		return nil, status.Error(codes.Unavailable, err.Error())
	}
	return srv.GetExec(req)
}

func (r *runtimeService) Attach(_ context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	if _, err := r.s.runningContainer(req.GetContainerId()); err != nil {
		return nil, err
	}
	srv, err := r.s.streamServer()
	if err != nil {
		return nil, status.Error(codes.Unavailable, err.Error())
	}
	return srv.GetAttach(req)
}

func (r *runtimeService) PortForward(_ context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	r.s.mu.Lock()
	_, ok := r.s.sandboxes[req.GetPodSandboxId()]
	r.s.mu.Unlock()
	if !ok {
		return nil, notFound("sandbox", req.GetPodSandboxId())
	}
	srv, err := r.s.streamServer()
	if err != nil {
		return nil, status.Error(codes.Unavailable, err.Error())
	}
	return srv.GetPortForward(req)
}

// runningContainer checks that the container exists and runs.
func (s *Server) runningContainer(id string) (*container, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.containers[id]
	if !ok {
		return nil, notFound("container", id)
	}
	if c.state != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return nil, status.Errorf(codes.FailedPrecondition, "container %q is not running", id)
	}
	return c, nil
}

// streamRuntime runs the sessions of the streaming server.
type streamRuntime struct{ s *Server }

func (r streamRuntime) Exec(ctx context.Context, id string, cmd []string, _ io.Reader, out, errw io.WriteCloser, _ bool, _ <-chan remotecommandserver.TerminalSize) error {
	resp, err := (&runtimeService{s: r.s}).ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: cmd})
	if err != nil {
		return err
	}
	if out != nil {
		_, _ = out.Write(resp.GetStdout())
	}
	if errw != nil {
		_, _ = errw.Write(resp.GetStderr())
	} else if out != nil {
		_, _ = out.Write(resp.GetStderr())
	}
	if code := resp.GetExitCode(); code != 0 {
		return utilexec.CodeExitError{Err: fmt.Errorf("command %q exited with %d", cmd, code), Code: int(code)}
	}
	return nil
}

func (r streamRuntime) Attach(ctx context.Context, id string, _ io.Reader, _, _ io.WriteCloser, _ bool, _ <-chan remotecommandserver.TerminalSize) error {
	for {
		if _, err := r.s.runningContainer(id); err != nil {
			return nil
		}
		if err := r.s.wait(ctx, 500*time.Millisecond); err != nil {
			return nil
		}
	}
}

func (r streamRuntime) PortForward(ctx context.Context, _ string, port int32, stream io.ReadWriteCloser) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(int(port))))
	if err != nil {
		return fmt.Errorf("port-forward to port %d: %w", port, err)
	}
	defer func() { _ = c.Close() }()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(c, stream); done <- struct{}{} }()
	go func() { _, _ = io.Copy(stream, c); done <- struct{}{} }()
	select {
	case <-done:
	case <-ctx.Done():
	}
	_ = c.Close()
	_ = stream.Close()
	return nil
}
