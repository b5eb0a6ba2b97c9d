#!/usr/bin/env bash
# Installs what the tests and the demo need on a Debian machine, once:
# clickhouse-server/client (ClickHouse 18.16), ZooKeeper (the cluster tests)
# and Prometheus (promtool) from apt, docker-compose (config validation
# only), libchdb.so (ClickHouse 26.7 in-process) from npm, and the Go
# modules. Safe to re-run: it installs only what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v clickhouse-server >/dev/null || need+=(clickhouse-server)
command -v clickhouse-client >/dev/null || need+=(clickhouse-client)
command -v promtool >/dev/null || need+=(prometheus)
command -v docker-compose >/dev/null || need+=(docker-compose)
[ -s /usr/share/java/zookeeper.jar ] || need+=(zookeeper) # clustertest: coordinates the ClickHouse cluster
if [ ${#need[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "deps: installing ${need[*]} from apt"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
fi

lib=.deps/chdb/node_modules/@chdb/lib-linux-x64-gnu/libchdb.so
if [ ! -s "$lib" ]; then
  command -v npm >/dev/null || { echo "deps: npm is needed to install chdb (apt-get install -y npm)" >&2; exit 1; }
  echo "deps: installing chdb@3.4.0 (libchdb.so, ClickHouse 26.7 in-process) from npm"
  mkdir -p .deps/chdb
  npm install --prefix .deps/chdb --no-audit --no-fund --loglevel=error chdb@3.4.0 >/dev/null
fi
[ -s "$lib" ] || { echo "deps: $lib missing after npm install chdb@3.4.0" >&2; exit 1; }

go mod download
