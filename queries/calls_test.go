package queries_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/mcplens/mcplens/chtest"
	"github.com/mcplens/mcplens/compact"
	"github.com/mcplens/mcplens/pipeline"
	"github.com/mcplens/mcplens/pipeline/classify"
	"github.com/mcplens/mcplens/queries"
)

// TestCallList checks GET /api/v1/calls' query against a plain Go reference
// on generated traffic with copies: some calls ingested again later, every
// other one of them reclassified (so that a call meets a condition in an
// earlier copy only, or in its latest only), some inserted twice as one
// ingest, and one call ingested 12 times, its latest ingest alone OK, so
// that a page's first read is all its copies and must be asked again. Each
// case is read in pages of a few calls, following the cursors, and in one
// page, on both engines.
func TestCallList(t *testing.T) {
	base := sampleCalls(t, 40)
	var all []pipeline.Call
	for i, c := range base {
		c.IngestedMs = 1_000
		if i%9 == 0 {
			c.TraceID = "trace-" + strconv.Itoa(i%2)
		}
		all = append(all, c)
		switch {
		case i%7 == 3: // ingested again, reclassified on every other one
			again := c
			again.IngestedMs = 2_000
			if i%14 == 3 {
				again.Category, again.IsFailure, again.RPCCode = string(classify.RateLimited), 1, -32603
				if c.Category == string(classify.RateLimited) {
					again.Category, again.IsFailure, again.RPCCode = string(classify.OK), 0, 0
				}
			}
			all = append(all, again)
		case i%11 == 5: // one ingest inserted twice
			all = append(all, c)
		}
	}
	newest := slices.MaxFunc(base, func(a, b pipeline.Call) int { return cmp.Compare(a.TimeMs, b.TimeMs) })
	late := newest
	late.TimeMs += 1_000
	late.Time = time.UnixMilli(late.TimeMs).UTC()
	late.CallID = 42
	for v := int64(1); v <= 12; v++ {
		c := late
		c.IngestedMs = v
		c.Category, c.IsFailure, c.RPCCode = string(classify.InvalidArgument), 1, -32602
		if v == 12 {
			c.Category, c.IsFailure, c.RPCCode = string(classify.OK), 0, 0
		}
		all = append(all, c)
	}
	first := slices.MinFunc(all, func(a, b pipeline.Call) int { return cmp.Compare(a.TimeMs, b.TimeMs) })
	f := queries.Filter{From: first.Time.Truncate(time.Hour), To: late.Time.Add(time.Hour)}
	yes, no := true, false
	code := int64(-32602)
	dept, finace := "department", "finace"
	withDept := func() string {
		for _, c := range base {
			if i := slices.Index(c.ArgKeys, dept); i >= 0 {
				return c.ArgValues[i]
			}
		}
		t.Fatal("no call of the traffic has a department argument")
		return ""
	}()
	cases := []callsCase{
		{"every call", f, queries.CallsOptions{}},
		{"INVALID_ARGUMENT", f, queries.CallsOptions{Category: string(classify.InvalidArgument)}},
		{"RATE_LIMITED", f, queries.CallsOptions{Category: string(classify.RateLimited)}},
		{"OK", f, queries.CallsOptions{Category: string(classify.OK)}},
		{"failed", f, queries.CallsOptions{Failed: &yes}},
		{"not failed", f, queries.CallsOptions{Failed: &no}},
		{"misflagged", f, queries.CallsOptions{Misflagged: &yes}},
		{"code -32602", f, queries.CallsOptions{Code: &code}},
		{"department given", f, queries.CallsOptions{ArgKey: dept}},
		{"department " + withDept, f, queries.CallsOptions{ArgKey: dept, ArgValue: &withDept}},
		{"department finace, empty", f, queries.CallsOptions{ArgKey: dept, ArgValue: &finace, Category: string(classify.EmptyResult)}},
		{"one session", f, queries.CallsOptions{Session: base[5].SessionKey}},
		{"one trace, failed", f, queries.CallsOptions{TraceID: "trace-1", Failed: &yes}},
		{"one tool of one tenant", queries.Filter{From: f.From, To: f.To, Tenant: base[0].Tenant, Tool: base[0].Tool}, queries.CallsOptions{}},
		{"the first two hours", queries.Filter{From: f.From, To: f.From.Add(2 * time.Hour)}, queries.CallsOptions{Failed: &yes}},
		{"no such category", f, queries.CallsOptions{Category: string(classify.Cancelled), Session: "nowhere"}},
		// Long ranges whose calls lie at one end: the latest-ingest form
		// reads a chunk at a time back from the cursor, growing, the last
		// the rest of the range.
		{"a week, the calls first", queries.Filter{From: f.From, To: f.From.Add(7 * 24 * time.Hour)}, queries.CallsOptions{Failed: &yes}},
		{"a week, the calls last", queries.Filter{From: f.To.Add(-7 * 24 * time.Hour), To: f.To}, queries.CallsOptions{}},
	}
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			e.Insert(t, all)
			ctx := context.Background()
			checkCallList(t, e.DB, all, cases)
			// Again with the complete hours folded: the form that reads
			// latest ingests only finds the copied calls in the folds.
			if res, err := compact.RollupHours(ctx, e.DB, time.Now(), time.Since(t0)+30*24*time.Hour, 0); err != nil || len(res.Folded) == 0 {
				t.Fatalf("folding the hours: %+v, %v", res, err)
			}
			checkCallList(t, e.DB, all, cases)
			// The rows carry what the latest ingest stored.
			rows, err := queries.CallList(ctx, e.DB, queries.Filter{From: f.From, To: f.To, Tenant: late.Tenant}, queries.CallsOptions{Limit: 1})
			if err != nil {
				t.Fatal(err)
			}
			want := late
			want.IngestedMs, want.Category, want.IsFailure, want.RPCCode = 12, string(classify.OK), 0, 0
			if len(rows) != 1 || !sameCall(rows[0], want) {
				t.Errorf("the newest call:\n%+v\nwant the row of\n%+v", rows, want)
			}
		})
	}
}

