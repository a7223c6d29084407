package fakecri

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

type sandbox struct {
	id        string
	config    *runtimeapi.PodSandboxConfig
	handler   string
	state     runtimeapi.PodSandboxState
	createdAt int64
	ip        string
	// containers are the containers created in the sandbox, by ID.
	containers map[string]*container
}

type container struct {
	id         string
	sandboxID  string
	config     *runtimeapi.ContainerConfig
	imageRef   string
	state      runtimeapi.ContainerState
	createdAt  int64
	startedAt  int64
	finishedAt int64
	exitCode   int32
	reason     string
	message    string
	// resources are the container's resources: its config's, then the
	// last UpdateContainerResources'.
	resources *runtimeapi.ContainerResources
	// script is Options.Script's answer at start; nil without one (the
	// arguments decide, see behaviour).
	script *ContainerScript
	// timedExit is the scripted exit pending in the server's exit queue,
	// nil when none is (script.go).
	timedExit *timedExit
}

// Container behaviour, chosen by the container's first argument, the same
// words the project's local pause image understands:
//
//	exit CODE   exits with CODE as soon as it has started
//	hang        ignores SIGTERM: StopContainer waits its whole timeout, then kills (137)
//	anything    runs until stopped; stopping makes it exit 0
func behaviour(c *runtimeapi.ContainerConfig) (mode string, code int32) {
	args := append(slices.Clone(c.GetCommand()), c.GetArgs()...)
	for i, a := range args {
		switch a {
		case "exit":
			if i+1 < len(args) {
				n, _ := strconv.Atoi(args[i+1])
				return "exit", int32(n)
			}
			return "exit", 0
		case "hang":
			return "hang", 0
		}
	}
	return "run", 0
}

func (s *Server) newIDLocked(kind, name string) string {
	s.nextID++
	sum := sha256.Sum256(fmt.Appendf(nil, "%s/%s/%d", kind, name, s.nextID))
	return hex.EncodeToString(sum[:])
}

func notFound(kind, id string) error {
	return status.Errorf(codes.NotFound, "%s %q not found", kind, id)
}

type runtimeService struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	s *Server
}

func (r *runtimeService) Version(context.Context, *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	o := r.s.opts
	return &runtimeapi.VersionResponse{Version: "0.1.0", RuntimeName: o.RuntimeName, RuntimeVersion: o.RuntimeVersion, RuntimeApiVersion: o.APIVersion}, nil
}

func (r *runtimeService) Status(context.Context, *runtimeapi.StatusRequest) (*runtimeapi.StatusResponse, error) {
	net := &runtimeapi.RuntimeCondition{Type: runtimeapi.NetworkReady, Status: r.s.opts.NetworkReady}
	if !net.Status {
		net.Reason, net.Message = "NetworkPluginNotReady", "fakecri: no pod network; use the node network"
	}
	return &runtimeapi.StatusResponse{Status: &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{
		{Type: runtimeapi.RuntimeReady, Status: true}, net,
	}}}, nil
}

func (r *runtimeService) RunPodSandbox(_ context.Context, req *runtimeapi.RunPodSandboxRequest) (*runtimeapi.RunPodSandboxResponse, error) {
	cfg := req.GetConfig()
	md := cfg.GetMetadata()
	if md.GetName() == "" || md.GetNamespace() == "" || md.GetUid() == "" {
		return nil, status.Error(codes.InvalidArgument, "sandbox config: metadata name, namespace and uid are required")
	}
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if id, ok := s.sandboxNames[sandboxNameOf(md)]; ok {
		return nil, status.Errorf(codes.AlreadyExists, "sandbox name %q (attempt %d) is reserved for %q", md.GetName()+"_"+md.GetNamespace(), md.GetAttempt(), id)
	}
	sb := &sandbox{
		id:        s.newIDLocked("sandbox", md.GetUid()),
		config:    proto.Clone(cfg).(*runtimeapi.PodSandboxConfig),
		handler:   req.GetRuntimeHandler(),
		state:     runtimeapi.PodSandboxState_SANDBOX_READY,
		createdAt: s.now(),
	}
	if cfg.GetLinux().GetSecurityContext().GetNamespaceOptions().GetNetwork() != runtimeapi.NamespaceMode_NODE {
		sb.ip = s.opts.PodIPPrefix + strconv.Itoa(s.nextIP)
		s.nextIP++
	}
	s.addSandboxLocked(sb)
	return &runtimeapi.RunPodSandboxResponse{PodSandboxId: sb.id}, nil
}

