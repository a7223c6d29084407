package chaos

import (
	"context"
	"strconv"
	"time"

	"google.golang.org/grpc/codes"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podlife/podlife/runtime"
	"github.com/podlife/podlife/runtime/fakecri"
)

// criMethods are the CRI methods podlife calls, plus every method at once.
var criMethods = []string{
	"Version", "Status", "RunPodSandbox", "StopPodSandbox", "RemovePodSandbox", "PodSandboxStatus", "ListPodSandbox",
	"CreateContainer", "StartContainer", "StopContainer", "RemoveContainer", "ListContainers", "ContainerStatus",
	"ImageStatus", "PullImage", fakecri.AnyMethod,
}

// terminationMethods are the calls a termination depends on.
var terminationMethods = []string{"StopContainer", "StopPodSandbox", "RemoveContainer", "RemovePodSandbox"}

// notFoundMethods may answer "not found" for an object that still exists:
// the stop of a container or sandbox that seemed to vanish meanwhile. The
// CRI adapter counts it as stopped; the agent must notice, from the next
// status read, that it still runs. (A false "not found" on a status read or a
// remove would leave the agent with a view no real runtime gives: a listed
// object that vanishes when read is gone for good. A lost object is made
// with Forget instead.)
var notFoundMethods = []string{"StopContainer", "StopPodSandbox"}

var errorCodes = []codes.Code{codes.Unavailable, codes.Internal, codes.DeadlineExceeded, codes.Unknown, codes.ResourceExhausted, codes.Aborted}

// maxLiveFaults bounds the faults with a lifetime active at once.
const maxLiveFaults = 6

func pick[T any](s *soak, xs []T) T { return xs[s.rng.IntN(len(xs))] }

// step plays one random event of the schedule.
func (s *soak) step(now time.Time) {
	switch r := s.rng.IntN(100); {
	case r < 30:
		if len(s.statics) > 0 {
			s.staticEvent(pick(s, s.statics), now)
		}
	case r < 70:
		if len(s.apis) > 0 {
			s.apiEvent(pick(s, s.apis), now)
		}
	case r < 78:
		s.crash()
	case r < 80:
		s.forget()
	default:
		s.fault(now)
	}
}

// --- static pods (manifest folder) ---

func (s *soak) staticEvent(st *staticSlot, now time.Time) {
	switch {
	case !st.readdAt.IsZero():
	case !st.present:
		st.grace, st.hang = s.rng.IntN(4), s.rng.IntN(10) < 3
		s.staticAdd(st, now)
	default:
		switch r := s.rng.IntN(100); {
		case r < 10:
			// A user deletes the mirror pod in the API: the agent must
			// create it again.
			if s.mirrors.userDelete(st.fullName()) {
				s.tr.add("mirror-delete", "%s", st.fullName())
			}
		case r < 45:
			st.version++
			if s.rng.IntN(3) == 0 {
				st.grace, st.hang = s.rng.IntN(4), s.rng.IntN(10) < 3
			}
			s.tr.add("static-edit", "%s v%d grace=%d hang=%v", st.name(), st.version, st.grace, st.hang)
			s.writeStatic(st)
		case r < 75:
			s.tr.add("static-remove", "%s", st.name())
			st.present = false
			s.removeStatic(st)
		default:
			// Removed, then back with the same content (the same UID)
			// while it terminates.
			st.readdAt = now.Add(s.between(100*time.Millisecond, 1500*time.Millisecond))
			s.tr.add("static-recreate", "%s removed, same UID back in %s", st.name(), st.readdAt.Sub(now).Round(time.Millisecond))
			s.removeStatic(st)
		}
	}
}

func (s *soak) staticAdd(st *staticSlot, _ time.Time) {
	st.present = true
	st.version++
	s.tr.add("static-add", "%s v%d grace=%d hang=%v", st.name(), st.version, st.grace, st.hang)
	s.writeStatic(st)
}

func (s *soak) staticReadd(st *staticSlot) {
	st.readdAt = time.Time{}
	s.tr.add("static-readd", "%s v%d", st.name(), st.version)
	s.writeStatic(st)
}

func (s *soak) writeStatic(st *staticSlot) {
	if err := writeManifest(s.dir, st); err != nil {
		s.t.Errorf("write manifest: %v", err)
	}
}

func (s *soak) removeStatic(st *staticSlot) {
	if err := removeManifest(s.dir, st); err != nil {
		s.t.Errorf("remove manifest: %v", err)
	}
}

// --- API pods (channel source) ---

func (s *soak) apiEvent(a *apiSlot, now time.Time) {
	switch {
	case a.readd != nil:
	case a.pod == nil:
		s.apiCreate(a)
	case a.deleting():
		if s.rng.IntN(2) == 0 && *a.pod.DeletionGracePeriodSeconds > 0 {
			// A second delete with a shorter grace period.
			p := a.pod.DeepCopy()
			g := s.rng.Int64N(*p.DeletionGracePeriodSeconds)
			p.DeletionGracePeriodSeconds = &g
			s.tr.add("api-shorten", "%s grace=%d", p.UID, g)
			a.pod = p
		} else {
			s.tr.add("api-force-delete", "%s (was deleting)", a.pod.UID)
			a.pod = nil
		}
		s.apiDirty = true
	default:
		p := a.pod.DeepCopy()
		switch r := s.rng.IntN(100); {
		case r < 25:
			p.Labels["rev"] = p.Labels["rev"] + "x"
			s.tr.add("api-update", "%s labels", p.UID)
		case r < 40:
			for i := range p.Spec.Containers {
				p.Spec.Containers[i].Args[1] += "x" // a new container hash
			}
			s.tr.add("api-update-spec", "%s", p.UID)
		case r < 70:
			g := *p.Spec.TerminationGracePeriodSeconds
			if s.rng.IntN(3) == 0 {
				g = s.rng.Int64N(g + 1)
			}
			ts := metav1.NewTime(now)
			p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &ts, &g
			s.tr.add("api-delete", "%s grace=%d", p.UID, g)
		case r < 85:
			if s.rng.IntN(2) == 0 {
				// The agent sees the grace-0 deletion before the object
				// goes.
				zero := int64(0)
				ts := metav1.NewTime(now)
				p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &ts, &zero
				a.pod = p
				s.apiDirty = true
				s.tr.add("api-delete", "%s grace=0", p.UID)
				if !s.flushAPI() {
					return
				}
			}
			s.tr.add("api-force-delete", "%s", p.UID)
			p = nil
		default:
			a.readd = a.pod
			a.readdAt = now.Add(s.between(100*time.Millisecond, 1500*time.Millisecond))
			s.tr.add("api-recreate", "%s force deleted, same UID back in %s", a.pod.UID, a.readdAt.Sub(now).Round(time.Millisecond))
			p = nil
		}
		a.pod = p
		s.apiDirty = true
	}
}

