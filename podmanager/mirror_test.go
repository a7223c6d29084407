package podmanager

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestReconcileMirrorPod(t *testing.T) {
	boom := errors.New("boom")
	now := metav1.Now()
	deletingMirror := mirrorPod("s", "m1", "h1")
	deletingMirror.DeletionTimestamp = &now
	tests := []struct {
		name      string
		pod       *v1.Pod
		mirror    *v1.Pod
		deleteRes bool
		deleteErr error
		createErr error
		wantCalls []string
		wantErrIs error
	}{
		{name: "no mirror: create", pod: staticPod("s", "s1", "h1"), wantCalls: []string{"create s_ns"}},
		{name: "up to date: nothing", pod: staticPod("s", "s1", "h1"), mirror: mirrorPod("s", "m1", "h1"), wantCalls: nil},
		{name: "stale: delete by UID then create", pod: staticPod("s", "s1", "h2"), mirror: mirrorPod("s", "m1", "h1"), deleteRes: true,
			wantCalls: []string{"delete s_ns m1", "create s_ns"}},
		{name: "being deleted: delete then create", pod: staticPod("s", "s1", "h1"), mirror: deletingMirror, deleteRes: true,
			wantCalls: []string{"delete s_ns m1", "create s_ns"}},
		{name: "stale but already gone: no create this time", pod: staticPod("s", "s1", "h2"), mirror: mirrorPod("s", "m1", "h1"), deleteRes: false,
			wantCalls: []string{"delete s_ns m1"}},
		{name: "delete fails", pod: staticPod("s", "s1", "h2"), mirror: mirrorPod("s", "m1", "h1"), deleteErr: boom,
			wantCalls: []string{"delete s_ns m1"}, wantErrIs: boom},
		{name: "create fails", pod: staticPod("s", "s1", "h1"), createErr: boom, wantCalls: []string{"create s_ns"}, wantErrIs: boom},
		{name: "not static: nothing", pod: apiPod("a", "1"), wantCalls: nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var calls []string
			client := MirrorClientFuncs{
				CreateMirrorPodFunc: func(_ context.Context, pod *v1.Pod) error {
					calls = append(calls, "create "+FullName(pod))
					return tc.createErr
				},
				DeleteMirrorPodFunc: func(_ context.Context, fullName string, uid *types.UID) (bool, error) {
					calls = append(calls, "delete "+fullName+" "+string(*uid))
					return tc.deleteRes, tc.deleteErr
				},
			}
			err := ReconcileMirrorPod(t.Context(), client, tc.pod, tc.mirror)
			if !errors.Is(err, tc.wantErrIs) || (err != nil) != (tc.wantErrIs != nil) {
				t.Errorf("err = %v, want %v", err, tc.wantErrIs)
			}
			if diff := cmp.Diff(tc.wantCalls, calls); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMirrorClientFuncsZero(t *testing.T) {
	var f MirrorClientFuncs
	if err := f.CreateMirrorPod(t.Context(), &v1.Pod{}); err != nil {
		t.Error(err)
	}
	if ok, err := f.DeleteMirrorPod(t.Context(), "a_b", nil); ok || err != nil {
		t.Error(ok, err)
	}
}
