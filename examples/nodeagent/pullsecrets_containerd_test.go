package main

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podlife/podlife/test/apitest"
)

// TestPrivateImageContainerd: a pod whose image is in the private
// registry of scripts/registry/start.sh (REG_ADDR, REG_USER,
// REG_PASSWORD, REG_IMAGE) does not run on a nodeagent node without
// imagePullSecrets (a pull failure is reported as a Warning event), and
// runs with a kubernetes.io/dockerconfigjson Secret the node reads
// through the Node authorizer; a missing Secret named beside it gets a
// FailedToRetrieveImagePullSecret warning and does not keep the pod from
// running. It needs PODLIFE_AGENT_CRI_ENDPOINT (alone on its containerd:
// the agent terminates every pod it does not know), the registry's env
// and PODLIFE_API_DIR with node reg-1 among API_NODES.
func TestPrivateImageContainerd(t *testing.T) {
	endpoint := os.Getenv("PODLIFE_AGENT_CRI_ENDPOINT")
	addr, user, password, image := os.Getenv("REG_ADDR"), os.Getenv("REG_USER"), os.Getenv("REG_PASSWORD"), os.Getenv("REG_IMAGE")
	if endpoint == "" || addr == "" || user == "" || password == "" || image == "" {
		t.Skip("PODLIFE_AGENT_CRI_ENDPOINT and REG_ADDR, REG_USER, REG_PASSWORD, REG_IMAGE are not all set: " +
			"skipping private images on a node on containerd (scripts/registry/start.sh)")
	}
	api := apitest.New(t)
	const node = "reg-1"
	api.DeleteNode(node)
	api.DeleteNodeAtCleanup(t, node)
	ctx := context.Background()
	removeRegistryImage(t, endpoint, image)
	t.Cleanup(func() { removeRegistryImage(t, endpoint, image) })

	c, err := parseFlags(append([]string{"--kubeconfig", api.NodeKubeconfig(t, node), "--node-name", node,
		"--cri-endpoint", endpoint, "--manifests", t.TempDir(), "--listen", "127.0.0.1:0",
		"--port", "0", "--address", "127.0.0.1", "--node-ip", "127.0.0.1",
		"--client-ca-file", filepath.Join(api.Dir, "ca.crt")}, testHostArgs...), os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	actx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- serve(actx, c, testr.NewWithOptions(t, testr.Options{Verbosity: 1})) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	api.Eventually(t, 60*time.Second, "node registered", func() (bool, error) {
		_, err := api.Admin.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		return err == nil, nil
	})

	ns := api.Namespace(t)
	t.Cleanup(func() {
		_ = api.Admin.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: new(int64(1))}, metav1.ListOptions{})
		api.Eventually(t, 60*time.Second, "pods gone", func() (bool, error) {
			l, err := api.Admin.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			return err == nil && len(l.Items) == 0, nil
		})
	})
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
	if _, err := api.Admin.CoreV1().Secrets(ns).Create(ctx, &v1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "regcred"},
		Type:       v1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{v1.DockerConfigJsonKey: []byte(`{"auths":{"` + addr + `":{"auth":"` + auth + `"}}}`)},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := func(name string, secrets ...string) {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: v1.PodSpec{NodeName: node, RestartPolicy: v1.RestartPolicyAlways, HostNetwork: true,
				TerminationGracePeriodSeconds: new(int64(1)),
				Containers:                    []v1.Container{{Name: "main", Image: image, ImagePullPolicy: v1.PullIfNotPresent}}}}
		for _, s := range secrets {
			p.Spec.ImagePullSecrets = append(p.Spec.ImagePullSecrets, v1.LocalObjectReference{Name: s})
		}
		if _, err := api.Admin.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// podEvent reports whether the pod has an event of type and reason
	// (any when empty) whose message contains text.
	podEvent := func(name, typ, reason, text string) (bool, error) {
		l, err := api.Admin.CoreV1().Events(ns).List(ctx, metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("involvedObject.name", name).String()})
		if err != nil {
			return false, err
		}
		for _, e := range l.Items {
			if e.Type == typ && (reason == "" || e.Reason == reason) && strings.Contains(e.Message, text) {
				return true, nil
			}
		}
		return false, nil
	}

	// Without imagePullSecrets: the pull is refused, the pod does not run.
	start := time.Now()
	pod("anonymous")
	api.Eventually(t, 90*time.Second, "a warning about the failed pull", func() (bool, error) {
		return podEvent("anonymous", v1.EventTypeWarning, "", image)
	})
	p, err := api.Admin.CoreV1().Pods(ns).Get(ctx, "anonymous", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Running != nil {
			t.Fatalf("container %s runs without credentials", cs.Name)
		}
	}
	t.Logf("anonymous: pull refused and reported in %s (phase %s)", time.Since(start).Round(time.Millisecond), p.Status.Phase)
	if err := api.Admin.CoreV1().Pods(ns).Delete(ctx, "anonymous", metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))}); err != nil {
		t.Fatal(err)
	}
	api.Eventually(t, 60*time.Second, "pod anonymous gone", func() (bool, error) {
		_, err := api.Admin.CoreV1().Pods(ns).Get(ctx, "anonymous", metav1.GetOptions{})
		return err != nil, nil
	})

	// With the Secret (and a missing one, reported): the pod runs.
	start = time.Now()
	pod("private", "missing", "regcred")
	waitPod(t, api, ns, "private", func(p *v1.Pod) bool {
		return p.Status.Phase == v1.PodRunning && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Running != nil
	})
	t.Logf("private: running in %s", time.Since(start).Round(time.Millisecond))
	api.Eventually(t, 30*time.Second, "the missing Secret reported", func() (bool, error) {
		return podEvent("private", v1.EventTypeWarning, "FailedToRetrieveImagePullSecret", "(missing)")
	})
}

// removeRegistryImage removes image from the runtime at endpoint, if it
// is there and has no other name (containerd's CRI would remove them all).
func removeRegistryImage(t *testing.T, endpoint, image string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	is := runtimeapi.NewImageServiceClient(conn)
	st, err := is.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: image}})
	if err != nil {
		t.Fatalf("ImageStatus %s: %v", image, err)
	}
	if st.GetImage() == nil {
		return
	}
	for _, tag := range st.GetImage().GetRepoTags() {
		if tag != image {
			t.Fatalf("image %s is also %s: not removing it", image, tag)
		}
	}
	if _, err := is.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: st.GetImage().GetId()}}); err != nil {
		t.Fatalf("RemoveImage %s: %v", image, err)
	}
}
