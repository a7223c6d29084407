package fleet_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/podlife/podlife/agent/fleet"
)

func TestParseScript(t *testing.T) {
	s, err := fleet.ParseScript(`{"runs": "controller", "containers": {
		"main": {"runFor": "1.5s", "exitCodes": [1, 0], "terminationDelay": "20s", "terminationExitCode": 143,
		         "pullDelay": "2s", "pullFailures": 2,
		         "readiness": [{"after": "0s", "result": "failure"}, {"after": "5s", "result": "success"}]},
		"*": {"liveness": [{"after": "1m", "result": "failure"}]}}}`)
	if err != nil {
		t.Fatal(err)
	}
	m := s.Containers["main"]
	if s.Runs != fleet.RunsPerController || time.Duration(m.RunFor) != 1500*time.Millisecond || len(m.ExitCodes) != 2 ||
		time.Duration(m.TerminationDelay) != 20*time.Second || m.TerminationExitCode != 143 || m.PullFailures != 2 ||
		len(m.Readiness) != 2 || time.Duration(s.Containers["*"].Liveness[0].After) != time.Minute {
		t.Fatalf("parsed %+v", s)
	}

	for value, want := range map[string]string{
		`{"containers": {"a": {"exitCode": 1}}}`:                                   `unknown field "exitCode"`,
		`{"containers": {"a": {"runFor": 5}}}`:                                     `a duration is a string`,
		`{"containers": {"a": {"runFor": "5 s"}}}`:                                 `time: unknown unit`,
		`{"containers": {"a": {"runFor": "-1s"}}}`:                                 `container "a": runFor -1s is negative`,
		`{"containers": {"a": {"exitCodes": [256]}}}`:                              `exit code 256 is not in [0, 255]`,
		`{"containers": {"a": {"terminationExitCode": -1}}}`:                       `exit code -1`,
		`{"containers": {"a": {"pullFailures": -2}}}`:                              `pullFailures -2`,
		`{"containers": {"a": {"startup": [{"after": "1s", "result": "maybe"}]}}}`: `startup[0]: result "maybe"`,
		`{"containers": {"a": {"readiness": [{"after": "2s", "result": "success"}, {"after": "1s", "result": "failure"}]}}}`: `readiness[1]: after 1s comes before`,
		`{"runs": "node"}`: `runs "node"`,
		`{} {}`:            `more than one JSON value`,
		`not json`:         `invalid character`,
	} {
		_, err := fleet.ParseScript(value)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseScript(%s): %v, want an error with %q", value, err, want)
		}
	}
}

// FuzzParseScript: any input gives a script or an error, never a panic,
// and a script that parses gives the same script once written and read
// again.
func FuzzParseScript(f *testing.F) {
	f.Add(`{"containers": {"a": {"exitCodes": [1, 0], "runFor": "1s"}}}`)
	f.Add(`{"runs": "pod", "containers": {"*": {"readiness": [{"after": "0s", "result": "failure"}]}}}`)
	f.Add(`{"containers": {"a": {"pullFailures": -1, "pullDelay": "1ms", "terminationDelay": "1h"}}}`)
	f.Fuzz(func(t *testing.T, value string) {
		s, err := fleet.ParseScript(value)
		if err != nil {
			return
		}
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatalf("marshal %+v: %v", s, err)
		}
		again, err := fleet.ParseScript(string(b))
		if err != nil {
			t.Fatalf("%s parsed, its marshalling %s does not: %v", value, b, err)
		}
		if b2, _ := json.Marshal(again); string(b2) != string(b) {
			t.Fatalf("%s: written %s, then %s", value, b, b2)
		}
	})
}
