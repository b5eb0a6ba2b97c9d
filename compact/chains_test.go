package compact_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/mcplens/mcplens/chtest"
	"github.com/mcplens/mcplens/compact"
	"github.com/mcplens/mcplens/pipeline"
	"github.com/mcplens/mcplens/schema"
)

// chainCall is a call of session s of tool search at t, failed or not,
// with arguments args.
func chainCall(s string, t time.Time, id uint64, failed bool, args string) pipeline.Call {
	cat, failure := "OK", uint8(0)
	if failed {
		cat, failure = "RATE_LIMITED", 1
	}
	return pipeline.Call{Time: t, TimeMs: t.UnixMilli(), DurationMs: 5, Tenant: "acme", Server: "kb", Tool: "search",
		SessionKey: s, RequestID: fmt.Sprint(id), CallID: id, Source: "capture", ArgsJSON: args, ArgsHash: uint64(len(args)),
		HasResponse: 1, IsError: -1, Category: cat, IsFailure: failure, DeclaredRetryable: -1, ExpectedRetryable: 1, IngestedMs: 1}
}

// hourRows reads the rows of query, which selects the hours of [@from_s,
// @to_s), into T's.
func hourRows[T any](t *testing.T, e *chtest.Engine, query string, from, to time.Time) []T {
	t.Helper()
	var rows []T
	if err := e.DB.Select(context.Background(), &rows, query, clickhouse.Named("from_s", from.Unix()), clickhouse.Named("to_s", to.Unix())); err != nil {
		t.Fatal(err)
	}
	return rows
}

// currentChains reads the chains of the current chain folds of [from, to),
// one line each: hour, start, outcome, attempts, arguments changed.
func currentChains(t *testing.T, e *chtest.Engine, from, to time.Time) []string {
	t.Helper()
	type row struct {
		Hour    int64  `ch:"hour_s"`
		Start   int64  `ch:"start_ms"`
		Outcome uint8  `ch:"outcome"`
		Calls   uint64 `ch:"attempts"`
		Changed uint8  `ch:"args_changed"`
	}
	rows := hourRows[row](t, e, `SELECT toInt64(toUInt32(hour)) AS hour_s, start_ms, outcome, attempts, args_changed
		FROM chains_folded
		WHERE (hour, fold) IN (SELECT hour, fold FROM chain_current_folds)
		  AND hour >= toDateTime(@from_s, 'UTC') AND hour < toDateTime(@to_s, 'UTC')`, from, to)
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = fmt.Sprintf("%s %s %d %d %d", time.Unix(r.Hour, 0).UTC().Format("15:04"),
			time.UnixMilli(r.Start).UTC().Format("15:04:05"), r.Outcome, r.Calls, r.Changed)
	}
	slices.Sort(out)
	return out
}

// currentRecalls reads the failures of the current chain folds of
// [from, to) (recalls_folded), one line an hour: hour, failures, those with
// a next call within 60 s, with the same arguments too, with a retry-after
// hint, and re-called before it.
func currentRecalls(t *testing.T, e *chtest.Engine, from, to time.Time) []string {
	t.Helper()
	type row struct {
		Hour     int64  `ch:"hour_s"`
		Failures uint64 `ch:"failures"`
		Next     uint64 `ch:"next_n"`
		Same     uint64 `ch:"same_n"`
		Hinted   uint64 `ch:"hinted_n"`
		Early    uint64 `ch:"early_n"`
	}
	rows := hourRows[row](t, e, `SELECT toInt64(toUInt32(hour)) AS hour_s, count() AS failures,
		  toUInt64(sum(next)) AS next_n, toUInt64(sum(same)) AS same_n, toUInt64(sum(hinted)) AS hinted_n, toUInt64(sum(early)) AS early_n
		FROM recalls_folded
		WHERE (hour, fold) IN (SELECT hour, fold FROM chain_current_folds)
		  AND hour >= toDateTime(@from_s, 'UTC') AND hour < toDateTime(@to_s, 'UTC')
		GROUP BY hour_s
		ORDER BY hour_s`, from, to)
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = fmt.Sprintf("%s %d %d %d %d %d", time.Unix(r.Hour, 0).UTC().Format("15:04"), r.Failures, r.Next, r.Same, r.Hinted, r.Early)
	}
	return out
}

