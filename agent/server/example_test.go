package server_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"

	"github.com/podlife/podlife/agent/server"
)

// A node server for an agent's pods: in a real agent the authenticator and
// authorizer come from NewAuthenticator and NewAuthorizer, the runtime's
// parts from runtime/cri, and Run serves HTTPS on the node's port.
func Example() {
	everyoneIsAdmin := authenticator.RequestFunc(func(*http.Request) (*authenticator.Response, bool, error) {
		return &authenticator.Response{User: &user.DefaultInfo{Name: "admin"}}, true, nil
	})
	pods := server.PodListerFunc(func() []*v1.Pod {
		return []*v1.Pod{{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}}}
	})
	s, err := server.New(server.Options{
		NodeName:      "node-1",
		Authenticator: everyoneIsAdmin,
		Authorizer:    authorizerfactory.NewAlwaysAllowAuthorizer(),
		Pods:          pods,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	hs := httptest.NewServer(s.Handler())
	defer hs.Close()
	for _, path := range []string{"/healthz", "/containerLogs/default/db/main"} {
		resp, err := http.Get(hs.URL + path)
		if err != nil {
			fmt.Println(err)
			return
		}
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		fmt.Printf("%s: %d %s\n", path, resp.StatusCode, b)
	}
	// Output:
	// /healthz: 200 ok
	// /containerLogs/default/db/main: 404 pod "default/db" does not exist
}
