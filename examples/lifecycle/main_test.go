package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/go-logr/logr/testr"
	"github.com/google/go-cmp/cmp"
)

func TestRun(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out, testr.New(t)); err != nil {
		t.Fatal(err)
	}
	want := `# create
SyncPod            create web image=nginx:1.27
  -> web is syncing (worker state sync)
# update the image
SyncPod            update web image=nginx:1.28
  -> web is syncing (worker state sync)
# kill with a 5s grace period
  -> web is terminating (worker state terminating)
SyncTerminatingPod        web gracePeriod=5s
  -> CompletedCh closed: no container runs or will start
SyncTerminatedPod         web
  -> web is finished (worker state terminated)
# housekeeping: the pod is no longer desired
  -> SyncKnownPods reports 0 pods
  -> web forgotten by the pod workers
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
}