func (s *soak) apiCreate(a *apiSlot) {
	// Most pods run for ever; some run to completion (one container, which
	// a crash with code 0, or any code for Never, completes).
	policy, containers := v1.RestartPolicyAlways, 1+s.rng.IntN(2)
	switch r := s.rng.IntN(100); {
	case r < 15:
		policy, containers = v1.RestartPolicyOnFailure, 1
	case r < 30:
		policy, containers = v1.RestartPolicyNever, 1
	}
	a.pod = newAPIPod(a, s.rng.Int64N(4), s.rng.IntN(10) < 3, containers, policy)
	if s.rng.IntN(100) < 5 {
		a.pod.Labels[rejectLabel] = "true" // admission rejects it
	}
	s.tr.add("api-create", "%s grace=%d containers=%d restart=%s rejected=%v", a.pod.UID, *a.pod.Spec.TerminationGracePeriodSeconds, len(a.pod.Spec.Containers), policy, rejected(a.pod))
	s.apiDirty = true
}

func (s *soak) apiReadd(a *apiSlot) {
	a.incarnations++
	p := a.readd.DeepCopy()
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[incarnationKey] = strconv.Itoa(a.incarnations)
	a.pod, a.readd = p, nil
	s.tr.add("api-readd", "%s", a.pod.UID)
	s.apiDirty = true
}

// apiSnapshot returns the API server's pods: the API pods and the mirror
// pods, and notes the version of the mirrors it holds.
func (s *soak) apiSnapshot() []*v1.Pod {
	pods, version := s.mirrors.snapshot()
	s.mirrorsPushed = version
	for _, a := range s.apis {
		if a.pod != nil {
			pods = append(pods, a.pod)
		}
	}
	return pods
}

// --- the runtime behind the agent's back ---

// runningPods lists the runtime's pods, at most once a second.
func (s *soak) runningPods() []*runtime.Pod {
	if time.Since(s.listedAt) < time.Second {
		return s.listing
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	pods, err := s.inv.checker.GetPods(ctx, false)
	if err != nil {
		return s.listing
	}
	s.listing, s.listedAt = pods, time.Now()
	return pods
}

// crash makes a running container exit by itself.
func (s *soak) crash() {
	pods := s.runningPods()
	if len(pods) == 0 {
		return
	}
	p := pick(s, pods)
	if len(p.Containers) == 0 {
		return
	}
	c := pick(s, p.Containers)
	code := int32(s.rng.IntN(2))
	if err := s.srv.ExitContainer(c.ID.ID, code); err == nil {
		s.tr.add("crash", "%s container %s exit %d", p.ID, c.Name, code)
	}
}

// forget makes the runtime lose a container or a whole sandbox.
func (s *soak) forget() {
	pods := s.runningPods()
	if len(pods) == 0 {
		return
	}
	p := pick(s, pods)
	objs := append(append([]*runtime.Container(nil), p.Containers...), p.Sandboxes...)
	if len(objs) == 0 {
		return
	}
	o := pick(s, objs)
	if err := s.srv.Forget(o.ID.ID); err == nil {
		s.tr.add("forget", "%s %s", p.ID, o.ID.ID[:12])
	}
}

// fault injects a CRI fault: errors, false "not found", bursts of failed
// stops and removals, latency.
func (s *soak) fault(now time.Time) {
	rate := *flagFaultRate
	var f fakecri.Fault
	live := true
	switch r := s.rng.IntN(100); {
	case r < 35:
		f = fakecri.Fault{Method: pick(s, criMethods), Code: pick(s, errorCodes), Probability: rate}
	case r < 55:
		f = fakecri.Fault{Method: pick(s, terminationMethods), Code: pick(s, errorCodes), Times: 1 + s.rng.IntN(5)}
		live = false
	case r < 70:
		f = fakecri.Fault{Method: pick(s, notFoundMethods), Code: codes.NotFound, Probability: rate}
	default:
		f = fakecri.Fault{Method: pick(s, criMethods), Latency: s.between(*flagLatency/40, *flagLatency), Probability: 0.5}
	}
	if live && s.liveFaults >= maxLiveFaults {
		return
	}
	remove := s.srv.Inject(f)
	if !live {
		s.tr.add("fault", "%s %s x%d", f.Method, f.Code, f.Times)
		return
	}
	s.liveFaults++
	d := s.between(500*time.Millisecond, 4*time.Second)
	s.tr.add("fault", "%s %s p=%g latency=%s for %s", f.Method, f.Code, f.Probability, f.Latency, d)
	s.after(now.Add(d), func() {
		remove()
		s.liveFaults--
	})
}
