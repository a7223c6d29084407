package cluster_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/runtime/fakecri"
	"github.com/podlife/podlife/test/apitest"
)

// A pod with readiness gates is Ready only while every gate's condition,
// set in its status by another component, is True; a change of a gate
// reaches Ready without any other change to the pod (the e2e spec "Pods
// should support pod readiness gates").
func TestReadinessGatesInAPI(t *testing.T) {
	api := apitest.New(t)
	ns := api.Namespace(t)
	n := newNode(t, api, "e2e-4", nil)
	n.start(t, nil)
	waitReady(t, api, "e2e-4", 30*time.Second)
	p := pod("gated", "e2e-4", 2)
	p.Spec.ReadinessGates = []v1.PodReadinessGate{{ConditionType: "example.com/one"}, {ConditionType: "example.com/two"}}
	createPod(t, api, ns, p)

	ready := func(want v1.ConditionStatus) {
		t.Helper()
		api.Eventually(t, 30*time.Second, "Ready "+string(want), func() (bool, error) {
			p, err := api.Admin.CoreV1().Pods(ns).Get(context.Background(), "gated", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			var got v1.ConditionStatus
			for _, c := range p.Status.Conditions {
				if c.Type == v1.PodReady {
					got = c.Status
				}
			}
			return p.Status.Phase == v1.PodRunning && got == want, fmt.Errorf("phase %s, conditions %v", p.Status.Phase, p.Status.Conditions)
		})
	}
	gate := func(name string, status v1.ConditionStatus) {
		t.Helper()
		patch := fmt.Sprintf(`{"status":{"conditions":[{"type":%q,"status":%q}]}}`, name, status)
		if _, err := api.Admin.CoreV1().Pods(ns).Patch(context.Background(), "gated", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "status"); err != nil {
			t.Fatalf("patch %s: %v", name, err)
		}
	}
	ready(v1.ConditionFalse)
	gate("example.com/one", v1.ConditionTrue)
	gate("example.com/two", v1.ConditionTrue)
	ready(v1.ConditionTrue)
	gate("example.com/one", v1.ConditionFalse)
	ready(v1.ConditionFalse)
}

// A pod being deleted turns not ready in the API as soon as its readiness
// probe fails, while its container still has its grace period (the
// kubelet's SetContainerReadiness; the e2e specs "Probing container should
// mark readiness on pods to false while pod is in progress of
// terminating"), then goes as usual.
func TestNotReadyWhileTerminatingInAPI(t *testing.T) {
	api := apitest.New(t)
	ns := api.Namespace(t)
	n := newNode(t, api, "e2e-4", nil)
	var readyOK atomic.Bool
	readyOK.Store(true)
	n.srv.SetExec(func(context.Context, fakecri.ExecRequest) (fakecri.ExecResult, error) {
		if readyOK.Load() {
			return fakecri.ExecResult{}, nil
		}
		return fakecri.ExecResult{ExitCode: 1, Stdout: []byte("stopping")}, nil
	})
	n.start(t, nil)
	waitReady(t, api, "e2e-4", 30*time.Second)
	// "hang" ignores SIGTERM: the kill waits the whole grace period.
	p := pod("stopping", "e2e-4", 8, "hang")
	p.Spec.Containers[0].ReadinessProbe = &v1.Probe{
		ProbeHandler:  v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"check"}}},
		PeriodSeconds: 1, FailureThreshold: 1,
	}
	uid := createPod(t, api, ns, p).UID
	waitPodRunning(t, api, ns, "stopping", 30*time.Second)
	if err := api.Admin.CoreV1().Pods(ns).Delete(context.Background(), "stopping", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	api.Eventually(t, 30*time.Second, "the container given its grace period", func() (bool, error) {
		p, err := api.Admin.CoreV1().Pods(ns).Get(context.Background(), "stopping", metav1.GetOptions{})
		if err != nil || len(p.Status.ContainerStatuses) != 1 {
			return false, err
		}
		_, id, _ := strings.Cut(p.Status.ContainerStatuses[0].ContainerID, "://")
		s, ok := n.srv.StopTimeout(id)
		return ok && s == 8, fmt.Errorf("stop timeout %d, %v", s, ok)
	})
	readyOK.Store(false)
	api.Eventually(t, 30*time.Second, "not Ready while the container runs", func() (bool, error) {
		p, err := api.Admin.CoreV1().Pods(ns).Get(context.Background(), "stopping", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].State.Running == nil {
			return false, fmt.Errorf("container no longer running before the pod turned not ready: %+v", p.Status.ContainerStatuses)
		}
		return !isReady(p) && !p.Status.ContainerStatuses[0].Ready, fmt.Errorf("conditions %v", p.Status.Conditions)
	})
	waitPodGone(t, api, ns, "stopping", uid, 60*time.Second)
}

func isReady(p *v1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}
