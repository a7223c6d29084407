package cri

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podlife/podlife/runtime"
)

// Runtime implements runtime.Runtime over a CRI endpoint. It is safe for
// concurrent use; calls for different pods run in parallel.
type Runtime struct {
	opts Options
	log  logr.Logger
	// conn is the Runtime's own connection; nil with Options.Conn.
	conn *grpc.ClientConn
	// closed is set by Close when the calls go through Options.Conn.
	closed  *atomic.Bool
	rs      runtimeapi.RuntimeServiceClient
	is      runtimeapi.ImageServiceClient
	backOff *backOff
	// pullBackOff is the image pull back-off, per pod and image (image.go).
	pullBackOff *backOff
	// janitor deletes the folders of removed pods (trash.go).
	janitor *janitor
	// termMsgs keeps the termination messages of exited containers
	// (termination.go).
	termMsgs termMessages
	// recorder receives events (SetRecorder); nil: none.
	recorder atomic.Pointer[recorderBox]
	// startedGate is the startup-probe gate of sidecars; nil: none.
	startedGate atomic.Pointer[startedFunc]
	// provider gives containers their cluster-made options
	// (SetContainerOptionsProvider); nil: none.
	provider atomic.Pointer[providerBox]

	mu          sync.Mutex
	runtimeName string // from Version, once known
}

var _ runtime.Runtime = (*Runtime)(nil)

// New validates opts and returns a Runtime. It does not connect yet: the
// connection is made by the first call, and remade after the runtime
// restarts. A malformed endpoint is an error wrapping runtime.ErrInvalidArgument;
// a socket that does not exist shows as runtime.ErrUnavailable on each call.
func New(opts Options) (*Runtime, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	var memErr error
	if opts.NodeMemoryCapacity == 0 {
		opts.NodeMemoryCapacity, memErr = readMemTotal(opts.meminfo)
	}
	ops := newOperationMetrics(opts.Registerer, opts.MetricsNamespace, opts.Clock)
	var cc grpc.ClientConnInterface
	var conn *grpc.ClientConn
	closed := new(atomic.Bool)
	if opts.Conn != nil {
		cc = callerConn{cc: opts.Conn, ops: ops, closed: closed, defaults: []grpc.CallOption{
			grpc.MaxCallRecvMsgSize(opts.MaxMessageSize), grpc.MaxCallSendMsgSize(opts.MaxMessageSize),
		}}
	} else {
		var err error
		if conn, err = dial(opts, ops); err != nil {
			return nil, err
		}
		cc = conn
	}
	if ops != nil {
		if err := ops.register(opts.Registerer); err != nil {
			if conn != nil {
				_ = conn.Close()
			}
			return nil, err
		}
	}
	r := &Runtime{
		opts:        opts,
		log:         opts.Logger.WithName("cri"),
		conn:        conn,
		closed:      closed,
		rs:          runtimeapi.NewRuntimeServiceClient(cc),
		is:          runtimeapi.NewImageServiceClient(cc),
		backOff:     newBackOff(opts.Clock, opts.BackOffInitial, opts.BackOffMax),
		pullBackOff: newBackOff(opts.Clock, opts.ImagePullBackOffInitial, opts.ImagePullBackOffMax),
		janitor:     newJanitor(opts.VolumeRoot, opts.Logger.WithName("cri"), opts.Clock),
	}
	r.SetStarted(opts.Started)
	if memErr != nil {
		r.log.Info("node memory unknown: Burstable containers get OOM score adjustment 999", "err", memErr)
	}
	return r, nil
}

// Close closes the connection (not a caller's Options.Conn) and stops
// deleting the folders of removed pods (what is left of them is deleted by
// the next Runtime on the same VolumeRoot). Calls after Close fail.
func (r *Runtime) Close() error {
	r.janitor.close()
	if r.conn == nil {
		if r.closed.Swap(true) {
			return errors.New("cri: runtime already closed")
		}
		return nil
	}
	return r.conn.Close()
}

// dial makes the Runtime's gRPC connection to opts.Endpoint (or through
// opts.Dialer). It does not connect yet.
func dial(opts Options, ops *operationMetrics) (*grpc.ClientConn, error) {
	target := opts.Endpoint
	dialOpts := []grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(opts.MaxMessageSize), grpc.MaxCallSendMsgSize(opts.MaxMessageSize)),
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: opts.ReconnectMaxDelay},
			MinConnectTimeout: 5 * time.Second,
		}),
	}
	if ops != nil {
		dialOpts = append(dialOpts, grpc.WithChainUnaryInterceptor(ops.interceptor))
	}
	if opts.Dialer != nil {
		name := opts.Endpoint
		if name == "" {
			name = "in-memory"
		}
		target = "passthrough:///" + name
		dialOpts = append(dialOpts, grpc.WithContextDialer(opts.Dialer))
	}
	conn, err := grpc.NewClient(target, dialOpts...)
	if err != nil {
		return nil, fmt.Errorf("cri client for %q: %w: %w", opts.Endpoint, runtime.ErrInvalidArgument, err)
	}
	return conn, nil
}

