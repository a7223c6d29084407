package agent_test

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"

	"github.com/podlife/podlife/agent"
	"github.com/podlife/podlife/agent/server"
	"github.com/podlife/podlife/runtime/fakecri"
)

// Options.Server: the agent binds the node server at New and serves its
// pods, with their statuses, until Run ends.
func TestNodeServer(t *testing.T) {
	_, endpoint := startFakeCRI(t, fakecri.Options{})
	dir := t.TempDir()
	writeManifest(t, dir, "web", manifest("web", 1))
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
	ra.stop(t)
	if _, err := client.Get(fmt.Sprintf("https://127.0.0.1:%d/healthz", port)); err == nil {
		t.Error("the server still answers after Run returned")
	}
}
