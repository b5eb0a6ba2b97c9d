package gauges_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/mcplens/mcplens/chtest"
	"github.com/mcplens/mcplens/gauges"
	"github.com/mcplens/mcplens/pipeline"
	"github.com/mcplens/mcplens/pipeline/classify"
)

func TestMain(m *testing.M) { os.Exit(chtest.Main(m)) }

var now = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

var seq int

// call builds a fixture row at now-ago, ingested a minute before now.
func call(ago time.Duration, tenant, server, session, tool string, cat classify.Category, args string, durMs int64) pipeline.Call {
	seq++
	ts := now.Add(-ago)
	c := pipeline.Call{
		Time: ts, TimeMs: ts.UnixMilli(), DurationMs: durMs, Tenant: tenant, Server: server, Tool: tool,
		SessionID: session, SessionKey: session, RequestID: fmt.Sprint(seq), CallID: uint64(seq),
		Source: "capture", ArgsJSON: args, ArgsHash: uint64(len(args)) + 7, ArgKeys: []string{}, ArgValues: []string{},
		HasResponse: 1, ContentBlocks: 1, Category: string(cat),
		DeclaredRetryable: classify.RetryUnknown, ExpectedRetryable: cat.ExpectedRetryable(),
		ClassSource: classify.SourceDefault, TaxonomyVersion: "test", IngestedMs: now.Add(-time.Minute).UnixMilli(),
	}
	if cat.Failure() {
		c.IsFailure, c.IsError = 1, 1
	}
	return c
}

// fixture: acme/kb search (10 OK of 5 to 950 ms, 3 EMPTY_RESULT, 2 hidden
// INTERNAL failures), acme/kb fetch (5 retry chains of UPSTREAM_TIMEOUT that
// never recover, each failure with a retry-after hint of 30 s, retried after
// 10 s), acme/kb lookup (4 NOT_FOUND re-called unchanged), acme/kb poll (two
// retry loops of RATE_LIMITED calls 5 s apart, 6 and 5 calls, each ending
// with a success), and globex/crm create (one INVALID_ARGUMENT, a JSON-RPC
// error).
func fixture() []pipeline.Call {
	var out []pipeline.Call
	for i := 0; i < 10; i++ {
		out = append(out, call(time.Duration(i+1)*time.Minute, "acme", "kb", fmt.Sprintf("s%d", i), "search", classify.OK, `{"q":"a"}`, []int64{5, 15, 40, 90, 150, 400, 900, 950, 950, 950}[i]))
	}
	for i := 0; i < 3; i++ {
		out = append(out, call(time.Duration(i+1)*time.Minute, "acme", "kb", "e", "search", classify.EmptyResult, `{"q":"zz"}`, 5))
	}
	for i := 0; i < 2; i++ {
		c := call(time.Duration(i+20)*time.Minute, "acme", "kb", fmt.Sprintf("h%d", i), "search", classify.Internal, `{"q":"b"}`, 5)
		c.IsError, c.Misflagged = 0, 1
		out = append(out, c)
	}
	for i := 0; i < 5; i++ {
		s := fmt.Sprintf("f%d", i)
		at := time.Duration(30+i) * time.Minute
		first := call(at, "acme", "kb", s, "fetch", classify.UpstreamTimeout, `{"u":"x"}`, 30000)
		retry := call(at-10*time.Second, "acme", "kb", s, "fetch", classify.UpstreamTimeout, `{"u":"x"}`, 30000)
		first.RetryAfterMs, retry.RetryAfterMs = 30_000, 30_000
		out = append(out, first, retry)
	}
	for i := 0; i < 4; i++ {
		s := fmt.Sprintf("l%d", i)
		at := time.Duration(40+i) * time.Minute
		out = append(out,
			call(at, "acme", "kb", s, "lookup", classify.NotFound, `{"id":"1"}`, 10),
			call(at-5*time.Second, "acme", "kb", s, "lookup", classify.OK, `{"id":"1"}`, 10))
	}
	for i, n := range []int{6, 5} { // two retry loops of poll, RATE_LIMITED until the last call
		s := fmt.Sprintf("p%d", i)
		at := time.Duration(50+i) * time.Minute
		for j := 0; j < n; j++ {
			cat := classify.RateLimited
			if j == n-1 {
				cat = classify.OK
			}
			out = append(out, call(at-time.Duration(j)*5*time.Second, "acme", "kb", s, "poll", cat, `{"n":"1"}`, 10))
		}
	}
	c := call(10*time.Minute, "globex", "crm", "g", "create", classify.InvalidArgument, `{"p":"x"}`, 3)
	c.RPCError, c.RPCCode, c.IsError = 1, -32602, -1
	return append(out, c)
}

func newExporter(t *testing.T, db chtest.DB, cfg gauges.Config) (*gauges.Exporter, *prometheus.Registry, *time.Time) {
	t.Helper()
	clock := now.Add(-5 * time.Minute)
	cfg.Now = func() time.Time { return clock }
	reg := prometheus.NewRegistry()
	x := gauges.New(db, reg, slog.New(slog.NewTextHandler(io.Discard, nil)), cfg)
	clock = now
	return x, reg, &clock
}

