package compact_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/mcplens/mcplens/chtest"
	"github.com/mcplens/mcplens/compact"
	"github.com/mcplens/mcplens/pipeline"
)

// mixedCalls returns n calls on day, spread over tools, tenants, sessions
// and categories, ingested at ingestedMs, with call ids from first; their
// arguments are a department and the ingest time, so that a copy's
// arguments differ from its original's.
func mixedCalls(day time.Time, n int, first uint64, ingestedMs int64) []pipeline.Call {
	cats := []string{"OK", "INVALID_ARGUMENT", "EMPTY_RESULT", "RATE_LIMITED", "OK"}
	out := make([]pipeline.Call, n)
	for i := range out {
		ts := day.Add(time.Duration(i) * 7 * time.Minute)
		cat := cats[i%len(cats)]
		failure := uint8(0)
		if cat == "INVALID_ARGUMENT" || cat == "RATE_LIMITED" {
			failure = 1
		}
		out[i] = pipeline.Call{Time: ts, TimeMs: ts.UnixMilli(), DurationMs: 5,
			Tenant: []string{"acme", "globex"}[i%2], Server: "kb", Tool: []string{"search", "fetch", "list"}[i%3],
			SessionKey: fmt.Sprint("s", i%4), RequestID: fmt.Sprint(first + uint64(i)), CallID: first + uint64(i), Source: "capture", ArgsJSON: "{}",
			ArgKeys: []string{"dept", "at"}, ArgValues: []string{[]string{"finance", "finace", "hr"}[i/2%3], fmt.Sprint(ingestedMs)}, HasResponse: 1, IsError: -1, Category: cat, IsFailure: failure,
			Misflagged: uint8((int64(i) + ingestedMs) % 3 / 2), IngestedMs: ingestedMs}
	}
	return out
}

