package agent_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	utilexec "k8s.io/utils/exec"

	"github.com/podlife/podlife/agent"
	"github.com/podlife/podlife/agent/server"
	"github.com/podlife/podlife/runtime/fakecri"
)

// Options.Server: the agent binds the node server at New and serves its
// pods, with their statuses, until Run ends.
func TestNodeServer(t *testing.T) {
	_, endpoint := startFakeCRI(t, fakecri.Options{})
	dir := t.TempDir()
	writeManifest(t, dir, "web", manifest("web", 1, "log", "hello from fakecri"))
	anyone := authenticator.RequestFunc(func(*http.Request) (*authenticator.Response, bool, error) {
		return &authenticator.Response{User: &user.DefaultInfo{Name: "admin"}}, true, nil
	})
	ra := startAgentWith(t, endpoint, dir, func(o *agent.Options) {
		o.Server = &server.Options{Address: "127.0.0.1", Port: -1, Authenticator: anyone,
			Authorizer: authorizerfactory.NewAlwaysAllowAuthorizer()}
	})
	port := ra.Server().Port()
	if port == 0 {
		t.Fatal("no port bound")
	}
	uid := ra.podUID(t, "web")
	waitRunning(t, ra, uid)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	deadline := time.Now().Add(waitTimeout)
	for {
		resp, err := client.Get(fmt.Sprintf("https://127.0.0.1:%d/pods", port))
		if err != nil {
			t.Fatal(err)
		}
		var list v1.PodList
		err = json.NewDecoder(resp.Body).Decode(&list)
		_ = resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Items) == 1 && list.Items[0].UID == uid && list.Items[0].Status.Phase == v1.PodRunning {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/pods: %+v", list.Items)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Run("exec through fakecri's streaming server", func(t *testing.T) {
		pod := podByUID(t, client, port, uid)
		u, _ := url.Parse(fmt.Sprintf("https://127.0.0.1:%d/exec/%s/%s/main?command=echo&command=hi&stdout=1&stderr=1", port, pod.Namespace, pod.Name))
		cfg := &rest.Config{TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
		run := func(u *url.URL) (string, error) {
			ex, err := remotecommand.NewSPDYExecutor(cfg, "POST", u)
			if err != nil {
				t.Fatal(err)
			}
			var out, errOut bytes.Buffer
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &out, Stderr: &errOut})
			return out.String() + errOut.String(), err
		}
		if out, err := run(u); err != nil || out != "hi\n" {
			t.Errorf("exec echo hi: %q %v", out, err)
		}
		u.RawQuery = "command=exit&command=3&stdout=1&stderr=1"
		_, err := run(u)
		var ee utilexec.ExitError
		if !errors.As(err, &ee) || ee.ExitStatus() != 3 {
			t.Errorf("exec exit 3: %v, want exit code 3", err)
		}
	})
	t.Run("logs and stats from fakecri", func(t *testing.T) {
		pod := podByUID(t, client, port, uid)
		body := func(path string) string {
			resp, err := client.Get(fmt.Sprintf("https://127.0.0.1:%d%s", port, path))
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = resp.Body.Close() }()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 200 {
				t.Fatalf("%s: %d %s", path, resp.StatusCode, b)
			}
			return string(b)
		}
		if got := body("/containerLogs/" + pod.Namespace + "/" + pod.Name + "/main"); got != "hello from fakecri\n" {
			t.Errorf("logs: %q", got)
		}
		var sum statsapi.Summary
		if err := json.Unmarshal([]byte(body("/stats/summary")), &sum); err != nil {
			t.Fatal(err)
		}
		if len(sum.Pods) != 1 || sum.Pods[0].PodRef.UID != string(uid) || sum.Pods[0].CPU == nil ||
			len(sum.Pods[0].Containers) != 1 || *sum.Pods[0].Containers[0].Memory.WorkingSetBytes != 1<<20 {
			t.Errorf("summary: %+v", sum.Pods)
		}
		if m := body("/metrics/resource"); !strings.Contains(m, `container_memory_working_set_bytes{container="main",namespace="default",pod="web-node1"} 1.048576e+06`) {
			t.Errorf("resource metrics:\n%s", m)
		}
	})
	ra.stop(t)
	if _, err := client.Get(fmt.Sprintf("https://127.0.0.1:%d/healthz", port)); err == nil {
		t.Error("the server still answers after Run returned")
	}
}

func podByUID(t *testing.T, client *http.Client, port int, uid types.UID) v1.Pod {
	t.Helper()
	resp, err := client.Get(fmt.Sprintf("https://127.0.0.1:%d/pods", port))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var list v1.PodList
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	for _, p := range list.Items {
		if p.UID == uid {
			return p
		}
	}
	t.Fatalf("pod %s not in /pods", uid)
	return v1.Pod{}
}
