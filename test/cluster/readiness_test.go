package cluster_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

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
