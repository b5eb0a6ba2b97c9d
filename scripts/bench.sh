#!/usr/bin/env bash
# Runs the benchmarks that BENCHMARKS.md reports, in one go, and prints each
# part's table (medians) as it finishes:
#   micro   Go benchmarks of each pipeline stage, with allocations, 5 runs each
#   ingest  ingest end to end against clickhouse-client's JSONEachRow and
#           Native inserts on the same server (bench/ingestbench; 3 runs)
#   scale   every endpoint's query at MCPLENS_BENCH_CALLS calls (default
#           1,000,000) on both engines (queries.BenchmarkScale; the mean of
#           3 iterations of each query on one generated data set)
# Usage: scripts/bench.sh [micro] [ingest] [scale]   (no argument: all three)
# Raw outputs go to BENCH_OUT (default: a new directory under /tmp).
set -euo pipefail
cd "$(dirname "$0")/.."
parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(micro ingest scale)
out=${BENCH_OUT:-$(mktemp -d /tmp/mcplens-bench-XXXXXX)}
mkdir -p "$out"
calls=${MCPLENS_BENCH_CALLS:-1000000}

# median_table reads `go test -bench` output and prints, per benchmark, the
# median of every metric over its runs.
median_table() {
  awk '
    /^Benchmark/ {
      name = $1; sub(/-[0-9]+$/, "", name)
      if (!(name in seen)) { seen[name] = 1; order[++n] = name }
      runs[name]++
      for (i = 3; i < NF; i += 2) {
        unit = $(i + 1)
        if (!((name, unit) in has)) { has[name, unit] = 1; units[name] = units[name] " " unit }
        v[name, unit, runs[name]] = $i
      }
    }
    function median(name, unit,   k, m, a, i, j, t) {
      m = 0
      for (k = 1; k <= runs[name]; k++) if ((name, unit, k) in v) a[++m] = v[name, unit, k] + 0
      for (i = 2; i <= m; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
      return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
    }
    END {
      for (k = 1; k <= n; k++) {
        name = order[k]; line = sprintf("%-60s %2d runs", name, runs[name])
        split(substr(units[name], 2), us, " ")
        for (i = 1; i in us; i++) line = line sprintf("  %12.6g %s", median(name, us[i]), us[i])
        print line
      }
    }'
}

uptime | tee "$out/load.txt"
for part in "${parts[@]}"; do
  case $part in
  micro)
    echo "== pipeline stages (go test -bench, medians of 5 runs)"
    go test -run '^$' -bench 'BenchmarkDecodeCapture|BenchmarkNormalizeArgs|BenchmarkProcessorLine|BenchmarkProcessorReadNDJSON|BenchmarkBatchAppend|BenchmarkDecodeOTLP' \
      -benchmem -count 5 ./pipeline >"$out/micro.txt"
    go test -run '^$' -bench 'BenchmarkClassify$' -benchmem -count 5 ./pipeline/classify >>"$out/micro.txt"
    median_table <"$out/micro.txt"
    ;;
  ingest)
    echo "== ingest end to end (bench/ingestbench)"
    go run ./bench/ingestbench -calls "${MCPLENS_INGEST_CALLS:-300000}" -runs 3 2>"$out/ingest.log" | tee "$out/ingest.md"
    ;;
  scale)
    echo "== queries at $calls calls (BenchmarkScale; ms, mean of 3 iterations)"
    MCPLENS_BENCH_CALLS=$calls go test -run '^$' -bench BenchmarkScale -benchtime 3x -count 1 -timeout 3h -v ./queries \
      | grep -Ev '^=== ' >"$out/scale.txt"
    grep 'generated' "$out/scale.txt" || true
    awk '/^BenchmarkScale\// { n = $1; sub(/^BenchmarkScale\//, "", n); sub(/-[0-9]+$/, "", n); printf "%-60s %10.1f ms\n", n, $3 / 1e6 }' "$out/scale.txt"
    ;;
  *)
    echo "bench.sh: unknown part $part (want micro, ingest or scale)" >&2
    exit 2
    ;;
  esac
done
uptime | tee -a "$out/load.txt"
echo "raw outputs in $out"