// foldedCells reads, per bucket of day, the counts of its hour's current
// fold, per hour its sums (calls_1h_folded, lines starting "1h"), its
// copied call ids (calls_copies_folded, lines starting "copied") and their
// latest ingests (calls_latest_folded, "latest") and its INVALID_ARGUMENT
// calls per session and argument (invalid_args_folded, "args") and its
// calls per tool and category (calls_categories_folded, "categories") and
// per category of the latest ingest with the misflagged among them
// (calls_flags_folded, "flags") and its session keys with their tools and
// rows (sessions_folded, "sessions"), and what they must be: calls_5m's merged states for the rollup's counts, and for
// the raw ones the distinct calls among inserted and those whose latest
// ingest is INVALID_ARGUMENT, the call ids inserted more than once, the
// arguments of the calls whose latest ingest is INVALID_ARGUMENT, the
// distinct call ids per category, and the marks (call id 0, calls 0),
// counted here. Copies are what the fold saw: stop the merges of calls
// before inserting them.
func foldedCells(t *testing.T, e *chtest.Engine, day time.Time, inserted []pipeline.Call, quiet []time.Time) (folded, want []string) {
	t.Helper()
	type cell struct {
		Tenant        string `ch:"tenant_name"`
		Tool          string `ch:"tool_name"`
		Bucket        int64  `ch:"bucket_s"`
		Calls         uint64 `ch:"calls_n"`
		Invalid       uint64 `ch:"invalid_n"`
		OK            uint64 `ch:"ok_n"`
		Empty         uint64 `ch:"empty_n"`
		Identities    uint64 `ch:"identities_n"`
		LatestInvalid uint64 `ch:"latest_invalid_n"`
	}
	read := func(q string) []cell {
		var cs []cell
		if err := e.DB.Select(context.Background(), &cs, q); err != nil {
			t.Fatal(err)
		}
		return cs
	}
	line := func(c cell) string {
		return fmt.Sprintf("%s %s %d: %d %d %d %d | %d %d", c.Tenant, c.Tool, c.Bucket, c.Calls, c.Invalid, c.OK, c.Empty, c.Identities, c.LatestInvalid)
	}
	lo, hi := day.Unix(), day.Unix()+86400
	// current reads the current folds' counts of day from table, per
	// bucket (a column), each line prefixed.
	current := func(table, bucket, prefix string) {
		for _, c := range read(fmt.Sprintf(`SELECT toString(tenant) AS tenant_name, toString(tool) AS tool_name, toInt64(toUInt32(%[2]s)) AS bucket_s,
		sum(calls) AS calls_n, sum(invalid) AS invalid_n, sum(ok) AS ok_n, sum(empty) AS empty_n,
		sum(identities) AS identities_n, sum(latest_invalid) AS latest_invalid_n
		FROM %[1]s WHERE (hour, fold) IN (SELECT hour, fold FROM calls_5m_current_folds)
			AND toUInt32(hour) >= %[3]d AND toUInt32(hour) < %[4]d
		GROUP BY tenant, server, tool, %[2]s`, table, bucket, lo, hi)) {
			folded = append(folded, prefix+line(c))
		}
	}
	current("calls_5m_folded", "bucket", "")
	current("calls_1h_folded", "hour", "1h ")
	var copied []struct {
		Hour   int64  `ch:"hour_s"`
		CallID uint64 `ch:"call_id"`
	}
	if err := e.DB.Select(context.Background(), &copied, fmt.Sprintf(`SELECT toInt64(toUInt32(hour)) AS hour_s, call_id
		FROM calls_copies_folded WHERE (hour, fold) IN (SELECT hour, fold FROM calls_5m_current_folds)
			AND toUInt32(hour) >= %d AND toUInt32(hour) < %d`, lo, hi)); err != nil {
		t.Fatal(err)
	}
	for _, c := range copied {
		folded = append(folded, fmt.Sprintf("copied %d %d", c.Hour, c.CallID))
	}
	var latestIngests []struct {
		Hour     int64  `ch:"hour_s"`
		CallID   uint64 `ch:"call_id"`
		LatestMs int64  `ch:"latest_ms"`
		Copies   uint64 `ch:"copies"`
	}
	if err := e.DB.Select(context.Background(), &latestIngests, fmt.Sprintf(`SELECT toInt64(toUInt32(hour)) AS hour_s, call_id, latest_ms, copies
		FROM calls_latest_folded WHERE (hour, fold) IN (SELECT hour, fold FROM calls_5m_current_folds)
			AND toUInt32(hour) >= %d AND toUInt32(hour) < %d`, lo, hi)); err != nil {
		t.Fatal(err)
	}
	for _, c := range latestIngests {
		folded = append(folded, fmt.Sprintf("latest %d %d %d %d", c.Hour, c.CallID, c.LatestMs, c.Copies))
	}
	var args []struct {
		Hour    int64  `ch:"hour_s"`
		Tenant  string `ch:"tenant_name"`
		Server  string `ch:"server_name"`
		Tool    string `ch:"tool_name"`
		Session string `ch:"session_key"`
		Key     string `ch:"arg_key"`
		Value   string `ch:"arg_value"`
		Calls   uint64 `ch:"calls"`
	}
	if err := e.DB.Select(context.Background(), &args, fmt.Sprintf(`SELECT toInt64(toUInt32(hour)) AS hour_s, toString(tenant) AS tenant_name,
		toString(server) AS server_name, toString(tool) AS tool_name, session_key, arg_key, arg_value, calls
		FROM invalid_args_folded WHERE (hour, fold) IN (SELECT hour, fold FROM calls_5m_current_folds)
			AND toUInt32(hour) >= %d AND toUInt32(hour) < %d`, lo, hi)); err != nil {
		t.Fatal(err)
	}
	for _, a := range args {
		folded = append(folded, fmt.Sprintf("args %d %s %s %s %s %s=%s: %d", a.Hour, a.Tenant, a.Server, a.Tool, a.Session, a.Key, a.Value, a.Calls))
	}
	var categories []struct {
		Hour     int64  `ch:"hour_s"`
		Tenant   string `ch:"tenant_name"`
		Server   string `ch:"server_name"`
		Tool     string `ch:"tool_name"`
		Category string `ch:"category_name"`
		Calls    uint64 `ch:"calls"`
	}
	if err := e.DB.Select(context.Background(), &categories, fmt.Sprintf(`SELECT toInt64(toUInt32(hour)) AS hour_s, toString(tenant) AS tenant_name,
		toString(server) AS server_name, toString(tool) AS tool_name, toString(category) AS category_name, calls
		FROM calls_categories_folded WHERE (hour, fold) IN (SELECT hour, fold FROM calls_5m_current_folds)
			AND toUInt32(hour) >= %d AND toUInt32(hour) < %d`, lo, hi)); err != nil {
		t.Fatal(err)
	}
	for _, c := range categories {
		folded = append(folded, fmt.Sprintf("categories %d %s %s %s %s: %d", c.Hour, c.Tenant, c.Server, c.Tool, c.Category, c.Calls))
	}
	var flags []struct {
		Hour       int64  `ch:"hour_s"`
		Tenant     string `ch:"tenant_name"`
		Server     string `ch:"server_name"`
		Tool       string `ch:"tool_name"`
		Category   string `ch:"category_name"`
		Calls      uint64 `ch:"calls"`
		Misflagged uint64 `ch:"misflagged"`
		Failures   uint64 `ch:"failures"`
	}
	if err := e.DB.Select(context.Background(), &flags, fmt.Sprintf(`SELECT toInt64(toUInt32(hour)) AS hour_s, toString(tenant) AS tenant_name,
		toString(server) AS server_name, toString(tool) AS tool_name, toString(category) AS category_name, calls, misflagged, failures
		FROM calls_flags_folded WHERE (hour, fold) IN (SELECT hour, fold FROM calls_5m_current_folds)
			AND toUInt32(hour) >= %d AND toUInt32(hour) < %d`, lo, hi)); err != nil {
		t.Fatal(err)
	}
	for _, c := range flags {
		folded = append(folded, fmt.Sprintf("flags %d %s %s %s %s: %d %d %d", c.Hour, c.Tenant, c.Server, c.Tool, c.Category, c.Calls, c.Misflagged, c.Failures))
	}
	var sessions []struct {
		Hour    int64    `ch:"hour_s"`
		Tenant  string   `ch:"tenant_name"`
		Server  string   `ch:"server_name"`
		Session string   `ch:"session_key"`
		Tools   []string `ch:"tools"`
		Calls   uint64   `ch:"calls"`
	}
	if err := e.DB.Select(context.Background(), &sessions, fmt.Sprintf(`SELECT toInt64(toUInt32(hour)) AS hour_s, toString(tenant) AS tenant_name,
		toString(server) AS server_name, session_key, tools, calls
		FROM sessions_folded WHERE (hour, fold) IN (SELECT hour, fold FROM calls_5m_current_folds)
			AND toUInt32(hour) >= %d AND toUInt32(hour) < %d`, lo, hi)); err != nil {
		t.Fatal(err)
	}
	for _, c := range sessions {
		folded = append(folded, fmt.Sprintf("sessions %d %s %s %s %v: %d", c.Hour, c.Tenant, c.Server, c.Session, c.Tools, c.Calls))
	}
	// The calls per category: distinct call ids of the rows inserted; every
	// hour with calls has the mark.
	type catKey struct {
		hour                      int64
		tenant, server, tool, cat string
	}
	catCalls := map[catKey]map[uint64]bool{}
	for _, c := range inserted {
		h := c.Time.Unix() / 3600 * 3600
		if h < lo || h >= hi {
			continue
		}
		for _, k := range []catKey{{hour: h}, {h, c.Tenant, c.Server, c.Tool, c.Category}} { // the mark, and the call's
			if catCalls[k] == nil {
				catCalls[k] = map[uint64]bool{}
			}
		}
		catCalls[catKey{h, c.Tenant, c.Server, c.Tool, c.Category}][c.CallID] = true
	}
	for k, ids := range catCalls {
		want = append(want, fmt.Sprintf("categories %d %s %s %s %s: %d", k.hour, k.tenant, k.server, k.tool, k.cat, len(ids)))
	}
	// The copied call ids: those inserted more than once in an hour of day,
	// and 0, the mark of a fold that lists them, in every hour with calls.
	rows := map[[2]int64]int{}
	for _, c := range inserted {
		if h := c.Time.Unix() / 3600 * 3600; h >= lo && h < hi {
			rows[[2]int64{h, int64(c.CallID)}]++
			rows[[2]int64{h, 0}] = 2
		}
	}
	for k, n := range rows {
		if n > 1 {
			want = append(want, fmt.Sprintf("copied %d %d", k[0], k[1]))
		}
	}
	// Their latest ingests: the largest IngestedMs of the copied call's
	// rows and how many rows carry it; 0 0 with the mark, call id 0.
	type ingests struct {
		latest int64
		copies int
	}
	latestOf := map[[2]int64]ingests{}
	for _, c := range inserted {
		k := [2]int64{c.Time.Unix() / 3600 * 3600, int64(c.CallID)}
		if rows[k] < 2 {
			continue
		}
		switch l := latestOf[k]; {
		case l.copies == 0 || c.IngestedMs > l.latest:
			latestOf[k] = ingests{c.IngestedMs, 1}
		case c.IngestedMs == l.latest:
			latestOf[k] = ingests{l.latest, l.copies + 1}
		}
	}
	for k, n := range rows {
		if k[1] == 0 && n > 1 {
			latestOf[k] = ingests{}
		}
	}
	for k, l := range latestOf {
		want = append(want, fmt.Sprintf("latest %d %d %d %d", k[0], k[1], l.latest, l.copies))
	}
	// The raw counts: each call's latest copy, by identity.
	latest := map[[3]string]pipeline.Call{}
	for _, c := range inserted {
		k := [3]string{c.Tenant, c.Tool, fmt.Sprint(c.SessionKey, c.TimeMs, c.CallID)}
		if l, ok := latest[k]; !ok || c.IngestedMs > l.IngestedMs {
			latest[k] = c
		}
	}
	type key struct {
		tenant, tool string
		bucket       int64
	}
	ids, inv := map[key]uint64{}, map[key]uint64{}
	hours := map[key]cell{}
	pairs := map[string]int{} // the latest INVALID_ARGUMENT ingests' arguments, and the marks
	for _, c := range latest {
		k := key{c.Tenant, c.Tool, c.Time.Unix() / 300 * 300}
		ids[k]++
		if c.Category == "INVALID_ARGUMENT" {
			inv[k]++
		}
		if hour := k.bucket / 3600 * 3600; hour >= lo && hour < hi {
			pairs[fmt.Sprintf("args %d     =", hour)] += 0 // the mark of every folded hour
			for i, name := range c.ArgKeys {
				if c.Category == "INVALID_ARGUMENT" {
					pairs[fmt.Sprintf("args %d %s %s %s %s %s=%s", hour, c.Tenant, c.Server, c.Tool, c.SessionKey, name, c.ArgValues[i])]++
				}
			}
		}
	}
	for p, n := range pairs {
		want = append(want, fmt.Sprintf("%s: %d", p, n))
	}
	// The calls per category of their latest ingest, the misflagged and
	// the failed among them; the mark of every folded hour (failures 1: a
	// fold that counts them).
	flagged := map[string][3]int{}
	for _, c := range latest {
		if hour := c.Time.Unix() / 3600 * 3600; hour >= lo && hour < hi {
			flagged[fmt.Sprintf("flags %d    ", hour)] = [3]int{0, 0, 1}
			k := fmt.Sprintf("flags %d %s %s %s %s", hour, c.Tenant, c.Server, c.Tool, c.Category)
			n := flagged[k]
			flagged[k] = [3]int{n[0] + 1, n[1] + int(c.Misflagged), n[2] + int(c.IsFailure)}
		}
	}
	for k, n := range flagged {
		want = append(want, fmt.Sprintf("%s: %d %d %d", k, n[0], n[1], n[2]))
	}
	// The session keys with the tools they called, sorted, and their rows
	// inserted, every copy; the mark (calls 0) of every folded hour.
	type sessionKey struct {
		hour                    int64
		tenant, server, session string
	}
	keyRows, keyTools := map[sessionKey]int{}, map[sessionKey][]string{}
	for _, c := range inserted {
		if hour := c.Time.Unix() / 3600 * 3600; hour >= lo && hour < hi {
			keyRows[sessionKey{hour: hour}] += 0
			k := sessionKey{hour, c.Tenant, c.Server, c.SessionKey}
			keyRows[k]++
			if !slices.Contains(keyTools[k], c.Tool) {
				keyTools[k] = append(keyTools[k], c.Tool)
			}
		}
	}
	for k, n := range keyRows {
		slices.Sort(keyTools[k])
		want = append(want, fmt.Sprintf("sessions %d %s %s %s %v: %d", k.hour, k.tenant, k.server, k.session, keyTools[k], n))
	}
	for _, c := range read(fmt.Sprintf(`SELECT toString(tenant) AS tenant_name, toString(tool) AS tool_name, toInt64(toUInt32(bucket)) AS bucket_s,
		toUInt64(uniqExactMerge(calls)) AS calls_n, toUInt64(uniqExactMergeIf(calls, category = 'INVALID_ARGUMENT')) AS invalid_n,
		toUInt64(uniqExactMergeIf(calls, is_failure = 0)) AS ok_n, toUInt64(uniqExactMergeIf(calls, category = 'EMPTY_RESULT')) AS empty_n,
		toUInt64(0) AS identities_n, toUInt64(0) AS latest_invalid_n
		FROM calls_5m WHERE toUInt32(bucket) >= %d AND toUInt32(bucket) < %d GROUP BY tenant, server, tool, bucket`, lo, hi)) {
		k := key{c.Tenant, c.Tool, c.Bucket}
		c.Identities, c.LatestInvalid = ids[k], inv[k]
		want = append(want, line(c))
		h := key{c.Tenant, c.Tool, c.Bucket / 3600 * 3600}
		s := hours[h]
		s.Tenant, s.Tool, s.Bucket = h.tenant, h.tool, h.bucket
		s.Calls, s.Invalid, s.OK, s.Empty = s.Calls+c.Calls, s.Invalid+c.Invalid, s.OK+c.OK, s.Empty+c.Empty
		s.Identities, s.LatestInvalid = s.Identities+c.Identities, s.LatestInvalid+c.LatestInvalid
		hours[h] = s
	}
	for _, s := range hours {
		want = append(want, "1h "+line(s))
	}
	// A quiet hour's fold holds the marks only.
	for _, q := range quiet {
		if h := q.Unix(); h >= lo && h < hi {
			want = append(want, fmt.Sprintf("copied %d 0", h), fmt.Sprintf("latest %d 0 0 0", h), fmt.Sprintf("args %d     =: 0", h),
				fmt.Sprintf("categories %d    : 0", h), fmt.Sprintf("flags %d    : 0 0 1", h), fmt.Sprintf("sessions %d    []: 0", h))
		}
	}
	slices.Sort(folded)
	slices.Sort(want)
	return folded, want
}

