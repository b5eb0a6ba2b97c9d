#!/usr/bin/env bash
# make demo: a local ClickHouse (unless CLICKHOUSE_ADDR is set), ingest and
# api, realistic sample traffic posted over HTTP, and the URLs to look at.
# Everything lives under ./.mcplens/; Ctrl-C stops everything.
set -euo pipefail
cd "$(dirname "$0")/.."
state=.mcplens
mkdir -p "$state"
ingest_addr=${MCPLENS_INGEST_LISTEN:-127.0.0.1:4318}
api_addr=${MCPLENS_API_LISTEN:-127.0.0.1:8080}
sessions=${DEMO_SESSIONS:-400}
pids=()

cleanup() {
  trap - INT TERM EXIT
  echo
  echo "demo: stopping"
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  echo "demo: stopped (data kept in $state/)"
}
trap 'cleanup; exit 0' INT TERM
trap cleanup EXIT

port_free() { ! (exec 3<>"/dev/tcp/${1%:*}/${1##*:}") 2>/dev/null; }
wait_http() { # url, what
  for _ in $(seq 1 100); do curl -fsS "$1" >/dev/null 2>&1 && return 0; sleep 0.2; done
  echo "demo: $2 did not come up at $1; see $state/*.log" >&2; exit 1
}

for a in "$ingest_addr" "$api_addr"; do
  port_free "$a" || { echo "demo: $a is in use; set MCPLENS_INGEST_LISTEN / MCPLENS_API_LISTEN to free addresses" >&2; exit 1; }
done

if [ -z "${CLICKHOUSE_ADDR:-}" ]; then
  port=19000
  while ! port_free "127.0.0.1:$port"; do port=$((port + 1)); done
  http_port=$((port + 1000))
  while ! port_free "127.0.0.1:$http_port"; do http_port=$((http_port + 1)); done
  dir=$(pwd)/$state/clickhouse
  mkdir -p "$dir"/{data,tmp,log,user_files,format_schemas}
  cat > "$dir/users.xml" <<XML
<yandex>
  <profiles><default><max_memory_usage>4000000000</max_memory_usage></default></profiles>
  <users><default><password></password><networks><ip>127.0.0.1</ip><ip>::1</ip></networks><profile>default</profile><quota>default</quota></default></users>
  <quotas><default></default></quotas>
</yandex>
XML
  cat > "$dir/config.xml" <<XML
<yandex>
  <logger><level>warning</level><log>$dir/log/server.log</log><errorlog>$dir/log/error.log</errorlog><console>0</console></logger>
  <http_port>$http_port</http_port>
  <tcp_port>$port</tcp_port>
  <listen_host>127.0.0.1</listen_host>
  <path>$dir/data/</path>
  <tmp_path>$dir/tmp/</tmp_path>
  <user_files_path>$dir/user_files/</user_files_path>
  <format_schema_path>$dir/format_schemas/</format_schema_path>
  <users_config>$dir/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <timezone>UTC</timezone>
  <mark_cache_size>5368709</mark_cache_size>
</yandex>
XML
  clickhouse-server --config-file="$dir/config.xml" >"$dir/log/stdout.log" 2>&1 &
  pids+=($!)
  export CLICKHOUSE_ADDR=127.0.0.1:$port
  for _ in $(seq 1 100); do clickhouse-client --port "$port" -q 'SELECT 1' >/dev/null 2>&1 && break; sleep 0.2; done
  clickhouse-client --port "$port" -q 'SELECT 1' >/dev/null || { echo "demo: ClickHouse did not start; see $dir/log" >&2; exit 1; }
  echo "demo: ClickHouse $(clickhouse-client --port "$port" -q 'SELECT version()') on $CLICKHOUSE_ADDR (data in $dir)"
else
  echo "demo: using ClickHouse at $CLICKHOUSE_ADDR"
fi

bin/ingest serve -listen "$ingest_addr" -spool-dir "$state/spool" >"$state/ingest.log" 2>&1 &
pids+=($!)
wait_http "http://$ingest_addr/healthz" ingest
bin/api -listen "$api_addr" >"$state/api.log" 2>&1 &
pids+=($!)
wait_http "http://$api_addr/readyz" api

echo "demo: generating $sessions sessions of sample traffic (3 h ending now)"
bin/ingest sample -tools-list -sessions "$sessions" >"$state/sample.ndjson"
lines=$(wc -l <"$state/sample.ndjson")
rm -f "$state"/chunk.*
split -l 5000 "$state/sample.ndjson" "$state/chunk."
for f in "$state"/chunk.*; do
  gzip -c "$f" | curl -fsS -X POST -H 'Content-Type: application/x-ndjson' -H 'Content-Encoding: gzip' \
    --data-binary @- "http://$ingest_addr/v1/calls" | sed -E 's/,?"errors":\[\]//' | sed "s|^|demo: POST /v1/calls $(basename "$f"): |"
  rm -f "$f"
done
echo "demo: posted $lines capture lines; waiting for the first flush"
sleep 2

cat <<TXT

mcplens is running.
  API          http://$api_addr/api/v1/failure-rates
  ingest       http://$ingest_addr/v1/calls   (POST NDJSON captures; docs/capture-format.md)
  metrics      http://$ingest_addr/metrics   http://$api_addr/metrics
  ClickHouse   $CLICKHOUSE_ADDR (native), database mcplens

Try:
  curl -s 'http://$api_addr/api/v1/failure-rates' | cut -c 1-600
  curl -s 'http://$api_addr/api/v1/failure-rates?tool=search_docs&step=1h'
  curl -s 'http://$api_addr/api/v1/retry-outcomes?by=client'
  curl -s 'http://$api_addr/api/v1/empty-results?tool=search_docs&min_calls=3'
  curl -s 'http://$api_addr/api/v1/misclassifications'
  curl -s 'http://$api_addr/api/v1/recalls?by=client'
  curl -s 'http://$api_addr/api/v1/retry-loops?limit=5'
  curl -s 'http://$api_addr/api/v1/tools?server=kb'
  curl -s 'http://$api_addr/api/v1/schema-violations'
  curl -s 'http://$api_addr/api/v1/unknown-tools'
  curl -s 'http://$api_addr/api/v1/calls?tool=search_docs&arg_key=department&arg_value=finace&limit=3'
  bin/ingest sample -sessions 50 | curl -s --data-binary @- http://$ingest_addr/v1/calls

Logs in $state/. Press Ctrl-C to stop.
TXT
# The answer's first 400 characters: cut reads it all (head would close the
# pipe early, and curl's failed write, once the stored days make the answer
# long, would end the demo under pipefail).
curl -fsS "http://$api_addr/api/v1/failure-rates" | cut -c 1-400
wait -n "${pids[@]}" || true
echo "demo: a process exited; see $state/*.log" >&2
