#!/usr/bin/env bash
# test.sh: the project's test command. Runs every test under the race
# detector. Extra arguments are passed to `go test`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH=/usr/local/go/bin:$PATH
exec go test -race -count=1 "$@" ./...