// callsCase is a filter of TestCallList.
type callsCase struct {
	name string
	f    queries.Filter
	o    queries.CallsOptions
}

// checkCallList reads every case in pages of a few calls, following the
// cursors, and in one page, and compares the calls with refCallList's.
func checkCallList(t *testing.T, db queries.DB, all []pipeline.Call, cases []callsCase) {
	t.Helper()
	ctx := context.Background()
	nonEmpty := 0
	for _, tc := range cases {
		want := refCallList(all, tc.f, tc.o)
		if len(want) > 0 {
			nonEmpty++
		}
		// Pages of 2 or of a quarter of the answer, and one page, and
		// the same with every page from the form that reads latest ingests
		// only.
		for _, run := range []struct {
			limit int64
			list  func(context.Context, queries.DB, queries.Filter, queries.CallsOptions) ([]queries.Call, error)
		}{
			{max(2, int64(len(want))/4), queries.CallList}, {1000, queries.CallList},
			{max(2, int64(len(want))/4), queries.CallListLatestOnly}, {1000, queries.CallListLatestOnly},
		} {
			limit := run.limit
			o := tc.o
			o.Limit = limit
			var got []queries.Call
			for page := 0; ; page++ {
				rows, err := run.list(ctx, db, tc.f, o)
				if err != nil {
					t.Fatalf("%s: %v", tc.name, err)
				}
				got = append(got, rows...)
				if int64(len(rows)) < limit || page > len(all) {
					if page > 0 && len(rows) == 0 && len(want) > 0 && int64(len(want))%limit != 0 {
						t.Errorf("%s, pages of %d: an empty page after a full one", tc.name, limit)
					}
					break
				}
				cur, err := queries.ParseCursor(rows[len(rows)-1].Cursor)
				if err != nil {
					t.Fatal(err)
				}
				o.Before = &cur
			}
			if gotKeys, wantKeys := callKeys(got), callKeys(want); !slices.Equal(gotKeys, wantKeys) {
				t.Errorf("%s, pages of %d: got %d calls\n%v\nwant %d\n%v", tc.name, limit, len(got), gotKeys, len(want), wantKeys)
			}
		}
	}
	if nonEmpty < len(cases)-2 {
		t.Errorf("only %d of %d cases list a call: the traffic does not exercise them", nonEmpty, len(cases))
	}
}