// hoursOf returns the starts of the hours before now's hour that calls
// fall in, sorted: what RollupHours folds of them.
func hoursOf(calls []pipeline.Call, now time.Time) []time.Time {
	seen := map[time.Time]bool{}
	var out []time.Time
	for _, c := range calls {
		h := c.Time.UTC().Truncate(time.Hour)
		if h.Before(now.UTC().Truncate(time.Hour)) && !seen[h] {
			seen[h] = true
			out = append(out, h)
		}
	}
	slices.SortFunc(out, func(a, b time.Time) int { return a.Compare(b) })
	return out
}

// quietOf returns the starts of the hours between the first and the last
// before now's hour that calls fall in that none falls in, sorted: what
// RollupHours folds as quiet hours.
func quietOf(calls []pipeline.Call, now time.Time) []time.Time {
	busy := hoursOf(calls, now)
	var out []time.Time
	for h := busy[0]; h.Before(busy[len(busy)-1]); h = h.Add(time.Hour) {
		if !slices.Contains(busy, h) {
			out = append(out, h)
		}
	}
	return out
}

// TestRollupHoursFoldsEachSettledHourOnce folds the complete hours of two
// days, one of them holding a reclassified copy of every call: the folded
// counts are the merged states' of each bucket, and the raw calls' as the
// latest ingest of each call counts them, and the copied call ids those of
// the day inserted twice. The hours without calls between them are
// folded as quiet hours, with the marks only. A second run folds nothing; a
// late insert into a folded hour waits for the settle time and is then
// folded again, into a new fold that holds it, and the fold it supersedes
// is deleted.
func TestRollupHoursFoldsEachSettledHourOnce(t *testing.T) {
	ctx := context.Background()
	// Days before today, by the clock the server stamps inserts with:
	// RollupHours compares their time with now.
	today := time.Now().UTC().Truncate(24 * time.Hour)
	d1, d2 := today.AddDate(0, 0, -2), today.AddDate(0, 0, -1)
	const span = 5 * 24 * time.Hour
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			// The copies stay unmerged, so that every fold records them.
			e.StopMerges(t)
			var inserted []pipeline.Call
			insert := func(cs []pipeline.Call) {
				e.Insert(t, cs)
				inserted = append(inserted, cs...)
			}
			insert(mixedCalls(d1, 150, 1, 1))
			insert(mixedCalls(d2, 120, 1000, 1))
			again := mixedCalls(d2, 120, 1000, 2) // every call of d2 again, reclassified
			for i := range again {
				again[i].Category, again[i].IsFailure = "INVALID_ARGUMENT", 1
				if i%4 == 0 {
					again[i].Category, again[i].IsFailure = "OK", 0
				}
			}
			insert(again)
			insert(mixedCalls(today, 40, 5000, 1)) // folded up to now's hour
			now := time.Now()

			res, err := compact.RollupHours(ctx, e.DB, now, span, 0)
			if err != nil {
				t.Fatal(err)
			}
			if want := hoursOf(inserted, now); len(want) < 30 || !slices.Equal(res.Folded, want) || len(res.Unsettled) != 0 {
				t.Fatalf("folded %v, unsettled %v; want %v and none", res.Folded, res.Unsettled, want)
			}
			quiet := res.Quiet
			if want := quietOf(inserted, now); len(want) == 0 || !slices.Equal(quiet, want) {
				t.Fatalf("quiet hours folded %v; want %v", quiet, want)
			}
			for _, d := range []time.Time{d1, d2} {
				folded, want := foldedCells(t, e, d, inserted, quiet)
				if len(want) == 0 || !slices.Equal(folded, want) {
					t.Errorf("%s: folded\n%s\nwant\n%s", d.Format(time.DateOnly), strings.Join(folded, "\n"), strings.Join(want, "\n"))
				}
			}
			folds := len(res.Folded)

			if res, err := compact.RollupHours(ctx, e.DB, now, span, 0); err != nil || len(res.Folded)+len(res.Quiet)+len(res.Unsettled) != 0 {
				t.Fatalf("second run: folded %v, unsettled %v, err %v; want nothing", res.Folded, res.Unsettled, err)
			}

			late := mixedCalls(d2.Add(5*time.Hour), 3, 9000, 3) // 05:00-05:14, an hour with copies
			insert(late)
			lateHour := []time.Time{d2.Add(5 * time.Hour)}
			now = time.Now()
			res, err = compact.RollupHours(ctx, e.DB, now, span, time.Hour)
			if err != nil || len(res.Folded) != 0 || !slices.Equal(res.Unsettled, lateHour) {
				t.Fatalf("right after a late insert: folded %v, unsettled %v, err %v; want %v unsettled", res.Folded, res.Unsettled, err, lateHour)
			}
			res, err = compact.RollupHours(ctx, e.DB, now, span, 0)
			if err != nil || !slices.Equal(res.Folded, lateHour) || res.Superseded != 1 {
				t.Fatalf("once settled: folded %v, %d superseded, err %v; want %v and its first fold superseded", res.Folded, res.Superseded, err, lateHour)
			}
			folded, want := foldedCells(t, e, d2, inserted, quiet)
			if !slices.Equal(folded, want) {
				t.Errorf("after the late insert: folded\n%s\nwant\n%s", strings.Join(folded, "\n"), strings.Join(want, "\n"))
			}
			// The superseded fold's rows and record go (mutations); the
			// other hours' folds stay, the quiet hours' with no rows.
			for start := time.Now(); ; time.Sleep(100 * time.Millisecond) {
				var n []struct {
					Folds uint64 `ch:"folds_n"`
					Rows  uint64 `ch:"rows_n"`
					Sums  uint64 `ch:"sums_n"`
					Stale uint64 `ch:"stale_n"`
				}
				if err := e.DB.Select(ctx, &n, `SELECT (SELECT count() FROM calls_5m_folds) AS folds_n, (SELECT uniqExact(hour, fold) FROM calls_5m_folded) AS rows_n,
					(SELECT uniqExact(hour, fold) FROM calls_1h_folded) AS sums_n,
					(SELECT count() FROM calls_copies_folded WHERE (hour, fold) NOT IN (SELECT hour, fold FROM calls_5m_folds)) AS stale_n`); err != nil {
					t.Fatal(err)
				}
				if n[0].Folds == uint64(folds+len(quiet)) && n[0].Rows == uint64(folds) && n[0].Sums == uint64(folds) && n[0].Stale == 0 {
					break
				}
				if time.Since(start) > time.Minute {
					t.Fatalf("%d fold records, rows of %d folds, sums of %d and %d copied calls of no fold a minute after the refold; want %d records, %d of the others and none", n[0].Folds, n[0].Rows, n[0].Sums, n[0].Stale, folds+len(quiet), folds)
				}
			}
		})
	}
}