// values returns each series of a metric as "label=value,..." → value
// (counts for a histogram, with buckets as le=... series).
func values(t *testing.T, reg *prometheus.Registry, name string) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.Metric {
			key := labelKey(m.Label)
			switch {
			case m.Gauge != nil:
				out[key] = m.Gauge.GetValue()
			case m.Counter != nil:
				out[key] = m.Counter.GetValue()
			case m.Histogram != nil:
				out[key+"|count"] = float64(m.Histogram.GetSampleCount())
				out[key+"|sum"] = m.Histogram.GetSampleSum()
				for _, b := range m.Histogram.Bucket {
					out[fmt.Sprintf("%s|le=%g", key, b.GetUpperBound())] = float64(b.GetCumulativeCount())
				}
			}
		}
	}
	return out
}

func labelKey(ls []*dto.LabelPair) string {
	parts := make([]string, len(ls))
	for i, l := range ls {
		parts[i] = l.GetName() + "=" + l.GetValue()
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// TestExporter refreshes the exporter on both engines and checks each
// metric against the fixture.
func TestExporter(t *testing.T) {
	for _, e := range chtest.Engines(t) {
		e.Insert(t, fixture())
		x, reg, _ := newExporter(t, e.DB, gauges.Config{})
		for i := 0; i < 2; i++ { // the second refresh must not count durations twice
			if err := x.Refresh(context.Background()); err != nil {
				t.Fatalf("%s: %v", e.Name, err)
			}
		}
		want := map[string]map[string]float64{
			"mcplens_window_calls": {
				"category=OK,failure=false,server=kb,tenant=acme,tool=search":                 10,
				"category=EMPTY_RESULT,failure=false,server=kb,tenant=acme,tool=search":       3,
				"category=INTERNAL,failure=true,server=kb,tenant=acme,tool=search":            2,
				"category=UPSTREAM_TIMEOUT,failure=true,server=kb,tenant=acme,tool=fetch":     10,
				"category=NOT_FOUND,failure=true,server=kb,tenant=acme,tool=lookup":           4,
				"category=OK,failure=false,server=kb,tenant=acme,tool=lookup":                 4,
				"category=INVALID_ARGUMENT,failure=true,server=crm,tenant=globex,tool=create": 1,
				"category=RATE_LIMITED,failure=true,server=kb,tenant=acme,tool=poll":          9,
				"category=OK,failure=false,server=kb,tenant=acme,tool=poll":                   2,
			},
			"mcplens_window_misflagged_calls": {
				"category=INTERNAL,failure=true,server=kb,tenant=acme,tool=search": 2,
			},
			"mcplens_window_retry_chains": {
				"category=UPSTREAM_TIMEOUT,declared_retryable=unknown,expected_retryable=yes,outcome=retry_then_fail,server=kb,tenant=acme,tool=fetch": 5,
				"category=INTERNAL,declared_retryable=unknown,expected_retryable=yes,outcome=no_retry,server=kb,tenant=acme,tool=search":               2,
				"category=NOT_FOUND,declared_retryable=unknown,expected_retryable=no,outcome=retry_then_success,server=kb,tenant=acme,tool=lookup":     4,
				"category=INVALID_ARGUMENT,declared_retryable=unknown,expected_retryable=no,outcome=no_retry,server=crm,tenant=globex,tool=create":     1,
				"category=RATE_LIMITED,declared_retryable=unknown,expected_retryable=yes,outcome=retry_then_success,server=kb,tenant=acme,tool=poll":   2,
			},
			"mcplens_window_recall_failures": {
				"category=RATE_LIMITED,server=kb,tenant=acme,tool=poll":          9,
				"category=UPSTREAM_TIMEOUT,server=kb,tenant=acme,tool=fetch":     10,
				"category=INTERNAL,server=kb,tenant=acme,tool=search":            2,
				"category=NOT_FOUND,server=kb,tenant=acme,tool=lookup":           4,
				"category=INVALID_ARGUMENT,server=crm,tenant=globex,tool=create": 1,
			},
			"mcplens_window_unchanged_recalls": {
				"category=RATE_LIMITED,server=kb,tenant=acme,tool=poll":          9,
				"category=UPSTREAM_TIMEOUT,server=kb,tenant=acme,tool=fetch":     5,
				"category=INTERNAL,server=kb,tenant=acme,tool=search":            0,
				"category=NOT_FOUND,server=kb,tenant=acme,tool=lookup":           4,
				"category=INVALID_ARGUMENT,server=crm,tenant=globex,tool=create": 0,
			},
			"mcplens_window_retry_after_failures": {
				"category=UPSTREAM_TIMEOUT,server=kb,tenant=acme,tool=fetch": 10,
			},
			"mcplens_window_recalls_before_retry_after": {
				"category=UPSTREAM_TIMEOUT,server=kb,tenant=acme,tool=fetch": 5,
			},
			// poll's longer loop; fetch's chains have 2 calls, under 5.
			"mcplens_window_longest_retry_chain": {
				"server=kb,tenant=acme,tool=poll": 6,
			},
			"mcplens_window_misclassifications": {
				"category=UPSTREAM_TIMEOUT,kind=retryable_never_recovers,server=kb,tenant=acme,tool=fetch": 5,
			},
			"mcplens_window_seconds": {"": 3600},
		}
		for name, w := range want {
			if got := values(t, reg, name); !equal(got, w) {
				t.Errorf("%s %s:\n got %v\nwant %v", e.Name, name, got, w)
			}
		}
		h := values(t, reg, "mcp_server_operation_duration_seconds")
		ok := "error_type=,gen_ai_tool_name=search,mcp_method_name=tools/call,server=kb,tenant=acme"
		for k, w := range map[string]float64{
			// 10 OK, 3 EMPTY_RESULT and the 2 hidden failures (isError false)
			ok + "|count": 15, ok + "|sum": (5 + 15 + 40 + 90 + 150 + 400 + 900 + 950*3 + 5*3 + 5*2) / 1000.0,
			ok + "|le=0.01": 6, ok + "|le=0.02": 7, ok + "|le=0.05": 8, ok + "|le=0.1": 9, ok + "|le=0.2": 10,
			ok + "|le=0.5": 11, ok + "|le=1": 15, ok + "|le=300": 15,
			"error_type=tool_error,gen_ai_tool_name=fetch,mcp_method_name=tools/call,server=kb,tenant=acme|le=30": 10,
			"error_type=-32602,gen_ai_tool_name=create,mcp_method_name=tools/call,server=crm,tenant=globex|count": 1,
		} {
			if got, found := h[k]; !found || got != w {
				t.Errorf("%s duration histogram %s = %v (found %v), want %v", e.Name, k, got, found, w)
			}
		}
		if got := values(t, reg, "mcplens_gauges_last_success_timestamp_seconds")[""]; got != float64(now.Unix()) {
			t.Errorf("%s: last success %v", e.Name, got)
		}
	}
}

func equal(a, b map[string]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range b {
		if a[k] != v {
			return false
		}
	}
	return true
}

// TestCardinalityCap keeps the busiest series and counts the rest.
func TestCardinalityCap(t *testing.T) {
	for _, e := range chtest.Engines(t) {
		e.Insert(t, fixture())
		x, reg, _ := newExporter(t, e.DB, gauges.Config{MaxSeries: 2, MaxPairs: 1})
		if err := x.Refresh(context.Background()); err != nil {
			t.Fatal(err)
		}
		calls := values(t, reg, "mcplens_window_calls")
		if len(calls) != 2 || calls["category=OK,failure=false,server=kb,tenant=acme,tool=search"] != 10 || calls["category=UPSTREAM_TIMEOUT,failure=true,server=kb,tenant=acme,tool=fetch"] != 10 {
			t.Errorf("%s: capped calls %v", e.Name, calls)
		}
		dropped := values(t, reg, "mcplens_gauges_series_dropped_total")
		if dropped["metric=mcplens_window_calls"] != 7 || dropped["metric=pairs"] != 1 {
			t.Errorf("%s: dropped %v", e.Name, dropped)
		}
		for k := range values(t, reg, "mcplens_window_retry_chains") {
			if strings.Contains(k, "tenant=globex") {
				t.Errorf("%s: globex is past MaxPairs but exported %s", e.Name, k)
			}
		}
	}
}

// failingDB fails every query while fail is set.
type failingDB struct {
	chtest.DB
	fail bool
}

func (f *failingDB) Select(ctx context.Context, dest any, query string, args ...any) error {
	if f.fail {
		return errors.New("connection refused")
	}
	return f.DB.Select(ctx, dest, query, args...)
}

// TestRefreshErrorKeepsValues keeps the last good values when ClickHouse
// fails, and counts the failure.
func TestRefreshErrorKeepsValues(t *testing.T) {
	e := chtest.Engines(t)[0]
	e.Insert(t, fixture())
	db := &failingDB{DB: e.DB}
	x, reg, clock := newExporter(t, db, gauges.Config{})
	if err := x.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	before := values(t, reg, "mcplens_window_calls")
	db.fail = true
	*clock = now.Add(time.Minute)
	if err := x.Refresh(context.Background()); err == nil {
		t.Fatal("refresh with a failing ClickHouse returned nil")
	}
	if after := values(t, reg, "mcplens_window_calls"); !equal(after, before) {
		t.Errorf("values changed after a failed refresh: %v", after)
	}
	if errs := values(t, reg, "mcplens_gauges_refresh_errors_total"); errs["query=window_calls"] != 1 || errs["query=durations"] != 1 {
		t.Errorf("errors %v", errs)
	}
	if got := values(t, reg, "mcplens_gauges_last_success_timestamp_seconds")[""]; got != float64(now.Unix()) {
		t.Errorf("last success moved to %v", got)
	}
}
