package fakecri_test

import (
	"context"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podlife/podlife/runtime/fakecri"
)

func TestExecSync(t *testing.T) {
	s, c := start(t, fakecri.Options{Images: []string{"img"}})
	ctx := ctx(t)
	sb, err := c.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: sandboxConfig("u1")})
	if err != nil {
		t.Fatal(err)
	}
	cfg := containerConfig("c", "img")
	cfg.Labels = map[string]string{"io.kubernetes.pod.uid": "u1", "io.kubernetes.container.name": "c"}
	cr, err := c.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb.GetPodSandboxId(), Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	id := cr.GetContainerId()
	exec := func(timeout int64, cmd ...string) (*runtimeapi.ExecSyncResponse, error) {
		return c.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: cmd, Timeout: timeout})
	}
	if _, err := exec(0, "true"); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("exec in a created container: %v, want FailedPrecondition", err)
	}
	if _, err := c.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: id}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cmd    []string
		stdout string
		code   int32
	}{
		{[]string{"echo", "hello", "world"}, "hello world\n", 0},
		{[]string{"exit", "3"}, "", 3},
		{[]string{"/pause", "echo", "hi"}, "hi\n", 0}, // as the pause image's binary runs them
		{[]string{"/pause", "exit", "4"}, "", 4},
		{[]string{"true"}, "", 0},
		{[]string{"false"}, "", 1},
		{[]string{"/bin/nothing"}, "", 127},
	} {
		r, err := exec(0, tc.cmd...)
		if err != nil || string(r.GetStdout()) != tc.stdout || r.GetExitCode() != tc.code {
			t.Errorf("exec %q = %q, %d, %v; want %q, %d", tc.cmd, r.GetStdout(), r.GetExitCode(), err, tc.stdout, tc.code)
		}
	}
	if _, err := exec(1, "hang"); status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("exec hang with a 1 s timeout: %v, want DeadlineExceeded", err)
	}
	if _, err := c.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: "nope", Cmd: []string{"true"}}); status.Code(err) != codes.NotFound {
		t.Errorf("exec in an unknown container: %v, want NotFound", err)
	}

	var got fakecri.ExecRequest
	remove := s.SetExec(func(_ context.Context, req fakecri.ExecRequest) (fakecri.ExecResult, error) {
		got = req
		return fakecri.ExecResult{Stdout: []byte("ok"), ExitCode: 7}, nil
	})
	r, err := exec(5, "probe", "--x")
	if err != nil || string(r.GetStdout()) != "ok" || r.GetExitCode() != 7 {
		t.Fatalf("custom exec = %v, %v", r, err)
	}
	if got.PodUID != "u1" || got.ContainerName != "c" || got.ContainerID != id || len(got.Cmd) != 2 || got.Timeout.Seconds() != 5 {
		t.Errorf("ExecFunc saw %+v", got)
	}
	remove()
	if r, err := exec(0, "exit", "2"); err != nil || r.GetExitCode() != 2 {
		t.Errorf("after remove, builtin exec = %v, %v", r, err)
	}
}