// StopPodSandbox stops the sandbox and kills its containers.
func (r *runtimeService) StopPodSandbox(_ context.Context, req *runtimeapi.StopPodSandboxRequest) (*runtimeapi.StopPodSandboxResponse, error) {
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	sb, ok := s.sandboxes[req.GetPodSandboxId()]
	if !ok {
		// Idempotent, as the CRI asks and containerd v2 does: an unknown
		// sandbox is already stopped (and removed).
		return &runtimeapi.StopPodSandboxResponse{}, nil
	}
	s.stopSandboxLocked(sb)
	return &runtimeapi.StopPodSandboxResponse{}, nil
}

func (s *Server) stopSandboxLocked(sb *sandbox) {
	for _, c := range sb.containers {
		if c.state != runtimeapi.ContainerState_CONTAINER_EXITED {
			s.exitLocked(c, 137, "Error", "killed: sandbox stopped")
		}
	}
	sb.state = runtimeapi.PodSandboxState_SANDBOX_NOTREADY
}

// RemovePodSandbox removes a stopped sandbox and its containers. A ready
// sandbox is refused (stop it first); an unknown one is already removed.
func (r *runtimeService) RemovePodSandbox(_ context.Context, req *runtimeapi.RemovePodSandboxRequest) (*runtimeapi.RemovePodSandboxResponse, error) {
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	sb, ok := s.sandboxes[req.GetPodSandboxId()]
	if !ok {
		return &runtimeapi.RemovePodSandboxResponse{}, nil
	}
	if sb.state == runtimeapi.PodSandboxState_SANDBOX_READY {
		return nil, status.Errorf(codes.FailedPrecondition, "sandbox %q is running; stop it before removing it", sb.id)
	}
	s.removeSandboxLocked(sb)
	return &runtimeapi.RemovePodSandboxResponse{}, nil
}

func (r *runtimeService) PodSandboxStatus(_ context.Context, req *runtimeapi.PodSandboxStatusRequest) (*runtimeapi.PodSandboxStatusResponse, error) {
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	sb, ok := s.sandboxes[req.GetPodSandboxId()]
	if !ok {
		return nil, notFound("sandbox", req.GetPodSandboxId())
	}
	return &runtimeapi.PodSandboxStatusResponse{Status: sb.statusProto()}, nil
}

func (sb *sandbox) statusProto() *runtimeapi.PodSandboxStatus {
	st := &runtimeapi.PodSandboxStatus{
		Id:             sb.id,
		Metadata:       proto.Clone(sb.config.GetMetadata()).(*runtimeapi.PodSandboxMetadata),
		State:          sb.state,
		CreatedAt:      sb.createdAt,
		Network:        &runtimeapi.PodSandboxNetworkStatus{Ip: sb.ip},
		Labels:         maps.Clone(sb.config.GetLabels()),
		Annotations:    maps.Clone(sb.config.GetAnnotations()),
		RuntimeHandler: sb.handler,
		Linux: &runtimeapi.LinuxPodSandboxStatus{Namespaces: &runtimeapi.Namespace{
			Options: proto.Clone(sb.namespaceOptions()).(*runtimeapi.NamespaceOption),
		}},
	}
	return st
}

func (sb *sandbox) namespaceOptions() *runtimeapi.NamespaceOption {
	if o := sb.config.GetLinux().GetSecurityContext().GetNamespaceOptions(); o != nil {
		return o
	}
	return &runtimeapi.NamespaceOption{}
}

// listProto returns the sandbox as ListPodSandbox lists it. The metadata,
// labels and annotations are the config's own, not copies: a config is
// never changed once stored, and the response is only marshalled.
func (sb *sandbox) listProto() *runtimeapi.PodSandbox {
	return &runtimeapi.PodSandbox{
		Id:             sb.id,
		Metadata:       sb.config.GetMetadata(),
		State:          sb.state,
		CreatedAt:      sb.createdAt,
		Labels:         sb.config.GetLabels(),
		Annotations:    sb.config.GetAnnotations(),
		RuntimeHandler: sb.handler,
	}
}