// refCallList is CallList's definition in plain Go: per (time, call id),
// the copy of the largest ingested_ms (the first such row inserted), kept
// when it meets o, newest first, then by call id, descending.
func refCallList(all []pipeline.Call, f queries.Filter, o queries.CallsOptions) []pipeline.Call {
	type key struct {
		ms int64
		id uint64
	}
	latest := map[key]pipeline.Call{}
	for _, c := range all {
		if c.TimeMs < f.From.UnixMilli() || c.TimeMs >= f.To.UnixMilli() ||
			f.Tenant != "" && c.Tenant != f.Tenant || f.Tool != "" && c.Tool != f.Tool ||
			o.Session != "" && c.SessionKey != o.Session || o.TraceID != "" && c.TraceID != o.TraceID {
			continue
		}
		k := key{c.TimeMs, c.CallID}
		if l, ok := latest[k]; !ok || c.IngestedMs > l.IngestedMs {
			latest[k] = c
		}
	}
	var out []pipeline.Call
	for _, c := range latest {
		if o.Category != "" && c.Category != o.Category ||
			o.Failed != nil && (c.IsFailure == 1) != *o.Failed ||
			o.Misflagged != nil && (c.Misflagged == 1) != *o.Misflagged ||
			o.Code != nil && c.RPCCode != *o.Code {
			continue
		}
		if o.ArgKey != "" {
			found := false
			for i, k := range c.ArgKeys {
				found = found || k == o.ArgKey && (o.ArgValue == nil || c.ArgValues[i] == *o.ArgValue)
			}
			if !found {
				continue
			}
		}
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b pipeline.Call) int {
		return cmp.Or(cmp.Compare(b.TimeMs, a.TimeMs), cmp.Compare(b.CallID, a.CallID))
	})
	return out
}

// callKeys names each call by its cursor, category and ingest.
func callKeys[T queries.Call | pipeline.Call](calls []T) []string {
	out := make([]string, len(calls))
	for i, c := range calls {
		switch c := any(c).(type) {
		case queries.Call:
			out[i] = fmt.Sprintf("%s %s @%d", c.Cursor, c.Category, c.Ingested.UnixMilli())
		case pipeline.Call:
			out[i] = fmt.Sprintf("%d-%d %s @%d", c.TimeMs, c.CallID, c.Category, c.IngestedMs)
		}
	}
	return out
}

// sameCall reports whether got shows every stored field of want.
func sameCall(got queries.Call, want pipeline.Call) bool {
	var args json.RawMessage
	if want.ArgsJSON != "" {
		args = json.RawMessage(want.ArgsJSON)
	}
	return got.Time.Equal(time.UnixMilli(want.TimeMs)) && got.Tenant == want.Tenant && got.Server == want.Server &&
		got.Tool == want.Tool && got.Session == want.SessionKey && got.SessionID == want.SessionID &&
		got.TraceID == want.TraceID && got.RequestID == want.RequestID && got.CallID == strconv.FormatUint(want.CallID, 10) &&
		got.Client == want.Client && got.ProtocolVersion == want.ProtocolVersion && got.Source == want.Source &&
		got.Side == want.Side && got.DurationMs == want.DurationMs && got.Category == want.Category &&
		got.Failed == (want.IsFailure == 1) && got.DeclaredRetryable == want.DeclaredRetryable &&
		got.ExpectedRetryable == want.ExpectedRetryable && got.ClassSource == want.ClassSource &&
		got.ClassRule == want.ClassRule && got.Misflagged == (want.Misflagged == 1) &&
		got.HasResponse == (want.HasResponse == 1) && got.IsError == want.IsError && got.RPCError == (want.RPCError == 1) &&
		got.Code == want.RPCCode && got.RPCMessage == want.RPCMessage && got.ErrorCode == want.ErrorCode &&
		got.ResultType == want.ResultType && got.ContentBlocks == want.ContentBlocks && got.TextBytes == want.TextBytes &&
		got.HasStructured == (want.HasStructured == 1) && got.Message == want.Message &&
		got.RetryAfterMs == want.RetryAfterMs && got.Continuation == (want.Continuation == 1) &&
		string(got.Args) == string(args) && got.TaxonomyVersion == want.TaxonomyVersion &&
		got.Ingested.Equal(time.UnixMilli(want.IngestedMs)) && got.Cursor == fmt.Sprintf("%d-%d", want.TimeMs, want.CallID)
}

func TestParseCursor(t *testing.T) {
	for _, c := range []queries.Cursor{{0, 0}, {1795950006000, 1795950006000}, {1<<62 + 1, 1<<64 - 1}} {
		got, err := queries.ParseCursor(c.String())
		if err != nil || got != c {
			t.Errorf("ParseCursor(%q) = %+v, %v; want %+v", c.String(), got, err, c)
		}
	}
	for _, s := range []string{"", "1", "1-", "-1", "-1-2", "1-x", "x-1", "1-2-3", "1-18446744073709551616",
		"9223372036854775808-1", " 1-2", "1-2 ", "+1-2", "1-+2", "0x1-2"} {
		if c, err := queries.ParseCursor(s); err == nil {
			t.Errorf("ParseCursor(%q) = %+v, want an error", s, c)
		}
	}
}

