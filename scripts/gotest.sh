#!/usr/bin/env bash
# Runs `go test -v` over the module, shows the package lines (and every
# failure in full), and closes with "tests: N passed, M failed" counted over
# tests and subtests. The full log is kept in $GOTEST_LOG, else in a new
# file under /tmp named at the end.
set -uo pipefail
cd "$(dirname "$0")/.."
log=${GOTEST_LOG:-$(mktemp /tmp/mcplens-gotest.XXXXXX)}
go test -v -count=1 -timeout 40m "$@" ./... >"$log" 2>&1
rc=$?
grep -E '^(ok|FAIL|---|panic:|\?)|^\s+--- FAIL' "$log" | grep -vE '^\s*--- (PASS|SKIP)' || true
passed=$(grep -cE '^\s*--- PASS' "$log")
failed=$(grep -cE '^\s*--- FAIL' "$log")
skipped=$(grep -cE '^\s*--- SKIP' "$log")
if [ "$rc" -ne 0 ]; then
  echo "go test failed (exit $rc); the failing output:"
  grep -B2 -A30 -E '^\s*--- FAIL|^panic:|^FAIL|build failed|setup failed' "$log" | head -400
fi
echo "tests: $passed passed, $failed failed, $skipped skipped (log: $log)"
exit $rc
