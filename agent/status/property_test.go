package status

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
)

// FuzzNeverTerminalWhileRunningAndNewestWins drives a Manager with a
// sequence of SetPodStatus, PodFinished, pod-worker progress, API failures
// and clock steps taken from the input, on a pod being deleted or not, and
// checks that
//   - the pod is deleted only after PodFinished, once its containers cannot
//     run and its terminal phase is in the API server, and then it is,
//   - no PATCH carries a terminal phase while the pod could have running
//     containers (checked when the request reaches the API server: the
//     answer only goes from true to false, as with the pod workers), and
//   - once the API server answers again, the newest status is in it,
//     except that a terminal phase written before stays (it is final) and
//     a terminal phase held back keeps the phase and message written
//     before (MergeStatus).
func FuzzNeverTerminalWhileRunningAndNewestWins(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7})
	f.Add([]byte{1, 1, 4, 5})           // being deleted: finished, then deleted
	f.Add([]byte{3, 1, 5, 6, 4, 7, 13}) // being deleted: finished while running, API down
	f.Add([]byte{3, 3, 6, 2, 2, 7, 1, 5, 0, 4})
	f.Add([]byte{2, 6, 2, 6, 4, 2, 7, 5, 1, 1, 3})
	f.Add([]byte{6, 0, 1, 2, 3, 7, 7, 7, 5, 4, 2, 1})
	f.Add([]byte{1, 2, 5, 6, 2, 3, 0, 0, 0, 5, 1})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 64 {
			ops = ops[:64]
		}
		pod := testPod("a", "uid-a")
		beingDeleted := len(ops) > 0 && ops[0]%2 == 1
		if beingDeleted {
			pod = deleting(pod)
		}
		h := newHarness(t, nil, pod)
		h.states.set(pod.UID, true)
		var (
			mu              sync.Mutex
			failing         bool
			violation       string
			terminalPatched bool
			finishedCalled  bool
			deleted         bool
		)
		h.react("delete", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
			mu.Lock()
			defer mu.Unlock()
			if failing {
				return true, nil, apierrors.NewInternalError(errors.New("down"))
			}
			switch {
			case !finishedCalled:
				violation = "deleted before PodFinished"
			case h.states.CouldHaveRunningContainers(pod.UID):
				violation = "deleted while containers could run"
			case !isTerminalPhase(h.apiPod(pod).Status.Phase):
				violation = "deleted before its terminal phase was written"
			}
			deleted = true
			return false, nil, nil
		})
		h.react("patch", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
			mu.Lock()
			defer mu.Unlock()
			if failing {
				return true, nil, apierrors.NewInternalError(errors.New("down"))
			}
			var body map[string]any
			_ = jsonUnmarshal(a.(k8stesting.PatchAction).GetPatch(), &body)
			ph := v1.PodPhase(statusPhase(body))
			if isTerminalPhase(ph) {
				if h.states.CouldHaveRunningContainers(pod.UID) {
					violation = fmt.Sprintf("terminal phase %s patched while containers could run: %v", ph, body)
				}
				terminalPatched = true
			}
			return false, nil, nil
		})
		h.run()
		ctx := context.Background()
		phases := []v1.PodPhase{v1.PodPending, v1.PodRunning, v1.PodSucceeded, v1.PodFailed}
		var newest v1.PodStatus
		for i, op := range ops {
			st := v1.PodStatus{Phase: phases[int(op)%len(phases)], Message: fmt.Sprint("m", i)}
			switch op % 8 {
			case 0, 1, 2, 3:
				_ = h.m.SetPodStatus(ctx, pod, nil, st)
				newest = st
			case 4:
				h.states.set(pod.UID, false) // the pod worker terminated the pod
			case 5:
				mu.Lock()
				finishedCalled = true
				mu.Unlock()
				st.Phase = phases[2+int(op/8)%2] // a final status is terminal
				_ = h.m.PodFinished(ctx, pod, nil, st)
				newest = st
			case 6:
				mu.Lock()
				failing = !failing
				mu.Unlock()
			case 7:
				h.clock.Step(time.Duration(op) * 100 * time.Millisecond)
			}
		}
		mu.Lock()
		failing = false
		mu.Unlock()
		if newest.Message == "" {
			return
		}
		h.stepUntilSettled(time.Second)
		// A write that found containers still able to run held the
		// terminal phase back; the pod worker has stopped them since
		// (op 4): the next reconcile releases it.
		h.reconcileAndSettle()
		mu.Lock()
		defer mu.Unlock()
		if violation != "" {
			t.Fatal(violation)
		}
		if deleted {
			return
		}
		if beingDeleted && finishedCalled && !h.states.CouldHaveRunningContainers(pod.UID) && terminalPatched {
			t.Fatalf("a finished pod being deleted, with its terminal phase written, was not deleted (requests %v)", h.requests())
		}
		got := h.apiPod(pod).Status
		want := newest.Phase
		if isTerminalPhase(want) && h.states.CouldHaveRunningContainers(pod.UID) {
			// Held back: the phase, reason and message written before
			// stay (MergeStatus).
			want = ""
		} else if terminalPatched && !isTerminalPhase(want) {
			// A terminal phase is final: it stays, with its reason and
			// message.
			if !isTerminalPhase(got.Phase) {
				t.Fatalf("API phase %s after a terminal phase was written", got.Phase)
			}
			return
		} else if got.Message != newest.Message {
			t.Fatalf("API message %q, want the newest %q (requests %v)", got.Message, newest.Message, h.requests())
		}
		switch {
		case want == "" && isTerminalPhase(got.Phase):
			t.Fatalf("API phase %s while containers could run", got.Phase)
		case want != "" && got.Phase != want && !(terminalPatched && isTerminalPhase(got.Phase)):
			t.Fatalf("API phase %s, want %s", got.Phase, want)
		}
	})
}
