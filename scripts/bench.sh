#!/usr/bin/env bash
# Runs the benchmarks that BENCHMARKS.md reports, in one go, and prints each
# part's table (medians) as it finishes:
#   micro   Go benchmarks of each pipeline stage, with allocations, 5 runs each,
#           and of the retention job's fold of quiet hours on both engines
#           (compact.BenchmarkRollupHoursQuiet; 3 runs)
#   ingest  ingest end to end against clickhouse-client's JSONEachRow and
#           Native inserts on the same server (bench/ingestbench; 3 runs);
#           MCPLENS_BENCH_BASELINE=<git rev> adds that revision's cmd/ingest
#           to the same rounds (before/after), for NDJSON, OTLP root spans
#           and OTLP spans with a parent
#   scale   every endpoint's queries at MCPLENS_BENCH_CALLS calls (default
#           1,000,000; MCPLENS_BENCH_FAILED_PCT of them failed, 1-15,
#           default 15; MCPLENS_BENCH_TOOL_NAMES tool names, 1-1820,
#           default 13) on both engines (queries.BenchmarkScale; 3 runs, each
#           on freshly generated data, one iteration per endpoint; medians),
#           then one refresh of the api's Prometheus gauges on the same
#           kind of data, its hours folded (gauges.BenchmarkRefresh; 3 runs),
#           and every Grafana alert rule's query as Grafana sends it, with
#           nothing folded and folded (dashboards.BenchmarkAlerts; 3 runs)
# Usage: scripts/bench.sh [micro] [ingest] [scale]   (no argument: all three)
# Raw outputs go to BENCH_OUT (default: a new directory under /tmp).
set -euo pipefail
cd "$(dirname "$0")/.."
parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(micro ingest scale)
out=${BENCH_OUT:-$(mktemp -d /tmp/mcplens-bench-XXXXXX)}
mkdir -p "$out"
calls=${MCPLENS_BENCH_CALLS:-1000000}
# The engines' test harness loads chDB from here, as `make` sets it.
export CHDB_LIB_PATH=${CHDB_LIB_PATH:-$PWD/.deps/chdb/node_modules/@chdb/lib-linux-x64-gnu/libchdb.so}

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
        for (i = 1; i in us; i++) {
          x = median(name, us[i])
          line = line sprintf(x >= 100 ? "  %10.0f %s" : "  %10.3g %s", x, us[i])
        }
        print line
      }
    }'
}

uptime | tee "$out/load.txt"
for part in "${parts[@]}"; do
  case $part in
  micro)
    echo "== pipeline stages (go test -bench, medians of 5 runs)"
    go test -run '^$' -bench 'BenchmarkDecodeCapture|BenchmarkNormalizeArgs|BenchmarkProcessorLine|BenchmarkProcessorReadNDJSON|BenchmarkIngestRequest|BenchmarkOTLPHTTP|BenchmarkBatchAppend|BenchmarkSortOrder|BenchmarkRecordDecode|BenchmarkWriteCalls|BenchmarkDecodeOTLP' \
      -benchmem -count 5 ./pipeline >"$out/micro.txt" 2>&1 || { tail -20 "$out/micro.txt"; exit 1; }
    go test -run '^$' -bench 'BenchmarkClassify$' -benchmem -count 5 ./pipeline/classify >>"$out/micro.txt" 2>&1 ||
      { tail -20 "$out/micro.txt"; exit 1; }
    go test -run '^$' -bench 'BenchmarkRollupHoursQuiet' -benchtime 3x -count 3 ./compact >>"$out/micro.txt" 2>&1 ||
      { tail -20 "$out/micro.txt"; exit 1; }
    median_table <"$out/micro.txt"
    ;;
  ingest)
    echo "== ingest end to end (bench/ingestbench)"
    variants="-spool-fsync=never;posters=16;posters=16 payload=otlp-linked;payload=otlp-both -otlp-pair-window=10s;-batch-size=50000 -queue-capacity=100000"
    if [ -n "${MCPLENS_BENCH_BASELINE:-}" ]; then
      # An older build of cmd/ingest, run in the same rounds: before/after.
      rm -rf "$out/baseline" && mkdir -p "$out/baseline"
      git archive "$MCPLENS_BENCH_BASELINE" | tar -x -C "$out/baseline"
      (cd "$out/baseline" && go build -o "$out/ingest-$MCPLENS_BENCH_BASELINE" ./cmd/ingest)
      base="$out/ingest-$MCPLENS_BENCH_BASELINE"
      variants="$variants;bin=$base;payload=otlp bin=$base;payload=otlp-linked bin=$base"
    fi
    go run ./bench/ingestbench -calls "${MCPLENS_INGEST_CALLS:-300000}" -runs 3 -variants "$variants" 2>"$out/ingest.log" | tee "$out/ingest.md"
    ;;
  scale)
    echo "== queries at $calls calls (BenchmarkScale; ms, medians of 3 runs)"
    MCPLENS_BENCH_CALLS=$calls go test -run '^$' -bench BenchmarkScale -benchtime 1x -count 3 -timeout 3h -v ./queries \
      >"$out/scale.txt" 2>&1 || { tail -20 "$out/scale.txt"; exit 1; }
    grep 'generated\|folded' "$out/scale.txt" || true
    awk '
      /^BenchmarkScale\/.*ns\/op/ {
        split($1, f, "/"); sub(/-[0-9]+$/, "", f[5]); col = f[2] " " f[4]
        if (!(f[5] in seen)) { seen[f[5]] = 1; rows[++n] = f[5] }
        if (!(col in cseen)) { cseen[col] = 1; cols[++m] = col }
        k = ++cnt[f[5], col]; ms[f[5], col, k] = $3 / 1e6
      }
      function median(r, c,   k, a, i, j, t) {
        for (k = 1; k <= cnt[r, c]; k++) a[k] = ms[r, c, k]
        for (i = 2; i <= cnt[r, c]; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
        k = cnt[r, c]
        return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
      }
      END {
        line = "| endpoint |"; sep = "|---|"
        for (j = 1; j <= m; j++) { line = line " " cols[j] " (ms) |"; sep = sep "---:|" }
        print line; print sep
        for (i = 1; i <= n; i++) {
          line = "| " rows[i] " |"
          for (j = 1; j <= m; j++) line = line sprintf(" %.0f |", median(rows[i], cols[j]))
          print line
        }
      }' "$out/scale.txt"
    echo "== the api's gauge refresh at $calls calls (gauges.BenchmarkRefresh; medians of 3 runs)"
    MCPLENS_BENCH_CALLS=$calls go test -run '^$' -bench BenchmarkRefresh -benchtime 1x -count 3 -timeout 1h ./gauges \
      >"$out/gauges.txt" 2>&1 || { tail -20 "$out/gauges.txt"; exit 1; }
    median_table <"$out/gauges.txt"
    echo "== the Grafana alert rules' queries at $calls calls (dashboards.BenchmarkAlerts; medians of 3 runs)"
    MCPLENS_BENCH_CALLS=$calls go test -run '^$' -bench BenchmarkAlerts -benchtime 1x -count 3 -timeout 2h ./dashboards \
      >"$out/alerts.txt" 2>&1 || { tail -20 "$out/alerts.txt"; exit 1; }
    median_table <"$out/alerts.txt"
    ;;
  *)
    echo "bench.sh: unknown part $part (want micro, ingest or scale)" >&2
    exit 2
    ;;
  esac
done
uptime | tee -a "$out/load.txt"
echo "raw outputs in $out"