// TestRollupHoursFoldsAgainWhatListsNoCopies: folds made before the folds
// listed their hour's copies or their latest ingests, or held its schema
// violations, INVALID_ARGUMENT arguments or calls per category
// (calls_copies_folded, calls_latest_folded, violations_folded,
// violation_outcomes_folded, invalid_args_folded, calls_categories_folded,
// calls_flags_folded or sessions_folded emptied, as each is after the upgrade that
// adds it), or before the flags fold counted failures (its rows without
// them, as schema/042 leaves them), are made again at the same insert count by the next run, which then
// lists them and deletes the older folds; a run after that folds nothing.
func TestRollupHoursFoldsAgainWhatListsNoCopies(t *testing.T) {
	ctx := context.Background()
	day := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -1)
	// The flags fold before schema/042: its rows and marks with failures 0.
	beforeFailures := []string{
		`CREATE TABLE flags_before_042 ENGINE = Memory AS SELECT hour, fold, CAST(tenant AS String) AS tenant, CAST(server AS String) AS server,
			CAST(tool AS String) AS tool, CAST(category AS String) AS category, calls, misflagged FROM calls_flags_folded`,
		"TRUNCATE TABLE calls_flags_folded",
		"INSERT INTO calls_flags_folded (hour, fold, tenant, server, tool, category, calls, misflagged) SELECT * FROM flags_before_042",
		"DROP TABLE flags_before_042",
	}
	for _, emptied := range []string{"calls_copies_folded", "calls_latest_folded", "violations_folded", "violation_outcomes_folded", "invalid_args_folded", "calls_categories_folded", "calls_flags_folded", "calls_flags_folded before 042", "sessions_folded"} {
		for _, e := range chtest.Engines(t) {
			t.Run(e.Name+"/"+emptied, func(t *testing.T) {
				e.StopMerges(t)
				calls := mixedCalls(day, 60, 1, 1)
				again := mixedCalls(day, 60, 1, 2)[:20] // copies in the first hours
				e.Insert(t, calls)
				e.Insert(t, again)
				inserted := append(calls, again...)
				hours := hoursOf(inserted, time.Now())
				first, err := compact.RollupHours(ctx, e.DB, time.Now(), 48*time.Hour, 0)
				if err != nil || !slices.Equal(first.Folded, hours) {
					t.Fatalf("first run: %v %v, want %v folded", first, err, hours)
				}
				quiet := first.Quiet
				stmts := []string{"TRUNCATE TABLE " + emptied}
				if strings.HasSuffix(emptied, "before 042") {
					stmts = beforeFailures
				}
				for _, q := range stmts {
					if err := e.DB.Exec(ctx, q); err != nil {
						t.Fatal(err)
					}
				}
				res, err := compact.RollupHours(ctx, e.DB, time.Now(), 48*time.Hour, 0)
				if err != nil || !slices.Equal(res.Folded, hours) || !slices.Equal(res.Quiet, quiet) || res.Superseded != len(hours)+len(quiet) {
					t.Fatalf("after the lists were emptied: %v %v, want %v and the quiet %v folded again and their %d first folds superseded", res, err, hours, quiet, len(hours)+len(quiet))
				}
				if folded, want := foldedCells(t, e, day, inserted, quiet); !slices.Equal(folded, want) {
					t.Errorf("folded\n%s\nwant\n%s", strings.Join(folded, "\n"), strings.Join(want, "\n"))
				}
				for start := time.Now(); ; time.Sleep(100 * time.Millisecond) {
					var n []struct {
						Folds uint64 `ch:"folds_n"`
						Rows  uint64 `ch:"rows_n"`
					}
					if err := e.DB.Select(ctx, &n, "SELECT (SELECT count() FROM calls_5m_folds) AS folds_n, (SELECT uniqExact(hour, fold) FROM calls_5m_folded) AS rows_n"); err != nil {
						t.Fatal(err)
					}
					if n[0].Folds == uint64(len(hours)+len(quiet)) && n[0].Rows == uint64(len(hours)) {
						break
					}
					if time.Since(start) > time.Minute {
						t.Fatalf("%d fold records and rows of %d folds a minute after the refold; want %d and %d", n[0].Folds, n[0].Rows, len(hours)+len(quiet), len(hours))
					}
				}
				if res, err := compact.RollupHours(ctx, e.DB, time.Now(), 48*time.Hour, 0); err != nil || len(res.Folded)+len(res.Quiet)+len(res.Unsettled) != 0 {
					t.Fatalf("third run: %v %v, want nothing folded", res, err)
				}
			})
		}
	}
}

func TestRollupHoursNamesWhatFailed(t *testing.T) {
	_, err := compact.RollupHours(context.Background(), failingDB{}, time.Now(), 3*time.Hour, 0)
	if err == nil || !strings.Contains(err.Error(), "count rollup inserts: server gone") {
		t.Fatalf("error %v, want the step named", err)
	}
	if res, err := compact.RollupHours(context.Background(), failingDB{}, time.Now(), 0, 0); err != nil || len(res.Folded) != 0 {
		t.Fatalf("no span: %v %v, want nothing done", res, err)
	}
}

// failingExec fails every Exec after the first n.
type failingExec struct {
	compact.DB
	n int
}

func (f *failingExec) Exec(ctx context.Context, q string, args ...any) error {
	if f.n == 0 {
		return errors.New("server gone")
	}
	f.n--
	return f.DB.Exec(ctx, q, args...)
}

