#!/usr/bin/env bash
# fuzz.sh: run every Fuzz* target in the module for a short, fixed time
# (FUZZTIME, default 10s each). A failure leaves its input in the package's
# testdata/fuzz/<Target>/ folder: commit it, so that the plain test run
# replays it from then on.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH=/usr/local/go/bin:$PATH
FUZZTIME=${FUZZTIME:-10s}

status=0
# The targets are found in the sources (a Fuzz function at the start of a
# line of a _test.go file), not with `go test -list`, which compiles every
# package's tests: on a fresh machine that alone took about 2 minutes
# (the rest of the stage is compiling each target with its instrumentation,
# about a minute each on 2 cores).
while read -r pkg dir; do
	targets=$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' "$dir"/*_test.go 2>/dev/null | sort -u)
	for target in $targets; do
		echo "fuzz: $pkg $target ($FUZZTIME)"
		for try in 1 2; do
			if go test "$pkg" -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME" >/tmp/fuzz.$$.log 2>&1; then
				tail -n 1 /tmp/fuzz.$$.log
				break
			fi
			# The fuzzing engine itself can end a run with "context deadline
			# exceeded" when -fuzztime expires while a worker is busy (a loaded
			# machine): no input failed, none was written. Run it once more;
			# any real failure writes its input and fails at once.
			if [ $try = 1 ] && grep -q 'context deadline exceeded' /tmp/fuzz.$$.log && ! grep -q 'Failing input written to' /tmp/fuzz.$$.log; then
				echo "fuzz: $pkg $target: the fuzzing engine's deadline expired with no failing input; running it again"
				continue
			fi
			cat /tmp/fuzz.$$.log
			echo "fuzz: $pkg $target FAILED" >&2
			status=1
			break
		done
	done
done < <(go list -f '{{.ImportPath}} {{.Dir}}' ./...)
rm -f /tmp/fuzz.$$.log
exit $status
