package fakecri_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podlife/podlife/runtime/fakecri"
)

// countingCodec is a codec a call can force: it decodes as protobuf does
// and counts its decodes, to show that the codec was used.
type countingCodec struct{ n *int }

func (c countingCodec) Marshal(v any) ([]byte, error) { return proto.Marshal(v.(proto.Message)) }
func (c countingCodec) Unmarshal(b []byte, v any) error {
	*c.n++
	return proto.Unmarshal(b, v.(proto.Message))
}
func (countingCodec) Name() string { return "proto" }

var _ encoding.Codec = countingCodec{}

// TestConnAnswersAsAGRPCConnection runs the same calls on two servers
// with the same state, one through a gRPC connection over its socket and
// one through Conn, and compares every reply and every error: successes,
// the handlers' errors, injected faults, a context already cancelled, a
// receive limit, a forced codec, and a server that is down.
func TestConnAnswersAsAGRPCConnection(t *testing.T) {
	at := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	opts := fakecri.Options{Images: []string{"img"}}
	opts.Clock = clocktesting.NewFakeClock(at)
	sg, viaGRPC := start(t, opts)
	opts.Clock = clocktesting.NewFakeClock(at)
	sd, _ := start(t, opts)
	viaConn := client{runtimeapi.NewRuntimeServiceClient(sd.Conn()), runtimeapi.NewImageServiceClient(sd.Conn())}

	var decodes int
	forced := grpc.ForceCodec(countingCodec{&decodes})
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()

	type call struct {
		name string
		do   func(c client, s *fakecri.Server) (proto.Message, error)
		// codeOnly: compare the status codes only (the messages name
		// the transport).
		codeOnly bool
	}
	var sandboxID, containerID string
	calls := []call{
		{name: "Version", do: func(c client, _ *fakecri.Server) (proto.Message, error) {
			return c.Version(ctx(t), &runtimeapi.VersionRequest{Version: "v1"})
		}},
		{name: "RunPodSandbox without metadata", do: func(c client, _ *fakecri.Server) (proto.Message, error) {
			return c.RunPodSandbox(ctx(t), &runtimeapi.RunPodSandboxRequest{Config: &runtimeapi.PodSandboxConfig{}})
		}},
		{name: "RunPodSandbox", do: func(c client, _ *fakecri.Server) (proto.Message, error) {
			r, err := c.RunPodSandbox(ctx(t), &runtimeapi.RunPodSandboxRequest{Config: sandboxConfig("u1")})
			sandboxID = r.GetPodSandboxId()
			return r, err
		}},
		{name: "CreateContainer", do: func(c client, _ *fakecri.Server) (proto.Message, error) {
			r, err := c.CreateContainer(ctx(t), &runtimeapi.CreateContainerRequest{PodSandboxId: sandboxID,
				Config: containerConfig("app", "img"), SandboxConfig: sandboxConfig("u1")})
			containerID = r.GetContainerId()
			return r, err
		}},
		{name: "StartContainer", do: func(c client, _ *fakecri.Server) (proto.Message, error) {
			return c.StartContainer(ctx(t), &runtimeapi.StartContainerRequest{ContainerId: containerID})
		}},
		{name: "ContainerStatus", do: func(c client, _ *fakecri.Server) (proto.Message, error) {
			return c.ContainerStatus(ctx(t), &runtimeapi.ContainerStatusRequest{ContainerId: containerID})
		}},
		{name: "ListContainers with a forced codec", do: func(c client, _ *fakecri.Server) (proto.Message, error) {
			before := decodes
			r, err := c.ListContainers(ctx(t), &runtimeapi.ListContainersRequest{}, forced)
			if err == nil && decodes != before+1 {
				return r, fmt.Errorf("the forced codec decoded %d replies, want 1", decodes-before)
			}
			return r, err
		}},
		{name: "ListPodSandbox over the receive limit", do: func(c client, _ *fakecri.Server) (proto.Message, error) {
			return c.ListPodSandbox(ctx(t), &runtimeapi.ListPodSandboxRequest{}, grpc.MaxCallRecvMsgSize(10))
		}},
		{name: "ListPodSandbox within a limit set twice", do: func(c client, _ *fakecri.Server) (proto.Message, error) {
			return c.ListPodSandbox(ctx(t), &runtimeapi.ListPodSandboxRequest{}, grpc.MaxCallRecvMsgSize(10), grpc.MaxCallRecvMsgSize(1<<20))
		}},
		{name: "an injected fault", do: func(c client, s *fakecri.Server) (proto.Message, error) {
			s.FailNext("PodSandboxStatus", codes.ResourceExhausted)
			return c.PodSandboxStatus(ctx(t), &runtimeapi.PodSandboxStatusRequest{PodSandboxId: sandboxID})
		}},
		{name: "PodSandboxStatus", do: func(c client, _ *fakecri.Server) (proto.Message, error) {
			return c.PodSandboxStatus(ctx(t), &runtimeapi.PodSandboxStatusRequest{PodSandboxId: sandboxID})
		}},
		{name: "a cancelled context", do: func(c client, _ *fakecri.Server) (proto.Message, error) {
			return c.StopContainer(cancelled, &runtimeapi.StopContainerRequest{ContainerId: containerID})
		}},
		{name: "StopContainer", do: func(c client, _ *fakecri.Server) (proto.Message, error) {
			return c.StopContainer(ctx(t), &runtimeapi.StopContainerRequest{ContainerId: containerID, Timeout: 2})
		}},
		{name: "RemoveContainer", do: func(c client, _ *fakecri.Server) (proto.Message, error) {
			return c.RemoveContainer(ctx(t), &runtimeapi.RemoveContainerRequest{ContainerId: containerID})
		}},
		{name: "ContainerStatus of a removed container", do: func(c client, _ *fakecri.Server) (proto.Message, error) {
			return c.ContainerStatus(ctx(t), &runtimeapi.ContainerStatusRequest{ContainerId: containerID})
		}},
		{name: "ImageStatus", do: func(c client, _ *fakecri.Server) (proto.Message, error) {
			return c.ImageStatus(ctx(t), &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: "img"}})
		}},
		{name: "a call while the server is down", codeOnly: true, do: func(c client, s *fakecri.Server) (proto.Message, error) {
			s.Down()
			defer func() {
				if err := s.Up(); err != nil {
					t.Error(err)
				}
			}()
			short, cancel := context.WithTimeout(ctx(t), 5*time.Second)
			defer cancel()
			return c.ListPodSandbox(short, &runtimeapi.ListPodSandboxRequest{})
		}},
	}
	for _, c := range calls {
		wantReply, wantErr := c.do(viaGRPC, sg)
		gotReply, gotErr := c.do(viaConn, sd)
		ws, wok := status.FromError(wantErr)
		gs, gok := status.FromError(gotErr)
		switch {
		case !wok || !gok:
			t.Errorf("%s: errors that are not gRPC statuses: over gRPC %v, through Conn %v", c.name, wantErr, gotErr)
		case ws.Code() != gs.Code():
			t.Errorf("%s: through Conn %v, over gRPC %v", c.name, gotErr, wantErr)
		case !c.codeOnly && ws.Message() != gs.Message():
			t.Errorf("%s: through Conn %q, over gRPC %q", c.name, gs.Message(), ws.Message())
		case wantErr == nil && !proto.Equal(wantReply, gotReply):
			t.Errorf("%s: through Conn %v, over gRPC %v", c.name, gotReply, wantReply)
		}
	}
	if got, want := sd.Calls(), sg.Calls(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("calls the server saw through Conn %v, over gRPC %v", got, want)
	}
}