// TestRollupHoursCutShortIsNeverRead: a fold cut short (the server gone)
// after its calls_5m_folded rows, or after any later step of it (sums,
// copied call ids, latest ingests, schema violations, INVALID_ARGUMENT
// arguments, calls per category, per category and flag), but before its
// record, is never read; the next run folds the hour again.
func TestRollupHoursCutShortIsNeverRead(t *testing.T) {
	ctx := context.Background()
	hour := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -1).Add(7 * time.Hour)
	for _, cut := range []struct {
		execs int    // statements that succeed
		step  string // the error names the step cut
	}{
		{1, "sum rollup hour "},
		{2, "list copied calls of hour "},
		{3, "record copied calls' latest ingests of hour "},
		{4, "fold schema violations of hour "},
		{5, "fold schema violation outcomes of hour "},
		{6, "fold INVALID_ARGUMENT arguments of hour "},
		{7, "fold calls per category of hour "},
		{8, "fold calls per category and flag of hour "},
		{9, "fold session keys of hour "},
		{10, "record rollup fold of "},
	} {
		for _, e := range chtest.Engines(t) {
			t.Run(fmt.Sprintf("%s/after%d", e.Name, cut.execs), func(t *testing.T) {
				calls := mixedCalls(hour, 8, 1, 1) // 07:00-07:49
				e.Insert(t, calls)
				_, err := compact.RollupHours(ctx, &failingExec{DB: e.DB, n: cut.execs}, time.Now(), 48*time.Hour, 0)
				if err == nil || !strings.Contains(err.Error(), cut.step+hour.Format(time.RFC3339)+": server gone") {
					t.Fatalf("error %v, want the hour and step named", err)
				}
				var n []struct {
					Rows    uint64 `ch:"rows_n"`
					Current uint64 `ch:"current_n"`
				}
				if err := e.DB.Select(ctx, &n, "SELECT (SELECT count() FROM calls_5m_folded) AS rows_n, (SELECT count() FROM calls_5m_current_folds) AS current_n"); err != nil {
					t.Fatal(err)
				}
				if n[0].Rows == 0 || n[0].Current != 0 {
					t.Fatalf("after the cut: %d folded rows, %d current folds; want some rows and no current fold", n[0].Rows, n[0].Current)
				}
				res, err := compact.RollupHours(ctx, e.DB, time.Now(), 48*time.Hour, 0)
				if err != nil || !slices.Equal(res.Folded, []time.Time{hour}) || len(res.Quiet) != 0 {
					t.Fatalf("next run: %v %v, want the hour folded", res, err)
				}
				if folded, want := foldedCells(t, e, hour.Truncate(24*time.Hour), calls, nil); !slices.Equal(folded, want) {
					t.Errorf("folded\n%s\nwant\n%s", strings.Join(folded, "\n"), strings.Join(want, "\n"))
				}
			})
		}
	}
}

// violationCells reads the current folds' schema violations: per hour,
// tenant, server, tool, side, path, reason, definition version and
// suggestion the smallest detail and the folded calls, invalid and accepted
// counts (violations_folded, lines starting "v"), and
// per second, tenant, server, tool and outcome the folded calls
// (violation_outcomes_folded, "o"); and what they must be, counted here from
// the inserted rows: each call's violation as its latest ingest, the
// validated calls per hour and tool, and the marks (side or outcome empty)
// in every hour with rows.
func violationCells(t *testing.T, e *chtest.Engine, inserted []pipeline.Violation, callRows []pipeline.Call, quiet []time.Time) (folded, want []string) {
	t.Helper()
	var vs []struct {
		Hour       int64  `ch:"hour_s"`
		Tenant     string `ch:"tenant_name"`
		Server     string `ch:"server_name"`
		Tool       string `ch:"tool_name"`
		Side       string `ch:"side_name"`
		Path       string `ch:"path"`
		Reason     string `ch:"reason_name"`
		Hash       uint64 `ch:"definition_hash"`
		Suggestion string `ch:"suggestion"`
		Detail     string `ch:"detail"`
		Calls      uint64 `ch:"calls"`
		Invalid    uint64 `ch:"invalid"`
		Accepted   uint64 `ch:"accepted"`
	}
	if err := e.DB.Select(context.Background(), &vs, `SELECT toInt64(toUInt32(hour)) AS hour_s, toString(tenant) AS tenant_name, toString(server) AS server_name,
		toString(tool) AS tool_name, toString(side) AS side_name, path, toString(reason) AS reason_name, definition_hash, suggestion, detail, calls, invalid, accepted
		FROM violations_folded WHERE (hour, fold) IN (SELECT hour, fold FROM calls_5m_current_folds)`); err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		folded = append(folded, fmt.Sprintf("v %d %s %s %s %s %s %s %d %s: %s %d %d %d", v.Hour, v.Tenant, v.Server, v.Tool, v.Side, v.Path, v.Reason, v.Hash, v.Suggestion, v.Detail, v.Calls, v.Invalid, v.Accepted))
	}
	var outs []struct {
		Second  int64  `ch:"second_s"`
		Tenant  string `ch:"tenant_name"`
		Server  string `ch:"server_name"`
		Tool    string `ch:"tool_name"`
		Outcome string `ch:"outcome_name"`
		Calls   uint64 `ch:"calls"`
	}
	if err := e.DB.Select(context.Background(), &outs, `SELECT toInt64(toUInt32(second)) AS second_s, toString(tenant) AS tenant_name, toString(server) AS server_name,
		toString(tool) AS tool_name, toString(outcome) AS outcome_name, calls
		FROM violation_outcomes_folded WHERE (hour, fold) IN (SELECT hour, fold FROM calls_5m_current_folds)`); err != nil {
		t.Fatal(err)
	}
	for _, o := range outs {
		folded = append(folded, fmt.Sprintf("o %d %s %s %s %s: %d", o.Second, o.Tenant, o.Server, o.Tool, o.Outcome, o.Calls))
	}

	// Each (call, side, path, reason) as its latest ingest.
	type rowKey struct {
		tenant, server, tool string
		ms                   int64
		id                   uint64
		side, path, reason   string
	}
	latest := map[rowKey]pipeline.Violation{}
	for _, v := range inserted {
		k := rowKey{v.Tenant, v.Server, v.Tool, v.TimeMs, v.CallID, v.Side, v.Path, v.Reason}
		if l, ok := latest[k]; !ok || v.IngestedMs > l.IngestedMs {
			latest[k] = v
		}
	}
	type set map[uint64]bool
	add := func(m map[string]set, k string, id uint64) {
		if m[k] == nil {
			m[k] = set{}
		}
		m[k][id] = true
	}
	calls, invalid, accepted, outcomes := map[string]set{}, map[string]set{}, map[string]set{}, map[string]set{}
	detail := map[string]string{} // the smallest detail of each violation row
	for _, v := range latest {
		hour := v.Time.Unix() / 3600 * 3600
		add(calls, fmt.Sprintf("v %d %s %s %s %s %s %s %d %s", hour, "", "", "", "", "", "", 0, "")+"mark", 0) // a mark per hour with rows
		add(outcomes, fmt.Sprintf("o %d    ", hour)+"mark", 0)
		if v.Reason == "" {
			continue
		}
		k := fmt.Sprintf("v %d %s %s %s %s %s %s %d %s", hour, v.Tenant, v.Server, v.Tool, v.Side, v.Path, v.Reason, v.DefinitionHash, v.Suggestion)
		add(calls, k, v.CallID)
		if d, ok := detail[k]; !ok || v.Detail < d {
			detail[k] = v.Detail
		}
		if v.Category == "INVALID_ARGUMENT" {
			add(invalid, k, v.CallID)
		}
		if v.IsFailure == 0 {
			add(accepted, k, v.CallID)
		}
		outcome := "arguments, other failure"
		switch {
		case v.Side == pipeline.SideResult:
			outcome = "result breaks outputSchema"
		case v.Category == "INVALID_ARGUMENT":
			outcome = "arguments refused"
		case v.IsFailure == 0:
			outcome = "arguments accepted"
		}
		add(outcomes, fmt.Sprintf("o %d %s %s %s %s", v.Time.Unix(), v.Tenant, v.Server, v.Tool, outcome), v.CallID)
	}
	// Validated: an ingest's args_validated, or (before migration 024) a row of side arguments.
	for _, v := range inserted {
		if v.Side == pipeline.SideArguments {
			add(calls, fmt.Sprintf("v %d %s %s %s arguments   0 ", v.Time.Unix()/3600*3600, v.Tenant, v.Server, v.Tool), v.CallID)
		}
	}
	for _, c := range callRows {
		hour := c.Time.Unix() / 3600 * 3600
		add(calls, fmt.Sprintf("v %d %s %s %s %s %s %s %d %s", hour, "", "", "", "", "", "", 0, "")+"mark", 0)
		add(outcomes, fmt.Sprintf("o %d    ", hour)+"mark", 0)
		if c.ArgsValidated == 1 {
			add(calls, fmt.Sprintf("v %d %s %s %s arguments   0 ", hour, c.Tenant, c.Server, c.Tool), c.CallID)
		}
	}
	for _, q := range quiet { // a quiet hour's fold: the marks only
		add(calls, fmt.Sprintf("v %d %s %s %s %s %s %s %d %s", q.Unix(), "", "", "", "", "", "", 0, "")+"mark", 0)
		add(outcomes, fmt.Sprintf("o %d    ", q.Unix())+"mark", 0)
	}
	for k, ids := range calls {
		if strings.HasSuffix(k, "mark") {
			want = append(want, strings.TrimSuffix(k, "mark")+":  0 0 0")
			continue
		}
		want = append(want, fmt.Sprintf("%s: %s %d %d %d", k, detail[k], len(ids), len(invalid[k]), len(accepted[k])))
	}
	for k, ids := range outcomes {
		if strings.HasSuffix(k, "mark") {
			want = append(want, strings.TrimSuffix(k, "mark")+": 0")
			continue
		}
		want = append(want, fmt.Sprintf("%s: %d", k, len(ids)))
	}
	slices.Sort(folded)
	slices.Sort(want)
	return folded, want
}

