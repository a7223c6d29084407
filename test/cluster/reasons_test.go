package cluster_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podlife/podlife/runtime/fakecri"
	"github.com/podlife/podlife/test/apitest"
)

// A pod whose image cannot be pulled shows, in the API, its container
// Waiting ImagePullBackOff with the kubelet's message, and the kubelet's
// events; once the image can be pulled the pod runs, by itself.
func TestImagePullBackOffInAPI(t *testing.T) {
	api := apitest.New(t)
	ns := api.Namespace(t)
	n := newNode(t, api, "e2e-1", nil)
	removeFault := n.srv.Inject(fakecri.Fault{Method: "PullImage", Code: codes.NotFound, Message: "no such image"})
	n.start(t, nil)
	waitReady(t, api, "e2e-1", 30*time.Second)
	createPod(t, api, ns, pod("pull", "e2e-1", 2))

	const pullErr = "rpc error: code = NotFound desc = no such image"
	want := `Back-off pulling image "` + testImage + `": ErrImagePull: ` + pullErr
	api.Eventually(t, 30*time.Second, "Waiting ImagePullBackOff in the API", func() (bool, error) {
		p, err := api.Admin.CoreV1().Pods(ns).Get(context.Background(), "pull", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].State.Waiting == nil {
			return false, fmt.Errorf("container statuses %+v", p.Status.ContainerStatuses)
		}
		w := p.Status.ContainerStatuses[0].State.Waiting
		return w.Reason == "ImagePullBackOff" && w.Message == want && p.Status.Phase == v1.PodPending,
			fmt.Errorf("phase %s, waiting %s: %s", p.Status.Phase, w.Reason, w.Message)
	})
	api.Eventually(t, 30*time.Second, "the kubelet's pull events in the API", func() (bool, error) {
		list, err := api.Admin.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		seen := map[string]bool{}
		var all []string
		for _, e := range list.Items {
			if e.InvolvedObject.Name == "pull" {
				seen[e.Reason+" "+e.Message] = true
				all = append(all, e.Reason+" "+e.Message)
			}
		}
		for _, w := range []string{
			`Failed Failed to pull image "` + testImage + `": ` + pullErr,
			"Failed Error: ErrImagePull",
			`BackOff Back-off pulling image "` + testImage + `"`,
			"Failed Error: ImagePullBackOff",
		} {
			if !seen[w] {
				return false, fmt.Errorf("no event %q among %s", w, strings.Join(all, "; "))
			}
		}
		return true, nil
	})
	removeFault()
	waitPodRunning(t, api, ns, "pull", 60*time.Second)
}