// TestConnCopiesRequestsAndReplies checks that neither side of a direct
// call shares memory with the other: a request changed after the call and
// a reply changed by the caller leave the server's state as it was.
func TestConnCopiesRequestsAndReplies(t *testing.T) {
	s, _ := start(t, fakecri.Options{})
	c := runtimeapi.NewRuntimeServiceClient(s.Conn())
	cfg := sandboxConfig("u1")
	r, err := c.RunPodSandbox(ctx(t), &runtimeapi.RunPodSandboxRequest{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Labels["uid"] = "changed"
	st, err := c.PodSandboxStatus(ctx(t), &runtimeapi.PodSandboxStatusRequest{PodSandboxId: r.GetPodSandboxId()})
	if err != nil {
		t.Fatal(err)
	}
	st.GetStatus().Labels["uid"] = "changed too"
	again, err := c.PodSandboxStatus(ctx(t), &runtimeapi.PodSandboxStatusRequest{PodSandboxId: r.GetPodSandboxId()})
	if err != nil {
		t.Fatal(err)
	}
	if got := again.GetStatus().GetLabels()["uid"]; got != "u1" {
		t.Errorf("label uid = %q after the caller changed its request and a reply, want u1", got)
	}
}

// TestConnRefusesStreamsAndUnknownMethods checks the two things a direct
// connection does not serve.
func TestConnRefusesStreamsAndUnknownMethods(t *testing.T) {
	s, _ := start(t, fakecri.Options{})
	c := runtimeapi.NewRuntimeServiceClient(s.Conn())
	if _, err := c.GetContainerEvents(ctx(t), &runtimeapi.GetEventsRequest{}); status.Code(err) != codes.Unimplemented {
		t.Errorf("GetContainerEvents through Conn: %v, want Unimplemented", err)
	}
	err := s.Conn().Invoke(ctx(t), "/runtime.v1.RuntimeService/NoSuchMethod", &runtimeapi.VersionRequest{}, &runtimeapi.VersionResponse{})
	if status.Code(err) != codes.Unimplemented {
		t.Errorf("an unknown method through Conn: %v, want Unimplemented", err)
	}
}

// TestConnBeforeStart checks that a server not started yet refuses calls,
// as a runtime whose socket does not exist yet.
func TestConnBeforeStart(t *testing.T) {
	s := fakecri.New(fakecri.Options{})
	t.Cleanup(s.Stop)
	c := runtimeapi.NewRuntimeServiceClient(s.Conn())
	if _, err := c.Version(ctx(t), &runtimeapi.VersionRequest{}); status.Code(err) != codes.Unavailable {
		t.Errorf("Version before the server started: %v, want Unavailable", err)
	}
	if err := s.StartInMemory(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Version(ctx(t), &runtimeapi.VersionRequest{}); err != nil {
		t.Errorf("Version once started: %v", err)
	}
}