func matchLabels(selector, labels map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func (r *runtimeService) ListPodSandbox(_ context.Context, req *runtimeapi.ListPodSandboxRequest) (*runtimeapi.ListPodSandboxResponse, error) {
	f := req.GetFilter()
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	resp := &runtimeapi.ListPodSandboxResponse{}
	s.eachSandboxLocked(f, func(sb *sandbox) {
		if f.GetId() != "" && !strings.HasPrefix(sb.id, f.GetId()) {
			return
		}
		if f.GetState() != nil && f.GetState().GetState() != sb.state {
			return
		}
		if !matchLabels(f.GetLabelSelector(), sb.config.GetLabels()) {
			return
		}
		resp.Items = append(resp.Items, sb.listProto())
	})
	slices.SortFunc(resp.Items, func(a, b *runtimeapi.PodSandbox) int {
		return cmp.Or(cmp.Compare(a.CreatedAt, b.CreatedAt), cmp.Compare(a.Id, b.Id))
	})
	return resp, nil
}

func (r *runtimeService) CreateContainer(_ context.Context, req *runtimeapi.CreateContainerRequest) (*runtimeapi.CreateContainerResponse, error) {
	cfg := req.GetConfig()
	md := cfg.GetMetadata()
	if md.GetName() == "" {
		return nil, status.Error(codes.InvalidArgument, "container config: metadata name is required")
	}
	if cfg.GetImage().GetImage() == "" {
		return nil, status.Errorf(codes.InvalidArgument, "container %q: image is required", md.GetName())
	}
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	sb, ok := s.sandboxes[req.GetPodSandboxId()]
	if !ok {
		return nil, notFound("sandbox", req.GetPodSandboxId())
	}
	if sb.state != runtimeapi.PodSandboxState_SANDBOX_READY {
		return nil, status.Errorf(codes.FailedPrecondition, "sandbox %q is not ready", sb.id)
	}
	img := s.findImageLocked(cfg.GetImage().GetImage())
	if img == nil {
		return nil, status.Errorf(codes.NotFound, "container %q: image %q not found: pull it first", md.GetName(), cfg.GetImage().GetImage())
	}
	for _, c := range sb.containers {
		if containerNameOf(c.config.GetMetadata()) == containerNameOf(md) {
			return nil, status.Errorf(codes.AlreadyExists, "container name %q (attempt %d) is reserved for %q", md.GetName(), md.GetAttempt(), c.id)
		}
	}
	if ns := cfg.GetLinux().GetSecurityContext().GetNamespaceOptions(); ns.GetPid() == runtimeapi.NamespaceMode_TARGET {
		if err := validateTargetLocked(sb, ns.GetTargetId()); err != nil {
			return nil, err
		}
	}
	c := &container{
		id:        s.newIDLocked("container", sb.id+"/"+md.GetName()),
		sandboxID: sb.id,
		config:    proto.Clone(cfg).(*runtimeapi.ContainerConfig),
		imageRef:  img.id,
		state:     runtimeapi.ContainerState_CONTAINER_CREATED,
		createdAt: s.now(),
	}
	if lr := cfg.GetLinux().GetResources(); lr != nil {
		c.resources = &runtimeapi.ContainerResources{Linux: proto.Clone(lr).(*runtimeapi.LinuxContainerResources)}
	}
	s.addContainerLocked(sb, c)
	return &runtimeapi.CreateContainerResponse{ContainerId: c.id}, nil
}

// validateTargetLocked checks the target of a container that joins
// another's PID namespace (NamespaceMode_TARGET, an ephemeral container's),
// as containerd does: a running container of the same sandbox. containerd
// answers with a plain error (gRPC Unknown), and so does fakecri.
func validateTargetLocked(sb *sandbox, id string) error {
	t, ok := sb.containers[id]
	switch {
	case id == "" || !ok:
		return status.Errorf(codes.Unknown, "invalid target container: container %q does not exist in sandbox %s", id, sb.id)
	case t.state != runtimeapi.ContainerState_CONTAINER_RUNNING:
		return status.Errorf(codes.Unknown, "invalid target container: container %q is not running - in state %s", id, t.state)
	}
	return nil
}

func (r *runtimeService) StartContainer(_ context.Context, req *runtimeapi.StartContainerRequest) (*runtimeapi.StartContainerResponse, error) {
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.containers[req.GetContainerId()]
	if !ok {
		return nil, notFound("container", req.GetContainerId())
	}
	if c.state != runtimeapi.ContainerState_CONTAINER_CREATED {
		return nil, status.Errorf(codes.FailedPrecondition, "container %q is %s, not CREATED", c.id, c.state)
	}
	sb := s.sandboxes[c.sandboxID]
	if sb == nil || sb.state != runtimeapi.PodSandboxState_SANDBOX_READY {
		return nil, status.Errorf(codes.FailedPrecondition, "container %q: sandbox %q is not ready", c.id, c.sandboxID)
	}
	now := s.opts.Clock.Now()
	c.state = runtimeapi.ContainerState_CONTAINER_RUNNING
	c.startedAt = now.UnixNano()
	c.script = s.scriptLocked(sb, c)
	s.startLogLocked(c)
	switch sc := c.script; {
	case sc != nil && sc.Exit && sc.RunFor > 0:
		s.armExitLocked(c, now.Add(sc.RunFor), sc.ExitCode)
	case sc != nil && sc.Exit:
		s.exitLocked(c, sc.ExitCode, exitReason(sc.ExitCode), "")
	case sc != nil:
		// Runs until stopped.
	default:
		if mode, code := behaviour(c.config); mode == "exit" {
			s.exitLocked(c, code, exitReason(code), "")
		}
	}
	return &runtimeapi.StartContainerResponse{}, nil
}

// exitLocked makes the container exit (a created one never started); a
// pending timed exit is cancelled.
func (s *Server) exitLocked(c *container, code int32, reason, message string) {
	s.cancelExitLocked(c)
	if c.state == runtimeapi.ContainerState_CONTAINER_CREATED {
		c.startedAt = 0
	}
	c.state = runtimeapi.ContainerState_CONTAINER_EXITED
	c.finishedAt = s.now()
	c.exitCode, c.reason, c.message = code, reason, message
}

// StopContainer stops a container: it exits 0 at once; a "hang" container
// is killed (137) after the whole timeout; a scripted one exits with its
// TermExitCode after its TermDelay, or is killed at the timeout when that
// is shorter. While it waits, the lock is released, and a container that
// exits by itself meanwhile keeps its own exit.
func (r *runtimeService) StopContainer(ctx context.Context, req *runtimeapi.StopContainerRequest) (*runtimeapi.StopContainerResponse, error) {
	s := r.s
	s.mu.Lock()
	c, ok := s.containers[req.GetContainerId()]
	if !ok {
		// Idempotent, as the CRI asks and containerd v2 does: an unknown
		// container is already stopped (and removed).
		s.mu.Unlock()
		return &runtimeapi.StopContainerResponse{}, nil
	}
	s.stopTimes[c.id] = req.GetTimeout()
	if c.state == runtimeapi.ContainerState_CONTAINER_EXITED {
		s.mu.Unlock()
		return &runtimeapi.StopContainerResponse{}, nil
	}
	wait, code, reason, message := c.termination(time.Duration(req.GetTimeout()) * time.Second)
	if wait <= 0 {
		s.exitLocked(c, code, reason, message)
		s.mu.Unlock()
		return &runtimeapi.StopContainerResponse{}, nil
	}
	s.mu.Unlock()
	if err := s.wait(ctx, wait); err != nil {
		return nil, status.FromContextError(err).Err()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.state != runtimeapi.ContainerState_CONTAINER_EXITED {
		s.exitLocked(c, code, reason, message)
	}
	return &runtimeapi.StopContainerResponse{}, nil
}

// killedMessage is the message of a container killed at the end of its
// stop timeout.
const killedMessage = "killed after the grace period"

// termination says how a container that is not exited ends after a stop
// with the given timeout: how long after the stop, and with what exit.
func (c *container) termination(timeout time.Duration) (wait time.Duration, code int32, reason, message string) {
	if c.state != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return 0, 0, "Completed", ""
	}
	if sc := c.script; sc != nil {
		if sc.TermDelay > timeout {
			return timeout, 137, "Error", killedMessage
		}
		return sc.TermDelay, sc.TermExitCode, exitReason(sc.TermExitCode), ""
	}
	if mode, _ := behaviour(c.config); mode == "hang" {
		return timeout, 137, "Error", killedMessage
	}
	return 0, 0, "Completed", ""
}

// RemoveContainer removes a container; a running one is killed first (CRI
// semantics). An unknown one is already removed.
func (r *runtimeService) RemoveContainer(_ context.Context, req *runtimeapi.RemoveContainerRequest) (*runtimeapi.RemoveContainerResponse, error) {
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.containers[req.GetContainerId()]; ok {
		s.removeContainerLocked(c)
	}
	return &runtimeapi.RemoveContainerResponse{}, nil
}

func (r *runtimeService) ListContainers(_ context.Context, req *runtimeapi.ListContainersRequest) (*runtimeapi.ListContainersResponse, error) {
	f := req.GetFilter()
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	resp := &runtimeapi.ListContainersResponse{}
	s.eachContainerLocked(f, func(c *container) {
		if f.GetId() != "" && !strings.HasPrefix(c.id, f.GetId()) {
			return
		}
		if f.GetPodSandboxId() != "" && f.GetPodSandboxId() != c.sandboxID {
			return
		}
		if f.GetState() != nil && f.GetState().GetState() != c.state {
			return
		}
		if !matchLabels(f.GetLabelSelector(), c.config.GetLabels()) {
			return
		}
		// The config's own metadata, image, labels and annotations: a
		// config is never changed once stored.
		resp.Containers = append(resp.Containers, &runtimeapi.Container{
			Id:           c.id,
			PodSandboxId: c.sandboxID,
			Metadata:     c.config.GetMetadata(),
			Image:        c.config.GetImage(),
			ImageRef:     c.imageRef,
			ImageId:      c.imageRef,
			State:        c.state,
			CreatedAt:    c.createdAt,
			Labels:       c.config.GetLabels(),
			Annotations:  c.config.GetAnnotations(),
		})
	})
	slices.SortFunc(resp.Containers, func(a, b *runtimeapi.Container) int {
		return cmp.Or(cmp.Compare(a.CreatedAt, b.CreatedAt), cmp.Compare(a.Id, b.Id))
	})
	return resp, nil
}

func (r *runtimeService) ContainerStatus(_ context.Context, req *runtimeapi.ContainerStatusRequest) (*runtimeapi.ContainerStatusResponse, error) {
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.containers[req.GetContainerId()]
	if !ok {
		return nil, notFound("container", req.GetContainerId())
	}
	return &runtimeapi.ContainerStatusResponse{Status: &runtimeapi.ContainerStatus{
		Id:          c.id,
		Metadata:    proto.Clone(c.config.GetMetadata()).(*runtimeapi.ContainerMetadata),
		State:       c.state,
		CreatedAt:   c.createdAt,
		StartedAt:   c.startedAt,
		FinishedAt:  c.finishedAt,
		ExitCode:    c.exitCode,
		Image:       proto.Clone(c.config.GetImage()).(*runtimeapi.ImageSpec),
		ImageRef:    c.imageRef,
		ImageId:     c.imageRef,
		Reason:      c.reason,
		Message:     c.message,
		Labels:      maps.Clone(c.config.GetLabels()),
		Annotations: maps.Clone(c.config.GetAnnotations()),
		Resources:   cloneResources(c.resources),
		Mounts:      cloneMounts(c.config.GetMounts()),
		LogPath:     s.logPathLocked(c),
	}}, nil
}

// logPathLocked is where a runtime writes the container's log: the
// sandbox's LogDirectory joined with the container's LogPath, "" unless
// both are set (logs.go writes it).
func (s *Server) logPathLocked(c *container) string {
	sb := s.sandboxes[c.sandboxID]
	if sb == nil || sb.config.GetLogDirectory() == "" || c.config.GetLogPath() == "" {
		return ""
	}
	return filepath.Join(sb.config.GetLogDirectory(), c.config.GetLogPath())
}
