#!/usr/bin/env bash
# Runs every Fuzz target in the module for the given time each (default 5s;
# a count such as 20000x works too).
#
# Go 1.26's fuzz coordinator can fail a run at the end of a -fuzztime
# duration with a bare "context deadline exceeded" when a starved worker has
# not acknowledged the stop yet (golang/go#75804, fixed in Go 1.27). Such a
# run found nothing: a real finding prints "Failing input written to" and
# leaves a file in testdata/fuzz/<target>. This script runs a target again,
# up to twice, only when its failure has exactly that shape; any other
# failure, or a third such failure of one target, fails the script (on 2
# cores a clean `make test` has had two of its targets end so).
set -euo pipefail
cd "$(dirname "$0")/.."
t="${1:-5s}"
log=$(mktemp /tmp/mcplens-fuzz.XXXXXX) # a run's own: two runs at once do not share it
trap 'rm -f "$log"' EXIT

# corpus lists the files of a target's corpus directory, to tell whether a
# run wrote a reproducer.
corpus() { ls -1 "$1/testdata/fuzz/$2" 2>/dev/null || true; }

# deadline_race tells whether the failed run in $log is go#75804: the
# target's FAIL line followed by a bare deadline error, and no input written.
deadline_race() {
  local name=$1 before=$2 after=$3
  [ "$before" = "$after" ] || return 1
  grep -q 'Failing input written to' "$log" && return 1
  grep -qE '^(panic:|fuzz: .*(hung|terminated unexpectedly))' "$log" && return 1
  grep -A1 -E "^--- FAIL: ${name} \(" "$log" | tail -n1 | grep -qxE '\s+context deadline exceeded'
}

run() {
  go test -run='^$' -fuzz="^${2}\$" -fuzztime="$t" "$1" >"$log" 2>&1
}

races=0
for f in $(grep -rl --include='*_test.go' '^func Fuzz' .); do
  pkg="./$(dirname "${f#./}")"
  for name in $(grep -oE '^func Fuzz[A-Za-z0-9_]+' "$f" | cut -d' ' -f2); do
    echo "fuzz: $pkg $name ($t)"
    before=$(corpus "$pkg" "$name")
    for attempt in 1 2 3; do
      run "$pkg" "$name" && continue 2
      after=$(corpus "$pkg" "$name")
      deadline_race "$name" "$before" "$after" && [ "$attempt" -lt 3 ] || break
      races=$((races + 1))
      echo "fuzz: $name ended with the fuzz engine's deadline race (golang/go#75804, no input written); running it again"
    done
    cat "$log"
    exit 1
  done
done
echo "fuzz: every target passed ($races run again after the engine's deadline race)"
