package prober_test

import (
	"math/rand/v2"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/runtime/prober"
)

// TestThresholdsProperty drives a readiness probe with random outcomes and
// thresholds and checks every published change against a model: the result
// flips only after successThreshold successes or failureThreshold failures in
// a row, errors count for nothing, and an Update is sent exactly on a flip.
func TestThresholdsProperty(t *testing.T) {
	for seed := range uint64(12) {
		r := rand.New(rand.NewPCG(seed, 7))
		succ, fail := 1+r.IntN(3), 1+r.IntN(4)
		t.Run("", func(t *testing.T) {
			h := newHarness(t)
			pod := podWith("prop", v1.Container{Name: "c", ReadinessProbe: execProbe("ready", func(p *v1.Probe) {
				p.PeriodSeconds, p.SuccessThreshold, p.FailureThreshold = 1, int32(succ), int32(fail)
			})})
			h.m.SetContainers(pod, "", running("id1", t0))
			published, last, run := prober.Failure, prober.Unknown, 0
			var flips []prober.Result
			for i := range 30 {
				h.stepTo(t0.Add(sec(i)))
				c := h.call("ready", t0.Add(sec(i)))
				// Every change of the model so far has been delivered, and
				// nothing else.
				for _, want := range flips {
					if u := h.update(); u.Result != want {
						t.Fatalf("seed %d probe %d: update %v, want %v", seed, i, u.Result, want)
					}
				}
				flips = nil
				h.noUpdate()
				if ready, _ := h.m.Readiness(pod.UID, "c"); ready != (published == prober.Success) {
					t.Fatalf("seed %d probe %d: ready %v, model %v", seed, i, ready, published)
				}
				switch r.IntN(5) {
				case 0: // a runtime error: no verdict
					c.reply <- execReply{err: errUnavailable}
					continue
				case 1, 2:
					c.reply <- execReply{}
					if last == prober.Success {
						run++
					} else {
						last, run = prober.Success, 1
					}
				default:
					c.reply <- execReply{code: 1}
					if last == prober.Failure {
						run++
					} else {
						last, run = prober.Failure, 1
					}
				}
				threshold := fail
				if last == prober.Success {
					threshold = succ
				}
				if run >= threshold && published != last {
					published = last
					flips = append(flips, last)
				}
			}
		})
	}
}
