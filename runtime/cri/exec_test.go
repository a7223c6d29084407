package cri_test

import (
	"context"
	"errors"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/runtime"
	"github.com/podlife/podlife/runtime/fakecri"
)

func TestExecSync(t *testing.T) {
	srv, ep := startFake(t, fakecri.Options{})
	rt := newRuntime(t, ep)
	ctx := ctxT(t)
	pod := testPod("exec", v1.RestartPolicyAlways, v1.Container{Name: "a"})
	if err := rt.SyncPod(ctx, pod, nil); err != nil {
		t.Fatalf("SyncPod: %v", err)
	}
	c := podStatus(t, rt, pod).FindContainerStatusByName("a")
	if c == nil || c.State != runtime.ContainerStateRunning {
		t.Fatalf("container a: %+v", c)
	}
	id := c.ID.ID

	for _, tc := range []struct {
		name   string
		cmd    []string
		stdout string
		code   int32
	}{
		{"echo", []string{"echo", "hi"}, "hi\n", 0},
		{"exit code", []string{"exit", "3"}, "", 3},
		{"missing executable", []string{"/nothing"}, "", 127},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, _, code, err := rt.ExecSync(ctx, id, tc.cmd, time.Second)
			if err != nil || string(out) != tc.stdout || code != tc.code {
				t.Errorf("ExecSync(%q) = %q, %d, %v; want %q, %d", tc.cmd, out, code, err, tc.stdout, tc.code)
			}
		})
	}

	t.Run("timeout rounds up to whole seconds", func(t *testing.T) {
		var got time.Duration
		remove := srv.SetExec(func(_ context.Context, req fakecri.ExecRequest) (fakecri.ExecResult, error) {
			got = req.Timeout
			return fakecri.ExecResult{}, nil
		})
		defer remove()
		if _, _, _, err := rt.ExecSync(ctx, id, []string{"x"}, 1500*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		if got != 2*time.Second {
			t.Errorf("runtime saw timeout %v, want 2s", got)
		}
	})
	t.Run("hang ends with ErrDeadlineExceeded", func(t *testing.T) {
		_, _, _, err := rt.ExecSync(ctx, id, []string{"hang"}, time.Second)
		if !errors.Is(err, runtime.ErrDeadlineExceeded) {
			t.Errorf("ExecSync(hang) = %v, want ErrDeadlineExceeded", err)
		}
	})
	t.Run("unknown container is ErrNotFound", func(t *testing.T) {
		_, _, _, err := rt.ExecSync(ctx, "nope", []string{"true"}, time.Second)
		if !errors.Is(err, runtime.ErrNotFound) {
			t.Errorf("ExecSync(nope) = %v, want ErrNotFound", err)
		}
	})
}