// currentChainSessions reads the sessions of the chains of the current
// chain folds of [from, to), one line each: start, session key, client,
// end and first call id.
func currentChainSessions(t *testing.T, e *chtest.Engine, from, to time.Time) []string {
	t.Helper()
	type row struct {
		Start   int64  `ch:"start_ms"`
		Session string `ch:"session_key"`
		Client  string `ch:"client_"`
		End     int64  `ch:"end_ms"`
		First   uint64 `ch:"first_call_id"`
	}
	rows := hourRows[row](t, e, `SELECT start_ms, session_key, toString(client) AS client_, end_ms, first_call_id
		FROM chains_folded
		WHERE (hour, fold) IN (SELECT hour, fold FROM chain_current_folds)
		  AND hour >= toDateTime(@from_s, 'UTC') AND hour < toDateTime(@to_s, 'UTC')`, from, to)
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = fmt.Sprintf("%s %s %q %s %d", time.UnixMilli(r.Start).UTC().Format("15:04:05"), r.Session, r.Client,
			time.UnixMilli(r.End).UTC().Format("15:04:05"), r.First)
	}
	slices.Sort(out)
	return out
}

// currentChainHours reads the hours of [from, to) that have a current
// chain fold.
func currentChainHours(t *testing.T, e *chtest.Engine, from, to time.Time) []time.Time {
	t.Helper()
	type row struct {
		Hour int64 `ch:"hour_s"`
	}
	rows := hourRows[row](t, e, `SELECT toInt64(toUInt32(hour)) AS hour_s FROM chain_current_folds
		WHERE hour >= toDateTime(@from_s, 'UTC') AND hour < toDateTime(@to_s, 'UTC') ORDER BY hour`, from, to)
	out := make([]time.Time, len(rows))
	for i, r := range rows {
		out[i] = time.Unix(r.Hour, 0).UTC()
	}
	return out
}

