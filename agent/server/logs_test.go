package server_test

import (
	"bufio"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podlife/podlife/runtime"
)

var logLines = []string{
	"2026-01-01T00:00:01.000000000Z stdout F one",
	"2026-01-01T00:00:02.000000000Z stderr F two",
	"2026-01-01T00:00:03.000000000Z stdout P thr",
	"2026-01-01T00:00:03.500000000Z stdout F ee",
	"2026-01-01T00:00:04.000000000Z stdout F four",
}

func TestContainerLogs(t *testing.T) {
	w, _ := newWorld(t, logLines...)
	base, _ := newServer(t, w)
	for _, tc := range []struct {
		query, want string
	}{
		{"", "one\ntwo\nthree\nfour\n"},
		{"?tailLines=3", "three\nfour\n"},
		// As the kubelet's: tailLines counts the file's lines, so a
		// partial line's start may be left out.
		{"?tailLines=2", "ee\nfour\n"},
		{"?tailLines=0", ""},
		{"?limitBytes=6", "one\ntw"},
		{"?timestamps=true&tailLines=1", "2026-01-01T00:00:04.000000000Z four\n"},
		{"?sinceTime=2026-01-01T00:00:03Z", "three\nfour\n"},
		{"?previous=true", "previous instance\n"},
		{"?sinceSeconds=1", ""}, // every line is years old
	} {
		code, body := get(t, "GET", base+"/containerLogs/default/p/c"+tc.query, "admin")
		if code != 200 || body != tc.want {
			t.Errorf("%s: %d %q, want %q", tc.query, code, body, tc.want)
		}
	}
}

func TestContainerLogsErrors(t *testing.T) {
	w, _ := newWorld(t, logLines...)
	base, _ := newServer(t, w)
	for _, tc := range []struct {
		path string
		code int
		msg  string
	}{
		{"/containerLogs/default/p/c?tailLines=-1", 400, "tailLines"},
		{"/containerLogs/default/p/c?tailLines=x", 400, "tailLines"},
		{"/containerLogs/default/p/c?limitBytes=0", 400, "limitBytes"},
		{"/containerLogs/default/p/c?sinceSeconds=0", 400, "sinceSeconds"},
		{"/containerLogs/default/p/c?sinceTime=yesterday", 400, "sinceTime"},
		{"/containerLogs/default/p/c?sinceSeconds=5&sinceTime=2026-01-01T00:00:00Z", 400, "both"},
		{"/containerLogs/default/p/c?follow=maybe", 400, "follow"},
		{"/containerLogs/default/nope/c", 404, `pod "default/nope" does not exist`},
		{"/containerLogs/other/p/c", 404, "does not exist"},
		{"/containerLogs/default/p/nope", 404, `container "nope" not found in pod "default/p"`},
		{"/containerLogs/default/p/w", 400, `container "w" in pod "p" is waiting to start: ContainerCreating`},
		{"/containerLogs/default/p/w?previous=true", 400, `previous terminated container "w" in pod "p" not found`},
	} {
		code, body := get(t, "GET", base+tc.path, "admin")
		if code != tc.code || !strings.Contains(body, tc.msg) {
			t.Errorf("%s: %d %q, want %d with %q", tc.path, code, body, tc.code, tc.msg)
		}
	}
	w.mu.Lock()
	w.down = true
	w.mu.Unlock()
	if code, body := get(t, "GET", base+"/containerLogs/default/p/c", "admin"); code != http.StatusServiceUnavailable {
		t.Errorf("runtime down: %d %q, want 503", code, body)
	}
	if code, _ := get(t, "GET", base+"/healthz", "admin"); code != 200 {
		t.Errorf("healthz with the runtime down: %d", code)
	}
}

// A container waiting because its start failed gets the kubelet's answer
// for the reasons the agent reports (runtime's start errors).
func TestContainerLogsWaitingReasons(t *testing.T) {
	w, _ := newWorld(t, logLines...)
	waiting := func(name string, reason error) v1.ContainerStatus {
		return v1.ContainerStatus{Name: name, State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: reason.Error(), Message: "details"}}}
	}
	w.pods = append(w.pods, &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "q", UID: "q-uid"},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "pull"}, {Name: "backoff"}, {Name: "config"}}},
		Status: v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{
			waiting("pull", runtime.ErrImagePull),
			waiting("backoff", runtime.ErrImagePullBackOff),
			waiting("config", runtime.ErrCreateContainerConfig),
		}},
	})
	base, _ := newServer(t, w)
	for c, want := range map[string]string{
		"pull":    `container "pull" in pod "q" is waiting to start: image can't be pulled`,
		"backoff": `container "backoff" in pod "q" is waiting to start: trying and failing to pull image`,
		"config":  `container "config" in pod "q" is waiting to start: CreateContainerConfigError`,
	} {
		code, body := get(t, "GET", base+"/containerLogs/default/q/"+c, "admin")
		if code != 400 || !strings.Contains(body, want) {
			t.Errorf("%s: %d %q, want 400 with %q", c, code, body, want)
		}
	}
}

// A followed log gets every line written while it follows, once, in order,
// and ends when the container stops.
func TestContainerLogsFollow(t *testing.T) {
	w, path := newWorld(t, "2026-01-01T00:00:00.000000000Z stdout F line 0")
	base, _ := newServer(t, w)
	req, _ := http.NewRequest("GET", base+"/containerLogs/default/p/c?follow=true", nil)
	req.Header.Set("Authorization", "Bearer admin")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	sc := bufio.NewScanner(resp.Body)
	const n = 50
	for i := 0; i <= n; i++ {
		if !sc.Scan() {
			t.Fatalf("log ended after %d lines: %v", i, sc.Err())
		}
		if want := fmt.Sprintf("line %d", i); sc.Text() != want {
			t.Fatalf("line %d: %q, want %q", i, sc.Text(), want)
		}
		if i < n {
			writeLines(t, path, fmt.Sprintf("%s stdout F line %d", time.Unix(int64(i), 0).UTC().Format(time.RFC3339Nano), i+1))
		}
	}
	// The container writes its last line and stops: the reader reads the
	// line, then sees the stop at its one-second check and ends the
	// response. (Stopping first let a check that fell between the stop and
	// the write end the response without the line: it failed under load.)
	writeLines(t, path, "2026-01-01T00:01:00.000000000Z stdout F last")
	w.setRunning("c1", false)
	var rest []string
	for sc.Scan() {
		rest = append(rest, sc.Text())
	}
	if len(rest) != 1 || rest[0] != "last" {
		t.Errorf("after the stop: %q, want [last]", rest)
	}
}
