package fleet_test

import (
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// The nodes share one list and one watch of the Services, which a node
// restarted, or killed and started again, keeps reading: every pod gets
// the service variables, and the API sees one list and one watch of the
// Services in all, not one per node (or per start).
func TestNodesShareOneServicesWatch(t *testing.T) {
	api := fake.NewClientset(
		&v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kubernetes"},
			Spec: v1.ServiceSpec{ClusterIP: "10.96.0.1", Ports: []v1.ServicePort{{Name: "https", Port: 443}}}},
		&v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db"},
			Spec: v1.ServiceSpec{ClusterIP: "10.96.0.5", Ports: []v1.ServicePort{{Port: 5432}}}},
	)
	var mu sync.Mutex
	requests := map[string]int{}
	api.PrependReactor("*", "services", func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		requests[a.GetVerb()]++
		return false, nil, nil
	})
	api.PrependWatchReactor("services", func(k8stesting.Action) (bool, watch.Interface, error) {
		mu.Lock()
		defer mu.Unlock()
		requests["watch"]++
		return false, nil, nil
	})
	tf := newFleet(t, 3)
	for _, name := range tf.Names() { // one API server for every node
		tf.clients[name] = api
	}
	tf.run(t)

	// env returns the variables of the container of the pod.
	env := func(node, pod string) map[string]string {
		t.Helper()
		var id string
		eventually(t, pod+"'s container running", func() bool {
			cs := tf.pod(t, node, pod).Status.ContainerStatuses
			if len(cs) != 1 || cs[0].State.Running == nil {
				return false
			}
			_, id, _ = strings.Cut(cs[0].ContainerID, "://")
			return true
		})
		cfg, err := tf.Node(node).Runtime().ContainerConfig(id)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, kv := range cfg.GetEnvs() {
			out[kv.GetKey()] = string(kv.GetValue())
		}
		return out
	}
	check := func(node, pod string) {
		t.Helper()
		tf.createPod(t, node, pod, "", nil)
		got := env(node, pod)
		for name, want := range map[string]string{"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443", "DB_SERVICE_HOST": "10.96.0.5", "DB_SERVICE_PORT": "5432"} {
			if got[name] != want {
				t.Errorf("%s on %s: env %s = %q, want %q", pod, node, name, got[name], want)
			}
		}
	}
	names := tf.Names()
	for i, node := range names {
		check(node, "web-"+string(rune('a'+i)))
	}
	if err := tf.Node(names[1]).Restart(); err != nil {
		t.Fatal(err)
	}
	check(names[1], "after-restart")
	if err := tf.Node(names[2]).Kill(); err != nil {
		t.Fatal(err)
	}
	if err := tf.Node(names[2]).Start(); err != nil {
		t.Fatal(err)
	}
	check(names[2], "after-kill")

	// The watch follows the list, maybe after the first pods started.
	eventually(t, "the Services watched", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return requests["watch"] > 0
	})
	mu.Lock()
	defer mu.Unlock()
	if requests["list"] != 1 || requests["watch"] != 1 || len(requests) != 2 {
		t.Errorf("requests for Services by %d nodes: %v, want 1 list and 1 watch", len(names), requests)
	}
}
