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
for pkg in $(go list ./...); do
	targets=$(go test -list '^Fuzz' "$pkg" 2>/dev/null | grep '^Fuzz' || true)
	for target in $targets; do
		echo "fuzz: $pkg $target ($FUZZTIME)"
		if ! go test "$pkg" -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME" >/tmp/fuzz.$$.log 2>&1; then
			cat /tmp/fuzz.$$.log
			echo "fuzz: $pkg $target FAILED" >&2
			status=1
		else
			tail -n 1 /tmp/fuzz.$$.log
		fi
	done
done
rm -f /tmp/fuzz.$$.log
exit $status