// callerConn is a caller's Options.Conn with what the Runtime's own
// connection gives every call: the default call options (put first, so
// that a call's own options win) and the operation metrics.
type callerConn struct {
	cc       grpc.ClientConnInterface
	ops      *operationMetrics // nil: none
	defaults []grpc.CallOption
	closed   *atomic.Bool
}

var _ grpc.ClientConnInterface = callerConn{}

// Invoke implements grpc.ClientConnInterface.
func (c callerConn) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	if c.closed.Load() {
		return status.Error(codes.Canceled, "grpc: the client connection is closing")
	}
	opts = append(slices.Clip(c.defaults), opts...)
	if c.ops == nil {
		return c.cc.Invoke(ctx, method, args, reply, opts...)
	}
	return c.ops.interceptor(ctx, method, args, reply, nil, func(ctx context.Context, method string, args, reply any, _ *grpc.ClientConn, opts ...grpc.CallOption) error {
		return c.cc.Invoke(ctx, method, args, reply, opts...)
	}, opts...)
}

// NewStream implements grpc.ClientConnInterface (the Runtime opens no
// stream; it passes on to the caller's connection).
func (c callerConn) NewStream(ctx context.Context, desc *grpc.StreamDesc, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	if c.closed.Load() {
		return nil, status.Error(codes.Canceled, "grpc: the client connection is closing")
	}
	return c.cc.NewStream(ctx, desc, method, append(slices.Clip(c.defaults), opts...)...)
}

// callCtx bounds one call by the configured timeout (plus extra).
func (r *Runtime) callCtx(ctx context.Context, extra time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, r.opts.Timeout+extra)
}

// Version implements runtime.Runtime. A runtime that does not serve CRI v1
// gives an error wrapping runtime.ErrUnimplemented.
func (r *Runtime) Version(ctx context.Context) (*runtime.VersionInfo, error) {
	cctx, cancel := r.callCtx(ctx, 0)
	defer cancel()
	resp, err := r.rs.Version(cctx, &runtimeapi.VersionRequest{Version: "v1"})
	if err != nil {
		return nil, fmt.Errorf("version of CRI runtime at %s: %w", r.opts.Endpoint, fromGRPC(err))
	}
	v := &runtime.VersionInfo{RuntimeName: resp.GetRuntimeName(), RuntimeVersion: resp.GetRuntimeVersion(), APIVersion: resp.GetRuntimeApiVersion()}
	if v.APIVersion != "v1" && !strings.HasPrefix(v.APIVersion, "v1.") && !strings.HasPrefix(v.APIVersion, "0.1") {
		return v, fmt.Errorf("CRI runtime %s %s at %s speaks CRI API %q; podlife needs v1: %w",
			v.RuntimeName, v.RuntimeVersion, r.opts.Endpoint, v.APIVersion, runtime.ErrUnimplemented)
	}
	r.mu.Lock()
	r.runtimeName = v.RuntimeName
	r.mu.Unlock()
	return v, nil
}

// Status implements runtime.Runtime.
func (r *Runtime) Status(ctx context.Context) (*runtime.Status, error) {
	cctx, cancel := r.callCtx(ctx, 0)
	defer cancel()
	resp, err := r.rs.Status(cctx, &runtimeapi.StatusRequest{})
	if err != nil {
		return nil, fmt.Errorf("status of CRI runtime at %s: %w", r.opts.Endpoint, fromGRPC(err))
	}
	st := &runtime.Status{}
	for _, c := range resp.GetStatus().GetConditions() {
		st.Conditions = append(st.Conditions, runtime.Condition{Type: c.GetType(), Status: c.GetStatus(), Reason: c.GetReason(), Message: c.GetMessage()})
	}
	return st, nil
}

// name returns the runtime's name for ContainerID.Type, asking once.
func (r *Runtime) name(ctx context.Context) string {
	r.mu.Lock()
	n := r.runtimeName
	r.mu.Unlock()
	if n != "" {
		return n
	}
	if v, err := r.Version(ctx); err == nil && v.RuntimeName != "" {
		return v.RuntimeName
	}
	return "cri"
}
