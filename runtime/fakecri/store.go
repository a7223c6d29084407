package fakecri

import (
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// podUIDLabel is the kubelet's pod UID label. Sandboxes and containers are
// indexed by it, so that the per-pod lookups of a kubelet-like client
// (a label selector on the pod UID) do not scan the whole runtime.
const podUIDLabel = "io.kubernetes.pod.uid"

// sandboxName is what a sandbox reserves: a second sandbox with the same
// metadata is refused, as containerd refuses it.
type sandboxName struct {
	name, namespace, uid string
	attempt              uint32
}

func sandboxNameOf(md *runtimeapi.PodSandboxMetadata) sandboxName {
	return sandboxName{md.GetName(), md.GetNamespace(), md.GetUid(), md.GetAttempt()}
}

// containerName is what a container reserves in its sandbox.
type containerName struct {
	name    string
	attempt uint32
}

func containerNameOf(md *runtimeapi.ContainerMetadata) containerName {
	return containerName{md.GetName(), md.GetAttempt()}
}

// The store: sandboxes and containers by ID, and the indexes beside them.
// Every change goes through these helpers, which keep the indexes in step;
// the caller holds s.mu.

func (s *Server) addSandboxLocked(sb *sandbox) {
	s.sandboxes[sb.id] = sb
	s.sandboxNames[sandboxNameOf(sb.config.GetMetadata())] = sb.id
	if uid := sb.config.GetLabels()[podUIDLabel]; uid != "" {
		m := s.podSandboxes[uid]
		if m == nil {
			m = map[string]*sandbox{}
			s.podSandboxes[uid] = m
		}
		m[sb.id] = sb
	}
}

// removeSandboxLocked removes a sandbox and its containers.
func (s *Server) removeSandboxLocked(sb *sandbox) {
	for _, c := range sb.containers {
		s.removeContainerLocked(c)
	}
	delete(s.sandboxes, sb.id)
	if name := sandboxNameOf(sb.config.GetMetadata()); s.sandboxNames[name] == sb.id {
		delete(s.sandboxNames, name)
	}
	if uid := sb.config.GetLabels()[podUIDLabel]; uid != "" {
		if m := s.podSandboxes[uid]; m != nil {
			delete(m, sb.id)
			if len(m) == 0 {
				delete(s.podSandboxes, uid)
			}
		}
	}
}

func (s *Server) addContainerLocked(sb *sandbox, c *container) {
	s.containers[c.id] = c
	if sb.containers == nil {
		sb.containers = map[string]*container{}
	}
	sb.containers[c.id] = c
	if uid := c.config.GetLabels()[podUIDLabel]; uid != "" {
		m := s.podContainers[uid]
		if m == nil {
			m = map[string]*container{}
			s.podContainers[uid] = m
		}
		m[c.id] = c
	}
}

func (s *Server) removeContainerLocked(c *container) {
	s.cancelExitLocked(c)
	delete(s.containers, c.id)
	if sb := s.sandboxes[c.sandboxID]; sb != nil {
		delete(sb.containers, c.id)
	}
	if uid := c.config.GetLabels()[podUIDLabel]; uid != "" {
		if m := s.podContainers[uid]; m != nil {
			delete(m, c.id)
			if len(m) == 0 {
				delete(s.podContainers, uid)
			}
		}
	}
}

// eachSandboxLocked calls visit for every sandbox that may match f (an
// index narrows the walk; visit still applies the whole filter).
func (s *Server) eachSandboxLocked(f *runtimeapi.PodSandboxFilter, visit func(*sandbox)) {
	switch {
	case f.GetId() != "":
		if sb := lookupByPrefix(s.sandboxes, f.GetId()); sb != nil {
			visit(sb)
		}
	case f.GetLabelSelector()[podUIDLabel] != "":
		for _, sb := range s.podSandboxes[f.GetLabelSelector()[podUIDLabel]] {
			visit(sb)
		}
	default:
		for _, sb := range s.sandboxes {
			visit(sb)
		}
	}
}

// eachContainerLocked calls visit for every container that may match f.
func (s *Server) eachContainerLocked(f *runtimeapi.ContainerFilter, visit func(*container)) {
	switch {
	case f.GetId() != "":
		if c := lookupByPrefix(s.containers, f.GetId()); c != nil {
			visit(c)
		}
	case f.GetPodSandboxId() != "":
		if sb := s.sandboxes[f.GetPodSandboxId()]; sb != nil {
			for _, c := range sb.containers {
				visit(c)
			}
		}
	case f.GetLabelSelector()[podUIDLabel] != "":
		for _, c := range s.podContainers[f.GetLabelSelector()[podUIDLabel]] {
			visit(c)
		}
	default:
		for _, c := range s.containers {
			visit(c)
		}
	}
}

// lookupByPrefix finds the object whose ID is id or, as containerd's ID
// index does, the only one whose ID starts with id. An ambiguous prefix
// finds nothing.
func lookupByPrefix[T any](m map[string]*T, id string) *T {
	if v, ok := m[id]; ok {
		return v
	}
	var found *T
	for k, v := range m {
		if strings.HasPrefix(k, id) {
			if found != nil {
				return nil
			}
			found = v
		}
	}
	return found
}