// TestRollupChainsFoldsEachHoursChains folds the retry chains of a day's
// hours: a chain belongs to the hour it starts in and is followed into the
// next hour, a failure right after an hour's end is a retry of the hour
// before's and starts nothing, a chain still retrying where the fold stops
// reading leaves its hour's fold open and unread, and the quiet hours (no
// insert of their own) are recorded as empty. Each fold holds its hour's
// failures too, each with what came after it, the next hour's first minute
// included (recalls_folded). A second run folds nothing; a late insert into an hour sends
// it and its neighbours back to the raw calls until they are folded again,
// and the folds it supersedes are deleted.
func TestRollupChainsFoldsEachHoursChains(t *testing.T) {
	ctx := context.Background()
	d := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -2)
	at := func(hms string) time.Time {
		x, err := time.Parse("15:04:05", hms)
		if err != nil {
			t.Fatal(err)
		}
		return d.Add(time.Duration(x.Hour())*time.Hour + time.Duration(x.Minute())*time.Minute + time.Duration(x.Second())*time.Second)
	}
	calls := []pipeline.Call{
		chainCall("s1", at("10:59:30"), 1, true, `{"q":"a"}`), // recovers in the next hour
		chainCall("s1", at("11:00:10"), 2, false, `{"q":"a"}`),
		chainCall("s2", at("10:59:50"), 3, true, `{"q":"a"}`), // fails on, with new arguments
		chainCall("s2", at("11:00:20"), 4, true, `{"q":"b"}`),
		chainCall("s2", at("11:00:50"), 5, true, `{"q":"bb"}`),
		chainCall("s3", at("11:30:00"), 6, true, `{"q":"a"}`), // no retry
		chainCall("s4", at("11:45:00"), 7, false, `{"q":"a"}`),
	}
	for i := 0; i < 30; i++ { // from 12:55:00 to 13:19:10, past the 13:10 where 12:00's fold stops
		calls = append(calls, chainCall("storm", at("12:55:00").Add(time.Duration(i)*50*time.Second), uint64(100+i), true, `{"q":"a"}`))
	}
	calls[0].RetryAfterMs = 60_000 // s1's retry 40 s later comes before the hint
	for i, client := range []string{"cursor", "cursor", "claude-code", "zed", "claude-code"} {
		calls[i].Client = client // s2's client is the least of its calls'
	}
	const span = 5 * 24 * time.Hour
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			e.Insert(t, calls)
			now := time.Now()
			res, err := compact.RollupChains(ctx, e.DB, now, span, 0)
			if err != nil {
				t.Fatal(err)
			}
			busy := []time.Time{at("10:00:00"), at("11:00:00"), at("12:00:00"), at("13:00:00")}
			if !slices.Equal(res.Open, []time.Time{at("12:00:00")}) || len(res.Unsettled) != 0 || !slices.Equal(res.Folded, busy) ||
				!slices.Contains(res.Quiet, at("02:00:00")) || !slices.Contains(res.Quiet, at("09:00:00")) || !slices.Contains(res.Quiet, at("14:00:00")) {
				t.Fatalf("folded %v, quiet %v, open %v, unsettled %v; want %v folded, 12:00 open, none unsettled, the quiet 02:00, 09:00 and 14:00 recorded empty",
					res.Folded, res.Quiet, res.Open, res.Unsettled, busy)
			}
			want := []string{
				"10:00 10:59:30 2 2 0",
				"10:00 10:59:50 1 3 1",
				"11:00 11:30:00 0 1 0",
			}
			if got := currentChains(t, e, d, d.Add(24*time.Hour)); !slices.Equal(got, want) {
				t.Errorf("folded chains\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			// Each chain's session, client, last call and first call.
			wantSessions := []string{
				`10:59:30 s1 "cursor" 11:00:10 1`,
				`10:59:50 s2 "claude-code" 11:00:50 3`,
				`11:30:00 s3 "" 11:30:00 6`,
			}
			if got := currentChainSessions(t, e, d, d.Add(24*time.Hour)); !slices.Equal(got, wantSessions) {
				t.Errorf("folded chains' sessions\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(wantSessions, "\n"))
			}
			// 10:00: s1's failure (its next call 40 s later, in 11:00,
			// before its hint) and s2's first (next with arguments of the
			// same hash: chainCall hashes their length); 11:00: s2's
			// second (next with other arguments) and third (none), s3's
			// (none); 13:00:
			// the storm's 24 failures, each followed 50 s later but the
			// last; 12:00's fold is open.
			wantRecalls := []string{
				"10:00 2 2 2 1 1",
				"11:00 3 1 0 0 0",
				"13:00 24 23 23 0 0",
			}
			if got := currentRecalls(t, e, d, d.Add(24*time.Hour)); !slices.Equal(got, wantRecalls) {
				t.Errorf("folded failures\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(wantRecalls, "\n"))
			}
			hours := currentChainHours(t, e, at("09:00:00"), at("15:00:00"))
			if want := []time.Time{at("09:00:00"), at("10:00:00"), at("11:00:00"), at("13:00:00"), at("14:00:00")}; !slices.Equal(hours, want) {
				t.Errorf("current chain folds %v; want %v: every hour but the open one", hours, want)
			}

			if res, err := compact.RollupChains(ctx, e.DB, now, span, 0); err != nil || len(res.Folded)+len(res.Quiet)+len(res.Unsettled) != 0 {
				t.Fatalf("second run: folded %v, quiet %v, unsettled %v, err %v; want nothing", res.Folded, res.Quiet, res.Unsettled, err)
			}

			// s3 retried after all: its chain recovers. Until 10:00, 11:00
			// and 12:00 are folded again, they are read raw.
			late := chainCall("s3", at("11:30:40"), 8, false, `{"q":"a"}`)
			e.Insert(t, []pipeline.Call{late})
			hours = currentChainHours(t, e, at("09:00:00"), at("15:00:00"))
			if want := []time.Time{at("09:00:00"), at("13:00:00"), at("14:00:00")}; !slices.Equal(hours, want) {
				t.Errorf("current chain folds after a late insert into 11:00: %v; want %v", hours, want)
			}
			// A later now: the quiet hour that becomes complete if an hour
			// began since is folded too, and left out of the comparisons.
			now = time.Now()
			ofDay := func(hs []time.Time) []time.Time {
				return slices.DeleteFunc(slices.Clone(hs), func(h time.Time) bool { return !h.Before(d.Add(24 * time.Hour)) })
			}
			res, err = compact.RollupChains(ctx, e.DB, now, span, time.Hour)
			neighbours := []time.Time{at("10:00:00"), at("11:00:00"), at("12:00:00")}
			if err != nil || len(ofDay(res.Folded)) != 0 || !slices.Equal(res.Unsettled, neighbours) {
				t.Fatalf("right after the late insert: folded %v, unsettled %v, err %v; want %v unsettled", res.Folded, res.Unsettled, err, neighbours)
			}
			res, err = compact.RollupChains(ctx, e.DB, now, span, 0)
			if err != nil || !slices.Equal(ofDay(res.Folded), neighbours) || res.Superseded != 3 {
				t.Fatalf("once settled: folded %v, %d superseded, err %v; want %v and their first folds superseded", res.Folded, res.Superseded, err, neighbours)
			}
			want[2] = "11:00 11:30:00 2 2 0"
			if got := currentChains(t, e, d, d.Add(24*time.Hour)); !slices.Equal(got, want) {
				t.Errorf("folded chains after the late insert\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			wantSessions[2] = `11:30:00 s3 "" 11:30:40 6`
			if got := currentChainSessions(t, e, d, d.Add(24*time.Hour)); !slices.Equal(got, wantSessions) {
				t.Errorf("folded chains' sessions after the late insert\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(wantSessions, "\n"))
			}
			wantRecalls[1] = "11:00 3 2 1 0 0"
			if got := currentRecalls(t, e, d, d.Add(24*time.Hour)); !slices.Equal(got, wantRecalls) {
				t.Errorf("folded failures after the late insert\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(wantRecalls, "\n"))
			}
			// The superseded folds' rows and records go (mutations).
			for start := time.Now(); ; time.Sleep(100 * time.Millisecond) {
				var n []struct {
					Records uint64 `ch:"records_n"`
					Folds   uint64 `ch:"folds_n"`
					Recalls uint64 `ch:"recall_folds_n"`
				}
				if err := e.DB.Select(ctx, &n, `SELECT
					(SELECT count() FROM chain_folds WHERE hour >= toDateTime(@from_s, 'UTC') AND hour < toDateTime(@to_s, 'UTC')) AS records_n,
					(SELECT uniqExact(fold) FROM chains_folded WHERE hour >= toDateTime(@from_s, 'UTC') AND hour < toDateTime(@to_s, 'UTC')) AS folds_n,
					(SELECT uniqExact(fold) FROM recalls_folded WHERE hour >= toDateTime(@from_s, 'UTC') AND hour < toDateTime(@to_s, 'UTC')) AS recall_folds_n`,
					clickhouse.Named("from_s", at("10:00:00").Unix()), clickhouse.Named("to_s", at("13:00:00").Unix())); err != nil {
					t.Fatal(err)
				}
				// Three records; the rows of 10:00's and 11:00's folds and
				// of the open 12:00's, chains and failures alike.
				if n[0].Records == 3 && n[0].Folds == 3 && n[0].Recalls == 3 {
					break
				}
				if time.Since(start) > 30*time.Second {
					t.Fatalf("%d chain fold records, chain rows of %d folds and failures of %d for 10:00-12:00; want 3, 3 and 3 once the superseded ones are deleted",
						n[0].Records, n[0].Folds, n[0].Recalls)
				}
			}
		})
	}
}

// TestRollupChainsRecordsQuietHoursWithoutReading: a new install's hours
// are all quiet and recorded as empty folds that the readers take, with no
// row folded; a quiet hour that holds calls all the same (attached without
// an insert, so that no count of it exists) is folded with its chains; and
// the quiet neighbours of an hour that takes a late insert are recorded
// again at their new count.
func TestRollupChainsRecordsQuietHoursWithoutReading(t *testing.T) {
	ctx := context.Background()
	day := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -1)
	const span = 48 * time.Hour
	chain := func(s string, h time.Time, id uint64) []pipeline.Call {
		return []pipeline.Call{
			chainCall(s, h.Add(10*time.Minute), id, true, `{"q":"a"}`),
			chainCall(s, h.Add(10*time.Minute+20*time.Second), id+1, false, `{"q":"a"}`),
		}
	}
	foldedRows := func(t *testing.T, e *chtest.Engine) uint64 {
		var rows []struct {
			N uint64 `ch:"n"`
		}
		if err := e.DB.Select(ctx, &rows, "SELECT count() AS n FROM chains_folded"); err != nil {
			t.Fatal(err)
		}
		return rows[0].N
	}
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name+"/new install", func(t *testing.T) {
			now := time.Now()
			to := now.UTC().Truncate(time.Hour).Add(-time.Hour)
			res, err := compact.RollupChains(ctx, e.DB, now, span, 0)
			if err != nil || len(res.Folded)+len(res.Unsettled) != 0 || len(res.Quiet) != 48 {
				t.Fatalf("folded %v, quiet %d hours, unsettled %v, err %v; want the 48 hours before %s quiet", res.Folded, len(res.Quiet), res.Unsettled, err, to)
			}
			if hours := currentChainHours(t, e, to.Add(-span), to); len(hours) != 48 {
				t.Fatalf("%d current chain folds; want the 48 quiet hours'", len(hours))
			}
			if n := foldedRows(t, e); n != 0 {
				t.Fatalf("%d chain rows folded; want none", n)
			}
			if res, err := compact.RollupChains(ctx, e.DB, now, span, 0); err != nil || len(res.Folded)+len(res.Quiet)+len(res.Unsettled) != 0 {
				t.Fatalf("second run: %+v %v; want nothing", res, err)
			}
		})
	}
	counted, attached := day.Add(3*time.Hour), day.Add(6*time.Hour)
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name+"/attached and late", func(t *testing.T) {
			e.Insert(t, chain("c", counted, 1))
			e.Insert(t, chain("a", attached, 10))
			// As if the attached hour's calls had been attached: no count.
			at := []any{clickhouse.Named("h", attached.Unix())}
			if err := e.DB.Exec(ctx, "ALTER TABLE calls_hour_inserts DELETE WHERE toUInt32(hour) = @h", at...); err != nil {
				t.Fatal(err)
			}
			for start := time.Now(); ; time.Sleep(100 * time.Millisecond) {
				var n []struct {
					N uint64 `ch:"n"`
				}
				if err := e.DB.Select(ctx, &n, "SELECT count() AS n FROM calls_hour_inserts WHERE toUInt32(hour) = @h", at...); err != nil {
					t.Fatal(err)
				}
				if n[0].N == 0 {
					break
				}
				if time.Since(start) > time.Minute {
					t.Fatal("the attached hour's count is still there a minute after its deletion")
				}
			}
			now := time.Now()
			to := now.UTC().Truncate(time.Hour).Add(-time.Hour)
			res, err := compact.RollupChains(ctx, e.DB, now, span, 0)
			before, after := counted.Add(-time.Hour), counted.Add(time.Hour)
			if err != nil || !slices.Equal(res.Folded, []time.Time{counted, attached}) || len(res.Quiet) != 46 ||
				!slices.Contains(res.Quiet, before) || !slices.Contains(res.Quiet, after) || len(res.Unsettled) != 0 {
				t.Fatalf("folded %v, quiet %v, unsettled %v, err %v; want %v folded and the 46 others quiet", res.Folded, res.Quiet, res.Unsettled, err, []time.Time{counted, attached})
			}
			want := []string{counted.Format("15:04") + " " + counted.Add(10*time.Minute).Format("15:04:05") + " 2 2 0",
				attached.Format("15:04") + " " + attached.Add(10*time.Minute).Format("15:04:05") + " 2 2 0"}
			if got := currentChains(t, e, day, day.Add(24*time.Hour)); !slices.Equal(got, want) {
				t.Errorf("folded chains\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			if hours := currentChainHours(t, e, to.Add(-span), to); len(hours) != 48 {
				t.Errorf("%d current chain folds; want all 48 hours'", len(hours))
			}

			// A late retry in the counted hour: its neighbours, quiet, are
			// recorded again at the new count, and it is folded again.
			e.Insert(t, []pipeline.Call{chainCall("c", counted.Add(10*time.Minute+40*time.Second), 3, false, `{"q":"a"}`)})
			res, err = compact.RollupChains(ctx, e.DB, time.Now(), span, 0)
			if err != nil || !slices.Equal(res.Folded, []time.Time{counted}) || !slices.Equal(res.Quiet, []time.Time{before, after}) || res.Superseded != 3 {
				t.Fatalf("after a late insert: folded %v, quiet %v, %d superseded, err %v; want %v folded, %v recorded again, 3 superseded",
					res.Folded, res.Quiet, res.Superseded, err, counted, []time.Time{before, after})
			}
			if got := currentChains(t, e, day, day.Add(24*time.Hour)); !slices.Equal(got, want) {
				t.Errorf("folded chains after the late insert\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			if hours := currentChainHours(t, e, to.Add(-span), to); len(hours) != 48 {
				t.Errorf("%d current chain folds after the late insert; want all 48 hours'", len(hours))
			}
		})
	}
}

// TestRollupChainsFoldsAgainTheOlderFolds: a chain fold recorded before
// recalls_folded existed (schema/032_chain_folds_recalls.sql: its record's
// recalls is 0, and it wrote no failure), or before chains_folded kept each
// chain's session (schema/039_chain_folds_sessions.sql: its record's
// sessions is 0, and its chains have no session, client, end or first
// call), is not current, so that readers take its hour from the raw calls
// rather than a fold without what they read, and the next run folds the
// hour again, chains and failures, superseding it.
func TestRollupChainsFoldsAgainTheOlderFolds(t *testing.T) {
	ctx := context.Background()
	day := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -1)
	h := day.Add(5 * time.Hour)
	calls := []pipeline.Call{
		chainCall("s", h.Add(10*time.Minute), 1, true, `{"q":"a"}`),
		chainCall("s", h.Add(10*time.Minute+20*time.Second), 2, false, `{"q":"a"}`),
	}
	calls[0].Client, calls[1].Client = "cursor", "cursor"
	// The records and rows as the code before a migration left them.
	older := []struct {
		name  string
		stmts []string
	}{
		{"before 032", []string{
			"TRUNCATE TABLE recalls_folded",
			"INSERT INTO chain_folds (hour, inserts, fold, open, folded) SELECT hour, inserts, fold, open, folded FROM saved_chain_folds",
		}},
		{"before 039", []string{
			"CREATE TABLE saved_chains_folded AS chains_folded",
			"INSERT INTO saved_chains_folded SELECT * FROM chains_folded",
			"TRUNCATE TABLE chains_folded",
			"INSERT INTO chains_folded (hour, fold, tenant, server, tool, start_ms, category, declared_retryable, expected_retryable, outcome, attempts, args_changed, open) " +
				"SELECT hour, fold, tenant, server, tool, start_ms, category, declared_retryable, expected_retryable, outcome, attempts, args_changed, open FROM saved_chains_folded",
			"INSERT INTO chain_folds (hour, inserts, fold, open, folded, recalls) SELECT hour, inserts, fold, open, folded, recalls FROM saved_chain_folds",
			"DROP TABLE saved_chains_folded",
		}},
	}
	const span = 48 * time.Hour
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			e.Insert(t, calls)
			ddl, err := schema.DDLContext(ctx, e.DB) // 18.16 creates LowCardinality columns with its setting
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range older {
				for _, q := range []string{"TRUNCATE TABLE chain_folds", "TRUNCATE TABLE chains_folded", "TRUNCATE TABLE recalls_folded"} {
					if err := e.DB.Exec(ctx, q); err != nil {
						t.Fatalf("%s: %v", q, err)
					}
				}
				if res, err := compact.RollupChains(ctx, e.DB, time.Now(), span, 0); err != nil || !slices.Equal(res.Folded, []time.Time{h}) {
					t.Fatalf("%s: first run: %+v %v; want %s folded", o.name, res, err, h.Format(time.RFC3339))
				}
				stmts := append([]string{
					"CREATE TABLE saved_chain_folds AS chain_folds",
					"INSERT INTO saved_chain_folds SELECT * FROM chain_folds",
					"TRUNCATE TABLE chain_folds",
				}, o.stmts...)
				for _, q := range append(stmts, "DROP TABLE saved_chain_folds") {
					if err := e.DB.Exec(ddl, q); err != nil {
						t.Fatalf("%s: %s: %v", o.name, q, err)
					}
				}
				to := time.Now().UTC().Truncate(time.Hour).Add(-time.Hour)
				if hours := currentChainHours(t, e, to.Add(-span), to); len(hours) != 0 {
					t.Fatalf("%s: %d current chain folds among the older folds; want none", o.name, len(hours))
				}
				if n := len(currentRecalls(t, e, day, day.Add(24*time.Hour))); n != 0 {
					t.Fatalf("%s: %d hours of current folded failures; want none", o.name, n)
				}
				res, err := compact.RollupChains(ctx, e.DB, time.Now(), span, 0)
				if err != nil || !slices.Equal(res.Folded, []time.Time{h}) || len(res.Quiet) != 47 || res.Superseded != 48 {
					t.Fatalf("%s: second run: folded %v, %d quiet, %d superseded, err %v; want %s folded again, the 47 others recorded again, the 48 old folds superseded",
						o.name, res.Folded, len(res.Quiet), res.Superseded, err, h.Format(time.RFC3339))
				}
				if hours := currentChainHours(t, e, to.Add(-span), to); len(hours) != 48 {
					t.Errorf("%s: %d current chain folds; want all 48 hours'", o.name, len(hours))
				}
				want := []string{h.Format("15:04") + " 1 1 1 0 0"}
				if got := currentRecalls(t, e, day, day.Add(24*time.Hour)); !slices.Equal(got, want) {
					t.Errorf("%s: folded failures %q; want %q", o.name, got, want)
				}
				wantSessions := []string{h.Add(10*time.Minute).Format("15:04:05") + ` s "cursor" ` + h.Add(10*time.Minute+20*time.Second).Format("15:04:05") + " 1"}
				if got := currentChainSessions(t, e, day, day.Add(24*time.Hour)); !slices.Equal(got, wantSessions) {
					t.Errorf("%s: folded chains' sessions %q; want %q", o.name, got, wantSessions)
				}
			}
		})
	}
}
