package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/runtime"
)

// servePods answers the pods the agent runs as a v1.PodList, as the
// kubelet's /pods.
func (s *Server) servePods(w http.ResponseWriter, _ *http.Request) {
	list := v1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}}
	for _, p := range s.listPods() {
		list.Items = append(list.Items, *p)
	}
	writeJSON(w, list)
}

func (s *Server) serveHealthz(w http.ResponseWriter, _ *http.Request) {
	if s.opts.Healthy != nil {
		if err := s.opts.Healthy(); err != nil {
			http.Error(w, fmt.Sprintf("unhealthy: %v", err), http.StatusInternalServerError)
			return
		}
	}
	_, _ = fmt.Fprint(w, "ok")
}

func (s *Server) listPods() []*v1.Pod {
	if s.opts.Pods == nil {
		return nil
	}
	return s.opts.Pods.ListPods()
}

// httpError is an error with the status code to answer it with.
type httpError struct {
	code int
	msg  string
}

func (e *httpError) Error() string { return e.msg }

func errorf(code int, format string, args ...any) error {
	return &httpError{code: code, msg: fmt.Sprintf(format, args...)}
}

// writeError answers err: its own code for an httpError, 404 for
// runtime.ErrNotFound, 503 for an unavailable or slow runtime, 500 else.
func writeError(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	var he *httpError
	switch {
	case errors.As(err, &he):
		code = he.code
	case errors.Is(err, runtime.ErrNotFound):
		code = http.StatusNotFound
	case errors.Is(err, runtime.ErrUnavailable), errors.Is(err, runtime.ErrDeadlineExceeded),
		errors.Is(err, context.DeadlineExceeded):
		code = http.StatusServiceUnavailable
	}
	http.Error(w, err.Error(), code)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// findPod finds the pod namespace/name (and, when given, UID) among the
// agent's pods: 404 with the kubelet's message when there is none.
func (s *Server) findPod(namespace, name string, uid types.UID) (*v1.Pod, error) {
	for _, p := range s.listPods() {
		if p.Namespace == namespace && p.Name == name {
			if uid != "" && p.UID != uid {
				return nil, errorf(http.StatusNotFound, "pod %s/%s with UID %s does not exist (its UID is %s)", namespace, name, uid, p.UID)
			}
			return p, nil
		}
	}
	return nil, errorf(http.StatusNotFound, "pod %q does not exist", namespace+"/"+name)
}

// hasContainer reports whether the pod's spec has a container (init,
// regular or ephemeral) of that name.
func hasContainer(pod *v1.Pod, name string) bool {
	for _, c := range pod.Spec.InitContainers {
		if c.Name == name {
			return true
		}
	}
	for _, c := range pod.Spec.Containers {
		if c.Name == name {
			return true
		}
	}
	for _, c := range pod.Spec.EphemeralContainers {
		if c.Name == name {
			return true
		}
	}
	return false
}

// containerStatus returns the status of the named container.
func containerStatus(pod *v1.Pod, name string) (v1.ContainerStatus, bool) {
	for _, l := range [][]v1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses, pod.Status.EphemeralContainerStatuses} {
		for _, cs := range l {
			if cs.Name == name {
				return cs, true
			}
		}
	}
	return v1.ContainerStatus{}, false
}

// runtimeID strips the "TYPE://" of a status containerID.
func runtimeID(containerID string) string {
	if _, id, ok := strings.Cut(containerID, "://"); ok {
		return id
	}
	return containerID
}

// runningContainer finds the running container of pod for exec and attach.
func (s *Server) runningContainer(r *http.Request) (*v1.Pod, string, error) {
	pod, err := s.findPod(r.PathValue("namespace"), r.PathValue("pod"), types.UID(r.PathValue("uid")))
	if err != nil {
		return nil, "", err
	}
	name := r.PathValue("container")
	if !hasContainer(pod, name) {
		return nil, "", errorf(http.StatusNotFound, "container %q not found in pod %q", name, pod.Namespace+"/"+pod.Name)
	}
	cs, ok := containerStatus(pod, name)
	if !ok || cs.State.Running == nil || cs.ContainerID == "" {
		return nil, "", errorf(http.StatusBadRequest, "container %q in pod %q is not running", name, pod.Namespace+"/"+pod.Name)
	}
	return pod, runtimeID(cs.ContainerID), nil
}
