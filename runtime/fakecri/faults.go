package fakecri

import (
	"context"
	"path"
	"slices"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// AnyMethod matches every CRI method in a Fault.
const AnyMethod = "*"

// Fault makes matching calls misbehave. Faults are checked in the order they
// were injected; every matching fault adds its Latency, and the first one with
// a Code other than codes.OK answers the call with that error instead of the
// real handler.
type Fault struct {
	// Method is the CRI method name without service, such as "StopContainer"
	// or "PullImage"; AnyMethod or "" matches every method.
	Method string
	// Code is the gRPC status code to answer with; codes.OK answers normally
	// (a latency-only fault).
	Code codes.Code
	// Message of the error. Default: "fakecri: injected <code>".
	Message string
	// Times is how many calls the fault applies to before it is removed; 0
	// means every call until removed.
	Times int
	// Probability, when in (0, 1), applies the fault to that fraction of the
	// matching calls, decided with Options.Rand; a call it does not apply to
	// does not count towards Times. 0 or 1: every matching call.
	Probability float64
	// Latency is added before answering (on the server's clock). The call
	// ends early, with the client's deadline or cancellation, if its context
	// ends first.
	Latency time.Duration
}

type fault struct {
	Fault
	left int // calls left when Times > 0
}

// Inject adds a fault and returns a function that removes it.
func (s *Server) Inject(f Fault) (remove func()) {
	ff := &fault{Fault: f, left: f.Times}
	s.mu.Lock()
	s.faults = append(s.faults, ff)
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.faults = slices.DeleteFunc(s.faults, func(x *fault) bool { return x == ff })
	}
}

// FailNext makes the next call of method fail with code.
func (s *Server) FailNext(method string, code codes.Code) {
	s.Inject(Fault{Method: method, Code: code, Times: 1})
}

// FailTimes makes the next n calls of method fail with code.
func (s *Server) FailTimes(method string, n int, code codes.Code) {
	s.Inject(Fault{Method: method, Code: code, Times: n})
}

// Delay adds latency to every call of method until the returned function is
// called.
func (s *Server) Delay(method string, d time.Duration) (remove func()) {
	return s.Inject(Fault{Method: method, Latency: d})
}

// ClearFaults removes every fault.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	s.faults = nil
	s.mu.Unlock()
}

// Calls returns the CRI methods called so far, in order (faulted calls
// included).
func (s *Server) Calls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, len(s.calls))
	for i, m := range s.calls {
		out[i] = s.methods[m]
	}
	return out
}

// CallCount returns how many times method was called.
func (s *Server) CallCount(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.callCounts[method]
}

// intercept records the call and applies the faults, for every method.
func (s *Server) intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	method := path.Base(info.FullMethod)
	s.mu.Lock()
	s.recordCallLocked(method)
	latency, err := s.matchFaultsLocked(method)
	s.mu.Unlock()
	if werr := s.wait(ctx, latency); werr != nil {
		return nil, status.FromContextError(werr).Err()
	}
	if err != nil {
		return nil, err
	}
	return handler(ctx, req)
}

func (s *Server) matchFaultsLocked(method string) (time.Duration, error) {
	var latency time.Duration
	var err error
	var spent []*fault
	for _, f := range s.faults {
		if f.Method != "" && f.Method != AnyMethod && f.Method != method {
			continue
		}
		if f.Probability > 0 && f.Probability < 1 && s.opts.Rand.Float64() >= f.Probability {
			continue
		}
		if err != nil && f.Code != codes.OK {
			continue // the answer is decided; later error faults stay armed
		}
		latency += f.Latency
		if f.Code != codes.OK {
			msg := f.Message
			if msg == "" {
				msg = "fakecri: injected " + f.Code.String()
			}
			err = status.Error(f.Code, msg)
		}
		if f.Times > 0 {
			f.left--
			if f.left <= 0 {
				spent = append(spent, f)
			}
		}
	}
	if len(spent) > 0 {
		s.faults = slices.DeleteFunc(s.faults, func(x *fault) bool { return slices.Contains(spent, x) })
	}
	return latency, err
}

// recordCallLocked appends method to the call log, one byte per call: a
// fake runtime holding 100,000 pods sees millions of calls.
func (s *Server) recordCallLocked(method string) {
	i, ok := s.methodIndex[method]
	if !ok {
		i = uint8(len(s.methods))
		s.methods = append(s.methods, method)
		s.methodIndex[method] = i
	}
	s.calls = append(s.calls, i)
	s.callCounts[method]++
}
