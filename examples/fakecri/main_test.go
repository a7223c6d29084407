package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podlife/podlife/runtime/fakecri"
)

// TestServe serves on a socket, answers a CRI client with the preloaded
// image and a registry image, and stops when its context ends.
func TestServe(t *testing.T) {
	dir, err := os.MkdirTemp("", "fcri")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "s.sock")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	srvCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	opts := fakecri.Options{
		Logger:   testr.New(t),
		Images:   []string{"localhost/podlife/pause:1.0"},
		Registry: []fakecri.RegistryImage{{Refs: []string{"a:1", "b:1"}}},
	}
	go func() { done <- serve(srvCtx, opts, sock) }()

	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	images := runtimeapi.NewImageServiceClient(conn)
	// WaitForReady: the server may not listen yet.
	st, err := images.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: "localhost/podlife/pause:1.0"}}, grpc.WaitForReady(true))
	if err != nil || st.GetImage() == nil {
		t.Fatalf("preloaded image: %v %v", st, err)
	}
	a, err := images.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: "a:1"}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := images.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: "b:1"}})
	if err != nil || a.GetImageRef() != b.GetImageRef() {
		t.Fatalf("one registry image by two names: %q %q %v", a.GetImageRef(), b.GetImageRef(), err)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Errorf("socket left behind: %v", err)
	}
}