// countingDB counts the statements it runs.
type countingDB struct {
	queries.DB
	n int
}

func (c *countingDB) Select(ctx context.Context, dest any, query string, args ...any) error {
	c.n++
	return c.DB.Select(ctx, dest, query, args...)
}

// TestCallListAfterAReplay lists the calls of a category that a replay
// under new rules took almost every call out of: 200 calls ingested as
// INTERNAL and again as UPSTREAM_TIMEOUT, and the 3 oldest left INTERNAL.
// The rows that meet category=INTERNAL are mostly earlier ingests; once the
// first candidates are dropped, the page comes from the form that reads
// latest ingests only, in 4 statements, not a scan of the range a few
// candidates at a time (10 statements for this page). The same with the
// hour folded, whose copied calls that form finds in the fold.
func TestCallListAfterAReplay(t *testing.T) {
	var all []pipeline.Call
	for i := range 203 {
		c := call{at: time.Duration(i) * time.Second, session: "s" + strconv.Itoa(i%7), tool: "get_doc", req: strconv.Itoa(i),
			category: classify.Internal}.row()
		c.IngestedMs = 1_000
		all = append(all, c)
		if i >= 3 {
			c.IngestedMs, c.Category = 2_000, string(classify.UpstreamTimeout)
			all = append(all, c)
		}
	}
	f := queries.Filter{From: t0, To: t0.Add(time.Hour)}
	o := queries.CallsOptions{Category: string(classify.Internal), Limit: 2}
	want := callKeys(refCallList(all, f, o))
	if len(want) != 3 {
		t.Fatalf("the reference lists %d calls, want the 3 left INTERNAL", len(want))
	}
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			e.Insert(t, all)
			for _, stage := range []string{"raw", "folded"} {
				if stage == "folded" {
					if res, err := compact.RollupHours(context.Background(), e.DB, time.Now(), time.Since(t0)+30*24*time.Hour, 0); err != nil || len(res.Folded) == 0 {
						t.Fatalf("folding the hour: %+v, %v", res, err)
					}
				}
				db := &countingDB{DB: e.DB}
				first, err := queries.CallList(context.Background(), db, f, o)
				if err != nil {
					t.Fatal(err)
				}
				if db.n > 4 {
					t.Errorf("%s: the first page took %d statements, want at most 4", stage, db.n)
				}
				cur, err := queries.ParseCursor(first[len(first)-1].Cursor)
				if err != nil {
					t.Fatal(err)
				}
				next := o
				next.Before = &cur
				second, err := queries.CallList(context.Background(), db, f, next)
				if err != nil {
					t.Fatal(err)
				}
				if got := callKeys(append(first, second...)); !slices.Equal(got, want) {
					t.Errorf("%s: got %v, want %v", stage, got, want)
				}
			}
		})
	}
}

// TestCallListReadsOnAfterItsLastCandidate builds a page that takes three
// reads: the first is all copies of two calls (one ingest inserted 6 and 5
// times), the second's first 9 candidates are calls a later ingest took out
// of the category, and the third must go on right after the last of those,
// not after the last row the second read, where a call that belongs on the
// page would be skipped.
func TestCallListReadsOnAfterItsLastCandidate(t *testing.T) {
	var all []pipeline.Call
	at := 0 * time.Second
	add := func(n int, categories ...classify.Category) {
		at -= time.Second
		for i, cat := range categories {
			c := call{at: time.Hour + at, session: "s", tool: "get_doc", req: strconv.Itoa(int(at)), category: cat}.row()
			c.IngestedMs = int64(1_000 * (i + 1))
			for range n {
				all = append(all, c)
			}
		}
	}
	add(6, classify.Internal) // A
	add(5, classify.Internal) // B
	for range 9 {
		add(1, classify.Internal, classify.UpstreamTimeout) // C1..C9
	}
	for range 30 {
		add(1, classify.Internal) // D, E, ...
	}
	f := queries.Filter{From: t0, To: t0.Add(2 * time.Hour)}
	o := queries.CallsOptions{Category: string(classify.Internal), Limit: 3}
	ref := refCallList(all, f, o)
	want := callKeys(ref[:3])
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			e.Insert(t, all)
			got, err := queries.CallList(context.Background(), e.DB, f, o)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(callKeys(got), want) {
				t.Errorf("got %v, want %v", callKeys(got), want)
			}
		})
	}
}
