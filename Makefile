# mcplens — see README.md. `make help` lists the targets.
SHELL := /bin/bash
export CHDB_LIB_PATH ?= $(CURDIR)/.deps/chdb/node_modules/@chdb/lib-linux-x64-gnu/libchdb.so
GO ?= go
FUZZTIME ?= 5s

.PHONY: help deps build test test-cluster soak fuzz bench bench-scale lint demo dashboards

help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

deps: ## install ClickHouse 18.16, chDB (ClickHouse 26.7 in-process), promtool and Go modules if missing
	@scripts/deps.sh

build: ## build bin/ingest and bin/api
	$(GO) build -o bin/ingest ./cmd/ingest
	$(GO) build -o bin/api ./cmd/api

test: deps ## run every test on both ClickHouse engines (starts them itself), plus short fuzz runs
	$(GO) vet ./...
	@scripts/gotest.sh
	@scripts/fuzz.sh $(FUZZTIME)

test-cluster: deps ## only the cluster tests: ZooKeeper + 2 shards × 2 replicas of ClickHouse 18.16 on loopback (part of `test` too; about 4 minutes)
	set -o pipefail; $(GO) test -v -count=1 -timeout 15m ./clustertest | grep -E '^(=== RUN|--- |ok|FAIL|panic|clustertest:)|\.go:[0-9]+:'

soak: deps ## fault-injection tests of docs/operations.md with longer faults and more load (about 7 minutes)
	$(GO) test -v -count=1 -timeout 60m -run 'TestClickHouseOutage|TestIngestCrash|TestOverload|TestSIGTERM|TestDiskFull' ./e2e -args -soak \
		| grep -E '^(=== RUN|--- |ok|FAIL|panic)|RESULT|\.go:[0-9]+:'

fuzz: deps ## run each fuzz target longer (FUZZTIME=5m by default here)
	@scripts/fuzz.sh $(if $(filter command line,$(origin FUZZTIME)),$(FUZZTIME),5m)

bench: deps ## pipeline stages, ingest end to end vs clickhouse-client, queries, the gauges' refresh and the alert rules' queries at 1M calls (5-20 min; BENCHMARKS.md; MCPLENS_BENCH_BASELINE=<git rev> adds an older ingest build)
	@scripts/bench.sh

bench-scale: deps ## the query, gauge and alert-rule benchmarks at 10M calls on both engines (10-40 min; BENCHMARKS.md; MCPLENS_BENCH_FAILED_PCT and MCPLENS_BENCH_TOOL_NAMES shape the data)
	@MCPLENS_BENCH_CALLS=10000000 scripts/bench.sh scale

dashboards: deps ## regenerate dashboards/generated (Grafana dashboards, alert rules) and docs/previews; review the diff
	$(GO) test ./dashboards -run TestGeneratedFilesAreCurrent -update -count=1

lint: ## gofmt and go vet
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

demo: deps build ## local ClickHouse + ingest + api + sample traffic; prints the URLs (Ctrl-C stops)
	@scripts/demo.sh
