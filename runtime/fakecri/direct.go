package fakecri

import (
	"context"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Conn returns a client connection to the server that needs no transport,
// for a CRI client in the same process (cri.Options.Conn): each unary
// call runs the server's handler, fault injection included, on the
// caller's goroutine. What a gRPC connection does to a call is kept: the
// request and the reply cross in their wire form (marshalled and decoded,
// with the codec the call forces, if any), so that neither side shares
// memory with the other; a request larger than the call's
// MaxCallSendMsgSize, or a reply larger than its MaxCallRecvMsgSize, is
// refused with ResourceExhausted; a handler's error
// reaches the caller as a gRPC status (Unknown when it is not one); a
// call whose context has ended fails with Canceled or DeadlineExceeded;
// while the server is down (Down, or before StartUnix or StartInMemory)
// every call fails with Unavailable, as on a refused connection. Calls in
// flight when Down is called finish. Streams are not served
// (Unimplemented): the CRI's only streaming method, GetContainerEvents,
// needs a connection from StartUnix or StartInMemory.
//
// It spares each call the HTTP/2 framing of an in-memory connection: a
// large share of the CPU and of the allocations of an agent that runs
// thousands of pods on fakecri.
func (s *Server) Conn() grpc.ClientConnInterface { return directConn{s: s} }

// directMethod is a unary method of the CRI services with its server.
type directMethod struct {
	srv     any
	handler grpc.MethodHandler
}

// directMethods maps each unary CRI method's full name to its handler.
func directMethods(s *Server) map[string]directMethod {
	m := map[string]directMethod{}
	for _, svc := range []struct {
		desc *grpc.ServiceDesc
		srv  any
	}{
		{&runtimeapi.RuntimeService_ServiceDesc, &runtimeService{s: s}},
		{&runtimeapi.ImageService_ServiceDesc, &imageService{s: s}},
	} {
		for _, md := range svc.desc.Methods {
			m["/"+svc.desc.ServiceName+"/"+md.MethodName] = directMethod{srv: svc.srv, handler: md.Handler}
		}
	}
	return m
}

type directConn struct{ s *Server }

var _ grpc.ClientConnInterface = directConn{}

// Invoke implements grpc.ClientConnInterface.
func (c directConn) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	if err := ctx.Err(); err != nil {
		return status.FromContextError(err).Err()
	}
	if !c.s.IsUp() {
		return status.Error(codes.Unavailable, "fakecri: connection refused: server is down")
	}
	m, ok := c.s.direct[method]
	if !ok {
		return status.Errorf(codes.Unimplemented, "fakecri: unknown method %s", method)
	}
	co := callOptionsOf(opts)
	req, err := wireForm("request", method, args)
	if err != nil {
		return err
	}
	if co.maxSend > 0 && len(req) > co.maxSend {
		return status.Errorf(codes.ResourceExhausted, "grpc: trying to send message larger than max (%d vs. %d)", len(req), co.maxSend)
	}
	dec := func(v any) error {
		msg, ok := v.(proto.Message)
		if !ok {
			return fmt.Errorf("request of %s decoded into a %T", method, v)
		}
		if err := proto.Unmarshal(req, msg); err != nil {
			return status.Errorf(codes.Internal, "fakecri: decode request of %s: %v", method, err)
		}
		return nil
	}
	resp, err := m.handler(m.srv, ctx, dec, c.s.intercept)
	if err != nil {
		if st, ok := status.FromError(err); ok {
			return st.Err()
		}
		return status.FromContextError(err).Err() // Unknown unless a context error
	}
	if err := ctx.Err(); err != nil { // the reply came after the caller gave up
		return status.FromContextError(err).Err()
	}
	b, err := wireForm("reply", method, resp)
	if err != nil {
		return err
	}
	if co.maxRecv > 0 && len(b) > co.maxRecv {
		return status.Errorf(codes.ResourceExhausted, "grpc: received message larger than max (%d vs. %d)", len(b), co.maxRecv)
	}
	return decodeReply(method, b, reply, co)
}

// wireForm marshals a call's request or reply (what) for the other side.
func wireForm(what, method string, v any) ([]byte, error) {
	msg, ok := v.(proto.Message)
	if !ok {
		return nil, status.Errorf(codes.Internal, "fakecri: %s of %s is a %T, not a protocol buffer", what, method, v)
	}
	b, err := proto.Marshal(msg)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "fakecri: marshal %s of %s: %v", what, method, err)
	}
	return b, nil
}

// callOptions are the call options a direct call honours; a later option
// overrides an earlier one, as in gRPC.
type callOptions struct {
	codec            encoding.Codec
	codecV2          encoding.CodecV2
	maxRecv, maxSend int // 0: no limit
}

func callOptionsOf(opts []grpc.CallOption) callOptions {
	var co callOptions
	for _, o := range opts {
		switch o := o.(type) {
		case grpc.ForceCodecCallOption:
			co.codec, co.codecV2 = o.Codec, nil
		case grpc.ForceCodecV2CallOption:
			co.codec, co.codecV2 = nil, o.CodecV2
		case grpc.MaxRecvMsgSizeCallOption:
			co.maxRecv = o.MaxRecvMsgSize
		case grpc.MaxSendMsgSizeCallOption:
			co.maxSend = o.MaxSendMsgSize
		}
	}
	return co
}

// decodeReply decodes b into reply as a gRPC client would, with the codec
// the call forces, if any.
func decodeReply(method string, b []byte, reply any, co callOptions) error {
	var err error
	switch {
	case co.codecV2 != nil:
		err = co.codecV2.Unmarshal(mem.BufferSlice{mem.SliceBuffer(b)}, reply)
	case co.codec != nil:
		err = co.codec.Unmarshal(b, reply)
	default:
		msg, ok := reply.(proto.Message)
		if !ok {
			return status.Errorf(codes.Internal, "fakecri: reply of %s decoded into a %T", method, reply)
		}
		err = proto.Unmarshal(b, msg)
	}
	if err != nil {
		return status.Errorf(codes.Internal, "grpc: failed to unmarshal the received message: %v", err)
	}
	return nil
}

// NewStream implements grpc.ClientConnInterface: streams are not served.
func (directConn) NewStream(_ context.Context, desc *grpc.StreamDesc, method string, _ ...grpc.CallOption) (grpc.ClientStream, error) {
	return nil, status.Errorf(codes.Unimplemented, "fakecri: %s is a stream, which a direct connection does not serve: connect through StartUnix or StartInMemory", method)
}