// TestRollupHoursFoldsViolations folds hours that hold schema violations
// and the calls rows of validated calls (chtest.ReplayedViolations: both
// ways ingest has said that a call's arguments were validated), re-ingested
// with other classifications and suggestions: the violation inserts count
// as the hour's (calls_hour_inserts), and the folded counts are each call's
// latest ingest's, per path and per outcome, with the validated calls per
// tool. A late violation row in a folded hour waits
// for the settle time and is then folded again.
func TestRollupHoursFoldsViolations(t *testing.T) {
	ctx := context.Background()
	day := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -1)
	rows, replays, calls := chtest.ReplayedViolations(7, 600, day, 20*time.Hour)
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			inserted := append(slices.Clone(rows), replays...)
			e.InsertTools(t, pipeline.ToolRows{Violations: rows})
			e.InsertTools(t, pipeline.ToolRows{Violations: replays})
			e.Insert(t, calls)
			seen := map[time.Time]bool{}
			var hours []time.Time
			for _, v := range inserted {
				if h := v.Time.UTC().Truncate(time.Hour); !seen[h] {
					seen[h] = true
					hours = append(hours, h)
				}
			}
			for _, c := range calls {
				if h := c.Time.UTC().Truncate(time.Hour); !seen[h] {
					seen[h] = true
					hours = append(hours, h)
				}
			}
			slices.SortFunc(hours, func(a, b time.Time) int { return a.Compare(b) })
			res, err := compact.RollupHours(ctx, e.DB, time.Now(), 48*time.Hour, 0)
			if err != nil || !slices.Equal(res.Folded, hours) {
				t.Fatalf("first run: %v %v, want the %d hours with violations folded", res, err, len(hours))
			}
			var quiet []time.Time // the hours without rows between the first and the last
			for h := hours[0]; h.Before(hours[len(hours)-1]); h = h.Add(time.Hour) {
				if !seen[h] {
					quiet = append(quiet, h)
				}
			}
			if !slices.Equal(res.Quiet, quiet) {
				t.Fatalf("first run: quiet hours %v folded, want %v", res.Quiet, quiet)
			}
			folded, want := violationCells(t, e, inserted, calls, quiet)
			if len(want) < 100 || !slices.Equal(folded, want) {
				t.Fatalf("folded\n%s\nwant\n%s", strings.Join(folded, "\n"), strings.Join(want, "\n"))
			}
			late := rows[0]
			late.IngestedMs, late.Category, late.IsFailure = 9, "INVALID_ARGUMENT", 1
			e.InsertTools(t, pipeline.ToolRows{Violations: []pipeline.Violation{late}})
			inserted = append(inserted, late)
			lateHour := []time.Time{late.Time.UTC().Truncate(time.Hour)}
			if res, err := compact.RollupHours(ctx, e.DB, time.Now(), 48*time.Hour, time.Hour); err != nil || len(res.Folded) != 0 || !slices.Equal(res.Unsettled, lateHour) {
				t.Fatalf("right after a late violation: %v %v, want %v unsettled", res, err, lateHour)
			}
			if res, err := compact.RollupHours(ctx, e.DB, time.Now(), 48*time.Hour, 0); err != nil || !slices.Equal(res.Folded, lateHour) || res.Superseded != 1 {
				t.Fatalf("once settled: %v %v, want %v folded again and its first fold superseded", res, err, lateHour)
			}
			if folded, want := violationCells(t, e, inserted, calls, quiet); !slices.Equal(folded, want) {
				t.Errorf("after the late violation: folded\n%s\nwant\n%s", strings.Join(folded, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

// TestRollupHoursFoldsQuietHours: a new install (no insert counted) has no
// quiet hours. Every hour without calls or violations between two hours
// with counted inserts is folded as empty, at a count of 0, and the
// current folds list it, so that readers take it as folded; the hours
// after the last insert are not (an idle install folds nothing); an hour
// that holds rows no insert counted (rows attached, here its count
// deleted) is not taken as empty, whether the rows are calls or schema
// violations. A late insert into a quiet hour makes its fold stale: the
// next run folds the hour with its calls and supersedes the empty fold.
func TestRollupHoursFoldsQuietHours(t *testing.T) {
	ctx := context.Background()
	day := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -1)
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			if res, err := compact.RollupHours(ctx, e.DB, time.Now(), 48*time.Hour, 0); err != nil || len(res.Folded)+len(res.Quiet) != 0 {
				t.Fatalf("new install: %v %v, want nothing folded", res, err)
			}
			calls := slices.Concat(mixedCalls(day.Add(2*time.Hour), 5, 1, 1), mixedCalls(day.Add(5*time.Hour), 5, 100, 1), mixedCalls(day.Add(9*time.Hour), 5, 400, 1)) // 02:00, 05:00, 09:00
			attached := mixedCalls(day.Add(4*time.Hour), 3, 200, 1)                                                                                                     // 04:00-04:14
			rows, _, _ := chtest.ReplayedViolations(3, 1, day, time.Hour)
			violation := rows[0]
			violation.Time = day.Add(7 * time.Hour)
			e.Insert(t, calls)
			e.Insert(t, attached)
			e.InsertTools(t, pipeline.ToolRows{Violations: []pipeline.Violation{violation}})
			// As if 04:00's calls and 07:00's violation had been attached:
			// no count of their hours, no rollup of 04:00's calls.
			uncounted := []time.Time{day.Add(4 * time.Hour), day.Add(7 * time.Hour)}
			at := []any{clickhouse.Named("a", uncounted[0].Unix()), clickhouse.Named("b", uncounted[1].Unix())}
			if err := e.DB.Exec(ctx, "ALTER TABLE calls_hour_inserts DELETE WHERE toUInt32(hour) IN (@a, @b)", at...); err != nil {
				t.Fatal(err)
			}
			if err := e.DB.Exec(ctx, "ALTER TABLE calls_5m DELETE WHERE intDiv(toUInt32(bucket), 3600) * 3600 = @a", at...); err != nil {
				t.Fatal(err)
			}
			for start := time.Now(); ; time.Sleep(100 * time.Millisecond) {
				var n []struct {
					Hours   uint64 `ch:"hours_n"`
					Buckets uint64 `ch:"buckets_n"`
				}
				if err := e.DB.Select(ctx, &n, "SELECT (SELECT count() FROM calls_hour_inserts) AS hours_n, (SELECT count() FROM calls_5m WHERE intDiv(toUInt32(bucket), 3600) * 3600 = @a) AS buckets_n", at...); err != nil {
					t.Fatal(err)
				}
				if n[0].Hours == 3 && n[0].Buckets == 0 {
					break
				}
				if time.Since(start) > time.Minute {
					t.Fatalf("%d hours counted and %d rollup rows of 04:00 a minute after the deletions; want 3 and none", n[0].Hours, n[0].Buckets)
				}
			}
			now := time.Now()
			res, err := compact.RollupHours(ctx, e.DB, now, 48*time.Hour, 0)
			busy := []time.Time{day.Add(2 * time.Hour), day.Add(5 * time.Hour), day.Add(9 * time.Hour)}
			var quiet []time.Time // 03:00, 06:00, 08:00
			for h := busy[0]; h.Before(busy[2]); h = h.Add(time.Hour) {
				if !slices.Contains(busy, h) && !slices.Contains(uncounted, h) {
					quiet = append(quiet, h)
				}
			}
			if err != nil || !slices.Equal(res.Folded, busy) || !slices.Equal(res.Quiet, quiet) {
				t.Fatalf("first run: %v %v, want %v folded and %v quiet", res, err, busy, quiet)
			}
			var current []struct {
				Hour int64 `ch:"hour_s"`
			}
			if err := e.DB.Select(ctx, &current, "SELECT toInt64(toUInt32(hour)) AS hour_s FROM calls_5m_current_folds ORDER BY hour"); err != nil {
				t.Fatal(err)
			}
			var got []time.Time
			for _, c := range current {
				got = append(got, time.Unix(c.Hour, 0).UTC())
			}
			want := append(slices.Clone(busy), quiet...)
			slices.SortFunc(want, func(a, b time.Time) int { return a.Compare(b) })
			if !slices.Equal(got, want) {
				t.Fatalf("current folds of %v, want %v", got, want)
			}
			if folded, want := foldedCells(t, e, day, calls, quiet); !slices.Equal(folded, want) {
				t.Errorf("folded\n%s\nwant\n%s", strings.Join(folded, "\n"), strings.Join(want, "\n"))
			}
			if res, err := compact.RollupHours(ctx, e.DB, time.Now(), 48*time.Hour, 0); err != nil || len(res.Folded)+len(res.Quiet)+len(res.Unsettled) != 0 {
				t.Fatalf("second run: %v %v, want nothing folded", res, err)
			}

			late := mixedCalls(day.Add(3*time.Hour), 2, 300, 1) // into the quiet 03:00
			e.Insert(t, late)
			calls = append(calls, late...)
			res, err = compact.RollupHours(ctx, e.DB, time.Now(), 48*time.Hour, 0)
			if err != nil || !slices.Equal(res.Folded, []time.Time{day.Add(3 * time.Hour)}) || len(res.Quiet) != 0 || res.Superseded != 1 {
				t.Fatalf("after a late insert into a quiet hour: %v %v, want it folded with its calls and its empty fold superseded", res, err)
			}
			if folded, want := foldedCells(t, e, day, calls, quiet[1:]); !slices.Equal(folded, want) {
				t.Errorf("after the late insert: folded\n%s\nwant\n%s", strings.Join(folded, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

// statementLog is a compact.DB that notes the @hour_s of every statement
// it runs: the statements of one hour's fold.
type statementLog struct {
	compact.DB
	hours []int64
}

func (l *statementLog) Exec(ctx context.Context, q string, args ...any) error {
	for _, a := range args {
		if n, ok := a.(driver.NamedValue); ok && n.Name == "hour_s" {
			l.hours = append(l.hours, n.Value.(int64))
		}
	}
	return l.DB.Exec(ctx, q, args...)
}

// TestQuietRollupFoldsAreEmptyFolds: RollupHours records the folds of the
// quiet hours between two busy ones without a statement for any one of
// them, and what it writes for a quiet hour is what a fold of the hour
// writes: the same rows in every *_folded table (hour and fold aside) but
// chains_folded and recalls_folded, which RollupChains writes. A fold table added without its
// quiet mark fails it.
func TestQuietRollupFoldsAreEmptyFolds(t *testing.T) {
	ctx := context.Background()
	day := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -1)
	first, last := day.Add(time.Hour), day.Add(22*time.Hour)
	var quiet []time.Time
	for h := first.Add(time.Hour); h.Before(last); h = h.Add(time.Hour) {
		quiet = append(quiet, h)
	}
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			e.Insert(t, slices.Concat(mixedCalls(first, 5, 1, 1), mixedCalls(last, 5, 100, 1)))
			log := &statementLog{DB: e.DB}
			res, err := compact.RollupHours(ctx, log, time.Now(), 48*time.Hour, 0)
			if err != nil || !slices.Equal(res.Folded, []time.Time{first, last}) || !slices.Equal(res.Quiet, quiet) || len(res.Unsettled) != 0 {
				t.Fatalf("first run: %+v %v; want %v folded and the %d hours between quiet", res, err, []time.Time{first, last}, len(quiet))
			}
			for _, h := range log.hours {
				if hour := time.Unix(h, 0).UTC(); slices.Contains(quiet, hour) {
					t.Fatalf("a statement for the quiet hour %s alone", hour.Format(time.RFC3339))
				}
			}
			if res, err := compact.RollupHours(ctx, e.DB, time.Now(), 48*time.Hour, 0); err != nil || len(res.Folded)+len(res.Quiet)+len(res.Unsettled) != 0 {
				t.Fatalf("second run: %+v %v; want nothing", res, err)
			}
			var current []struct {
				Hour int64  `ch:"hour_s"`
				Fold uint64 `ch:"fold"`
			}
			if err := e.DB.Select(ctx, &current, "SELECT toInt64(toUInt32(hour)) AS hour_s, fold FROM calls_5m_current_folds ORDER BY hour"); err != nil {
				t.Fatal(err)
			}
			if len(current) != len(quiet)+2 {
				t.Fatalf("%d current folds; want %d, every hour from %s to %s", len(current), len(quiet)+2, first.Format(time.RFC3339), last.Format(time.RFC3339))
			}

			// A fold of one quiet hour the whole way, made later at the same count.
			hour := quiet[len(quiet)/2]
			recorded := current[1+len(quiet)/2].Fold
			fold, ok, err := compact.FoldHour(ctx, e.DB, hour, 0)
			if err != nil || !ok {
				t.Fatalf("fold of the quiet hour %s: %v %v", hour.Format(time.RFC3339), ok, err)
			}
			var tables []struct {
				Name string `ch:"name"`
			}
			if err := e.DB.Select(ctx, &tables, "SELECT name FROM system.tables WHERE database = currentDatabase() AND match(name, '_folded$') AND name NOT IN ('chains_folded', 'recalls_folded') AND engine NOT LIKE '%View' ORDER BY name"); err != nil {
				t.Fatal(err)
			}
			if len(tables) < 10 {
				t.Fatalf("fold tables %v; want the ten RollupHours writes", tables)
			}
			for _, table := range tables {
				a, b := foldRows(t, e, table.Name, hour, recorded), foldRows(t, e, table.Name, hour, fold)
				if !slices.Equal(a, b) {
					t.Errorf("%s: the quiet hour's recorded fold\n%s\nits fold\n%s", table.Name, strings.Join(a, "\n"), strings.Join(b, "\n"))
				}
			}
		})
	}
}

// insertDuring is a compact.DB that runs insert before the first
// statement that takes both @hour_list and @fold: the first quiet mark
// RollupHours writes.
type insertDuring struct {
	compact.DB
	insert func()
}

func (d *insertDuring) Exec(ctx context.Context, q string, args ...any) error {
	names := map[string]bool{}
	for _, a := range args {
		if n, ok := a.(driver.NamedValue); ok {
			names[n.Name] = true
		}
	}
	if d.insert != nil && names["hour_list"] && names["fold"] {
		d.insert()
		d.insert = nil
	}
	return d.DB.Exec(ctx, q, args...)
}

// TestQuietRollupFoldsMissNoLateCall: a call inserted into a quiet hour
// after RollupHours found it empty, while it writes the quiet hours' marks,
// leaves that hour unsettled, its empty fold unrecorded; the next run folds
// it with the call.
func TestQuietRollupFoldsMissNoLateCall(t *testing.T) {
	ctx := context.Background()
	day := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -1)
	first, late, last := day.Add(time.Hour), day.Add(3*time.Hour), day.Add(5*time.Hour)
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			calls := slices.Concat(mixedCalls(first, 5, 1, 1), mixedCalls(last, 5, 100, 1))
			e.Insert(t, calls)
			lateCalls := mixedCalls(late, 2, 200, 1)
			db := &insertDuring{DB: e.DB, insert: func() { e.Insert(t, lateCalls) }}
			res, err := compact.RollupHours(ctx, db, time.Now(), 48*time.Hour, 0)
			quiet := []time.Time{day.Add(2 * time.Hour), day.Add(4 * time.Hour)}
			if err != nil || !slices.Equal(res.Folded, []time.Time{first, last}) || !slices.Equal(res.Quiet, quiet) || !slices.Equal(res.Unsettled, []time.Time{late}) {
				t.Fatalf("first run: %+v %v; want %v folded, %v quiet, %v unsettled", res, err, []time.Time{first, last}, quiet, late)
			}
			res, err = compact.RollupHours(ctx, e.DB, time.Now(), 48*time.Hour, 0)
			if err != nil || !slices.Equal(res.Folded, []time.Time{late}) || len(res.Quiet)+len(res.Unsettled) != 0 {
				t.Fatalf("second run: %+v %v; want %v folded with its calls", res, err, late)
			}
			calls = append(calls, lateCalls...)
			if folded, want := foldedCells(t, e, day, calls, quiet); !slices.Equal(folded, want) {
				t.Errorf("folded\n%s\nwant\n%s", strings.Join(folded, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

// TestQuietRollupFoldsCutShortAreNeverRead: RollupHours cut short (the
// server gone) while it writes the quiet hours' marks, or before it records
// their folds, names the step and leaves no current fold of them; the next
// run, which finds them counted at 0 by the run before, records them as
// quiet hours, without a statement for any one of them.
func TestQuietRollupFoldsCutShortAreNeverRead(t *testing.T) {
	ctx := context.Background()
	day := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -1)
	first, last := day.Add(time.Hour), day.Add(5*time.Hour)
	quiet := []time.Time{day.Add(2 * time.Hour), day.Add(3 * time.Hour), day.Add(4 * time.Hour)}
	// Before the marks: the quiet hours' counts (1) and the two busy
	// hours' folds (ten statements and a record each).
	const before = 1 + 2*11
	for _, cut := range []struct {
		execs int    // statements that succeed
		step  string // the error names the step cut
	}{
		{before, "mark 3 quiet hours as empty (list copied calls of hour): "},
		{before + 3, "mark 3 quiet hours as empty (fold schema violation outcomes of hour): "},
		{before + 6, "mark 3 quiet hours as empty (fold calls per category and flag of hour): "},
		{before + 7, "mark 3 quiet hours as empty (fold session keys of hour): "},
		{before + 8, "record the empty folds of 3 quiet hours: "},
	} {
		for _, e := range chtest.Engines(t) {
			t.Run(fmt.Sprintf("%s/after%d", e.Name, cut.execs), func(t *testing.T) {
				calls := slices.Concat(mixedCalls(first, 5, 1, 1), mixedCalls(last, 5, 100, 1))
				e.Insert(t, calls)
				_, err := compact.RollupHours(ctx, &failingExec{DB: e.DB, n: cut.execs}, time.Now(), 48*time.Hour, 0)
				if err == nil || !strings.Contains(err.Error(), cut.step+"server gone") {
					t.Fatalf("error %v, want the step named", err)
				}
				var current []struct {
					Hour int64 `ch:"hour_s"`
				}
				if err := e.DB.Select(ctx, &current, "SELECT toInt64(toUInt32(hour)) AS hour_s FROM calls_5m_current_folds ORDER BY hour"); err != nil {
					t.Fatal(err)
				}
				if len(current) != 2 || current[0].Hour != first.Unix() || current[1].Hour != last.Unix() {
					t.Fatalf("current folds after the cut %v; want the two busy hours' only", current)
				}
				log := &statementLog{DB: e.DB}
				res, err := compact.RollupHours(ctx, log, time.Now(), 48*time.Hour, 0)
				if err != nil || len(res.Folded)+len(res.Unsettled) != 0 || !slices.Equal(res.Quiet, quiet) {
					t.Fatalf("next run: %+v %v; want %v recorded as quiet", res, err, quiet)
				}
				if len(log.hours) != 0 {
					t.Errorf("next run: statements for the hours %v alone; want none", log.hours)
				}
				if folded, want := foldedCells(t, e, day, calls, quiet); !slices.Equal(folded, want) {
					t.Errorf("folded\n%s\nwant\n%s", strings.Join(folded, "\n"), strings.Join(want, "\n"))
				}
				if res, err := compact.RollupHours(ctx, e.DB, time.Now(), 48*time.Hour, 0); err != nil || len(res.Folded)+len(res.Quiet)+len(res.Unsettled) != 0 {
					t.Fatalf("third run: %+v %v; want nothing", res, err)
				}
			})
		}
	}
}

// foldRows returns the rows of fold of hour in table, each column as a
// string, its DateTime columns as seconds from the hour, and without its
// hour and fold.
func foldRows(t *testing.T, e *chtest.Engine, table string, hour time.Time, fold uint64) []string {
	t.Helper()
	ctx := context.Background()
	var cols []struct {
		Name string `ch:"name"`
		Type string `ch:"type"`
	}
	if err := e.DB.Select(ctx, &cols, "SELECT name, type FROM system.columns WHERE database = currentDatabase() AND table = @table", clickhouse.Named("table", table)); err != nil {
		t.Fatal(err)
	}
	var exprs []string
	for _, c := range cols {
		switch {
		case c.Name == "hour" || c.Name == "fold":
		case strings.HasPrefix(c.Type, "DateTime"):
			exprs = append(exprs, fmt.Sprintf("concat('%[1]s=', toString(toInt64(toUInt32(%[1]s)) - @hour_s))", c.Name))
		default:
			exprs = append(exprs, fmt.Sprintf("concat('%[1]s=', toString(%[1]s))", c.Name))
		}
	}
	var rows []struct {
		Row string `ch:"row"`
	}
	q := "SELECT arrayStringConcat([" + strings.Join(exprs, ", ") + "], ' ') AS row FROM " + table + " WHERE hour = toDateTime(@hour_s, 'UTC') AND fold = @fold ORDER BY row"
	if err := e.DB.Select(ctx, &rows, q, clickhouse.Named("hour_s", hour.Unix()), clickhouse.Named("fold", fold)); err != nil {
		t.Fatalf("%s: %v", table, err)
	}
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.Row
	}
	return out
}
