package credentials_test

import (
	"context"
	"encoding/base64"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podlife/podlife/agent/credentials"
	"github.com/podlife/podlife/runtime"
	"github.com/podlife/podlife/runtime/cri"
)

// registryEnv is the private registry of scripts/registry/start.sh (its
// env file, exported), and the containerd of scripts/containerd/start.sh;
// the test is skipped without them.
type registryEnv struct {
	endpoint, addr, user, password, image string
}

func realRegistry(t *testing.T) registryEnv {
	t.Helper()
	e := registryEnv{
		endpoint: os.Getenv("PODLIFE_CRI_ENDPOINT"),
		addr:     os.Getenv("REG_ADDR"),
		user:     os.Getenv("REG_USER"),
		password: os.Getenv("REG_PASSWORD"),
		image:    os.Getenv("REG_IMAGE"),
	}
	if e.endpoint == "" || e.addr == "" || e.image == "" || e.user == "" || e.password == "" {
		t.Skip("PODLIFE_CRI_ENDPOINT and REG_ADDR, REG_USER, REG_PASSWORD, REG_IMAGE are not all set: skipping the test " +
			"against containerd and a private registry (start them with scripts/containerd/start.sh and " +
			"scripts/registry/start.sh, then `set -a; . /tmp/podlife-registry/env`)")
	}
	return e
}

// pullOnly is a container options provider that gives image pull
// credentials only (the spec's command and args, no volumes, no env).
type pullOnly struct{ *credentials.Provider }

func (pullOnly) HandlesVolume(*v1.Volume) bool { return false }

func (pullOnly) RunContainerOptions(_ context.Context, _ *v1.Pod, c *v1.Container, _ []string) (*runtime.RunContainerOptions, error) {
	return &runtime.RunContainerOptions{Command: c.Command, Args: c.Args}, nil
}

// removeImage removes image from the runtime, if it is there.
func removeImage(ctx context.Context, t *testing.T, endpoint, image string) {
	t.Helper()
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	is := runtimeapi.NewImageServiceClient(conn)
	st, err := is.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: image}})
	if err != nil {
		t.Fatalf("ImageStatus %s: %v", image, err)
	}
	if st.GetImage() == nil {
		return
	}
	// containerd's CRI removes every name of an image: never one that
	// another test needs (the registry's image is a distinct image, see
	// scripts/registry/start.sh).
	for _, tag := range st.GetImage().GetRepoTags() {
		if tag != image {
			t.Fatalf("image %s is also %s: not removing it (the registry's image should be a distinct image)", image, tag)
		}
	}
	if _, err := is.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: st.GetImage().GetId()}}); err != nil {
		t.Fatalf("RemoveImage %s: %v", image, err)
	}
}

func imagePresent(ctx context.Context, t *testing.T, endpoint, image string) bool {
	t.Helper()
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	st, err := runtimeapi.NewImageServiceClient(conn).ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: image}})
	if err != nil {
		t.Fatalf("ImageStatus %s: %v", image, err)
	}
	return st.GetImage() != nil
}

// TestPrivateRegistryContainerd pulls the private registry's image through
// runtime/cri on containerd: without imagePullSecrets, and with a Secret
// holding a wrong password, the pull fails and the image stays absent;
// with a dockerconfigjson Secret holding the registry's credentials the
// container runs.
func TestPrivateRegistryContainerd(t *testing.T) {
	reg := realRegistry(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	secret := func(name, password string) *v1.Secret {
		auth := base64.StdEncoding.EncodeToString([]byte(reg.user + ":" + password))
		return dockerConfigJSON(name, `{"auths":{"http://`+reg.addr+`":{"auth":"`+auth+`"}}}`)
	}
	client := fake.NewClientset(secret("good", reg.password), secret("wrong", "not-"+reg.password))
	rec := record.NewFakeRecorder(100)
	rt, err := cri.New(cri.Options{Endpoint: reg.endpoint, Timeout: 30 * time.Second, CgroupParent: "/podlife-test",
		VolumeRoot: t.TempDir(), Logger: testr.New(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	rt.SetContainerOptionsProvider(pullOnly{credentials.New(credentials.Options{
		Secrets: credentials.ClientSecrets{Client: client}, Recorder: rec, Logger: testr.New(t)})})

	removeImage(ctx, t, reg.endpoint, reg.image)
	t.Cleanup(func() {
		cctx, ccancel := context.WithTimeout(context.Background(), time.Minute)
		defer ccancel()
		removeImage(cctx, t, reg.endpoint, reg.image)
	})

	newPod := func(name string, secrets ...string) *v1.Pod {
		grace := int64(1)
		p := &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("pullsecrets-" + name + "-" + time.Now().Format("150405.000000"))},
			Spec: v1.PodSpec{
				RestartPolicy:                 v1.RestartPolicyAlways,
				TerminationGracePeriodSeconds: &grace,
				Containers:                    []v1.Container{{Name: "main", Image: reg.image, ImagePullPolicy: v1.PullIfNotPresent}},
			},
		}
		for _, s := range secrets {
			p.Spec.ImagePullSecrets = append(p.Spec.ImagePullSecrets, v1.LocalObjectReference{Name: s})
		}
		t.Cleanup(func() {
			cctx, ccancel := context.WithTimeout(context.Background(), time.Minute)
			defer ccancel()
			zero := int64(0)
			_ = rt.KillPod(cctx, p, nil, &zero)
			_ = rt.RemovePod(cctx, &runtime.Pod{ID: p.UID, Name: p.Name, Namespace: p.Namespace})
		})
		return p
	}

	for _, tc := range []struct {
		name    string
		secrets []string
	}{
		{"anonymous", nil},
		{"wrong-password", []string{"wrong"}},
	} {
		start := time.Now()
		err := rt.SyncPod(ctx, newPod(tc.name, tc.secrets...), nil)
		if err == nil {
			t.Fatalf("%s: SyncPod succeeded, want a failed pull", tc.name)
		}
		if errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("%s: SyncPod: %v", tc.name, err)
		}
		if imagePresent(ctx, t, reg.endpoint, reg.image) {
			t.Fatalf("%s: image %s present after a pull that should have failed", tc.name, reg.image)
		}
		t.Logf("%s: pull refused in %s: %v", tc.name, time.Since(start).Round(time.Millisecond), err)
	}

	// The good Secret after a missing one: the missing one is reported, the
	// pull goes on with the good one.
	pod := newPod("with-secret", "missing", "good")
	start := time.Now()
	if err := rt.SyncPod(ctx, pod, nil); err != nil {
		t.Fatalf("SyncPod with the registry's credentials: %v", err)
	}
	for {
		s, err := rt.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
		if err == nil {
			if c := s.FindContainerStatusByName("main"); c != nil && c.State == runtime.ContainerStateRunning {
				break
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for the container to run: %v (last status %v, %v)", ctx.Err(), s, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
	t.Logf("with-secret: pulled and running in %s", time.Since(start).Round(time.Millisecond))
	if !imagePresent(ctx, t, reg.endpoint, reg.image) {
		t.Errorf("image %s absent after a successful pull", reg.image)
	}
	var warned bool
	for _, e := range events(rec) {
		if e == "Warning FailedToRetrieveImagePullSecret Unable to retrieve some image pull secrets (missing); attempting to pull the image may not succeed." {
			warned = true
		}
	}
	if !warned {
		t.Errorf("no FailedToRetrieveImagePullSecret event naming the missing Secret")
	}
}
