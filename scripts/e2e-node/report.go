//go:build ignore

// report.go reads the Ginkgo JSON report of an e2e.test run and counts the
// specs the run is judged on: those whose full text matches -select and not
// -exclude (by default, the [NodeConformance] specs that are neither feature
// gated, [Slow], [Serial] nor [Disruptive]). Specs outside that selection
// (Ginkgo reports every spec of the binary, filtered ones as skipped) are
// not counted.
//
//	go run scripts/e2e-node/report.go -report DIR/report.json [-passing scripts/e2e-node/passing.txt]
//
// It writes, on stdout, one line per area (the spec's outermost container,
// such as "[sig-node] Pods"), then the failed specs with the first line of
// their failure, and, as its LAST line, "N passed, N failed, N skipped".
// With -passed FILE it writes the full text of every passed spec there (one
// a line, sorted), the material of the committed passing list.
//
// Exit status: 0; 3 when a spec named in -passing (one full spec text a
// line, "#" comments) did not pass (the regression gate); 2 when the report
// cannot be read or selects no spec at all (the harness is broken).
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
)

// specReport is the part of Ginkgo's types.SpecReport used here.
type specReport struct {
	ContainerHierarchyTexts []string
	LeafNodeText            string
	LeafNodeType            string
	State                   string
	RunTime                 int64 // nanoseconds
	Failure                 struct {
		Message string
	}
}

type suiteReport struct {
	SpecReports []specReport
}

// count is passed / failed / skipped of one group of specs.
type count struct{ passed, failed, skipped int }

func (c *count) add(state string) {
	switch state {
	case "passed":
		c.passed++
	case "skipped", "pending":
		c.skipped++
	default: // failed, timedout, panicked, interrupted, aborted
		c.failed++
	}
}

func main() {
	reportPath := flag.String("report", "", "Ginkgo JSON report (ginkgo --json-report)")
	sel := flag.String("select", `\[NodeConformance\]`, "regex: specs counted")
	excl := flag.String("exclude", `\[(Feature|FeatureGate|Alpha|Beta):?[^\]]*\]|\[Slow\]|\[Serial\]|\[Disruptive\]|\[Flaky\]`, "regex: specs of the selection not counted")
	passing := flag.String("passing", "", "file of spec texts that must pass (the regression gate)")
	passedOut := flag.String("passed", "", "write the texts of the passed specs to this file")
	flag.Parse()
	if err := run(*reportPath, *sel, *excl, *passing, *passedOut); err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		if err == errGate {
			os.Exit(3)
		}
		os.Exit(2)
	}
}

var errGate = fmt.Errorf("a spec of the passing list did not pass")

func run(reportPath, sel, excl, passing, passedOut string) error {
	selRe, err := regexp.Compile(sel)
	if err != nil {
		return err
	}
	exclRe, err := regexp.Compile(excl)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(reportPath)
	if err != nil {
		return err
	}
	var suites []suiteReport
	if err := json.Unmarshal(data, &suites); err != nil {
		return fmt.Errorf("%s: %w", reportPath, err)
	}

	areas := map[string]*count{}
	var total count
	states := map[string]string{}
	var failures []string
	for _, s := range suites {
		for _, r := range s.SpecReports {
			if r.LeafNodeType != "It" {
				continue
			}
			text := strings.Join(append(append([]string{}, r.ContainerHierarchyTexts...), r.LeafNodeText), " ")
			if !selRe.MatchString(text) || exclRe.MatchString(text) {
				continue
			}
			area := "(none)"
			if len(r.ContainerHierarchyTexts) > 0 {
				area = r.ContainerHierarchyTexts[0]
			}
			if areas[area] == nil {
				areas[area] = &count{}
			}
			areas[area].add(r.State)
			total.add(r.State)
			states[text] = r.State
			if r.State != "passed" && r.State != "skipped" && r.State != "pending" {
				msg, _, _ := strings.Cut(strings.TrimSpace(r.Failure.Message), "\n")
				if len(msg) > 300 {
					msg = msg[:300] + "..."
				}
				failures = append(failures, fmt.Sprintf("[%s] %s (%.0fs)\n    %s", r.State, text, float64(r.RunTime)/1e9, msg))
			}
		}
	}
	if len(states) == 0 {
		return fmt.Errorf("%s: no spec matches %q", reportPath, sel)
	}

	names := make([]string, 0, len(areas))
	for a := range areas {
		names = append(names, a)
	}
	sort.Strings(names)
	fmt.Printf("%-60s %6s %6s %7s\n", "area", "passed", "failed", "skipped")
	for _, a := range names {
		c := areas[a]
		fmt.Printf("%-60s %6d %6d %7d\n", a, c.passed, c.failed, c.skipped)
	}
	sort.Strings(failures)
	if len(failures) > 0 {
		fmt.Println("\nfailed:")
		for _, f := range failures {
			fmt.Println(f)
		}
	}

	if passedOut != "" {
		var passed []string
		for t, st := range states {
			if st == "passed" {
				passed = append(passed, t)
			}
		}
		sort.Strings(passed)
		if err := os.WriteFile(passedOut, []byte(strings.Join(passed, "\n")+"\n"), 0o644); err != nil {
			return err
		}
	}

	var regressions []string
	if passing != "" {
		want, err := readList(passing)
		if err != nil {
			return err
		}
		for _, t := range want {
			if st, ok := states[t]; !ok {
				regressions = append(regressions, "not run: "+t)
			} else if st != "passed" {
				regressions = append(regressions, st+": "+t)
			}
		}
		if len(regressions) > 0 {
			fmt.Printf("\nREGRESSIONS: %d of the %d specs of %s did not pass:\n", len(regressions), len(want), passing)
			for _, r := range regressions {
				fmt.Println("    " + r)
			}
		} else {
			fmt.Printf("\nall %d specs of %s passed\n", len(want), passing)
		}
	}
	fmt.Printf("%d passed, %d failed, %d skipped\n", total.passed, total.failed, total.skipped)
	if len(regressions) > 0 {
		return errGate
	}
	return nil
}

// readList reads one entry a line; blank lines and "#" comments are dropped.
func readList(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		out = append(out, l)
	}
	return out, sc.Err()
}
