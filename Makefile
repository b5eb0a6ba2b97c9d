# mcplens — see README.md. `make help` lists the targets.
SHELL := /bin/bash
export CHDB_LIB_PATH ?= $(CURDIR)/.deps/chdb/node_modules/@chdb/lib-linux-x64-gnu/libchdb.so
GO ?= go
FUZZTIME ?= 5s

.PHONY: help deps build test fuzz bench lint demo dashboards

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

fuzz: deps ## run each fuzz target longer (FUZZTIME=5m by default here)
	@scripts/fuzz.sh $(if $(filter command line,$(origin FUZZTIME)),$(FUZZTIME),5m)

bench: deps ## run the Go benchmarks (see BENCHMARKS.md)
	$(GO) test -run='^$$' -bench=. -benchmem -count=1 ./...

dashboards: deps ## regenerate dashboards/generated (Grafana dashboards, alert rules) and docs/previews; review the diff
	$(GO) test ./dashboards -run TestGeneratedFilesAreCurrent -update -count=1

lint: ## gofmt and go vet
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

demo: deps build ## local ClickHouse + ingest + api + sample traffic; prints the URLs (Ctrl-C stops)
	@scripts/demo.sh
