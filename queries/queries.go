// Package queries holds the analytic SQL of mcplens, one embedded .sql file
// per question, and the typed Go functions that run them (one per API
// answer, which may ask more than one file). Values are always bound
// (clickhouse-go's client-side @name binding, which ClickHouse 18.16 and
// modern servers both accept); every file runs unchanged on both.
package queries

import (
	"context"
	"embed"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
)

//go:embed *.sql
var files embed.FS

// mustSQL reads an embedded file at init, so a missing file fails every test.
func mustSQL(name string) string {
	b, err := files.ReadFile(name)
	if err != nil {
		panic(fmt.Sprintf("queries: %v", err))
	}
	return string(b)
}

// DB runs a query and scans rows into a slice of structs by `ch` tags:
// clickhouse-go's driver.Conn, or the in-process engine in tests. It must be
// safe for concurrent use: Misclassifications runs two queries at once.
type DB interface {
	Select(ctx context.Context, dest any, query string, args ...any) error
}

// ReadsNoTenantData reports whether query is the text of one of this
// package's queries that read no tenant's rows: the lists of folded hours,
// chain_fold_hours.sql (the current chain folds' hours),
// flags_fold_hours.sql (the hours of calls_flags_folded's marks) and
// overview_fold_hours.sql (those of sessions_folded's). A caller
// restricted to some tenants may run them unscoped (api/auth.go refuses any
// other query without @tenants).
func ReadsNoTenantData(query string) bool {
	return query == chainFoldHoursSQL || query == flagsFoldHoursSQL || query == overviewFoldHoursSQL
}

// foldedUntil returns the start of the first hour from first (an hour's
// start) that query (chain_fold_hours.sql, flags_fold_hours.sql,
// overview_fold_hours.sql: the folded hours in [from_hour_s, to_hour_s),
// ascending) does not list, or end when it lists every hour before end.
func foldedUntil(ctx context.Context, db DB, query string, first, end int64) (int64, error) {
	var rows []struct {
		Hour int64 `ch:"hour_s"`
	}
	if err := db.Select(ctx, &rows, query, clickhouse.Named("from_hour_s", first), clickhouse.Named("to_hour_s", end)); err != nil {
		return 0, err
	}
	h := first
	for _, r := range rows {
		if r.Hour != h {
			break
		}
		h += 3600
	}
	return min(h, end), nil
}

// boundArgs binds the parameters of misflagged.sql and overview.sql: the
// Filter's, first_s, the start of the range's first whole hour, and
// flags_bound_s, the start of the first whole hour that hoursSQL
// (flags_fold_hours.sql, overview_fold_hours.sql: the hours whose current
// fold the query reads) does not list, or of the hour the range ends in.
// The queries read the raw calls before first_s and from the bound on, and
// set the folded hours after it aside on their time, so the bound only
// lets the server skip the days' partitions in between: a range within two
// UTC days has none to skip, and one whose first whole hour is not over
// yet no fold to start from; both are read from first_s without asking
// (the query costs 10-25 ms, BENCHMARKS.md, thirty-sixth round). skipsDay
// reports whether the bound leaves a whole UTC day out (skipsADay): the
// overview reads the folds only then.
func boundArgs(ctx context.Context, db DB, f Filter, hoursSQL string) (args []any, skipsDay bool, err error) {
	first := -floorDiv(-f.From.UnixMilli(), 3_600_000) * 3600
	toHour := floorDiv(f.To.UnixMilli(), 3_600_000) * 3600
	days := floorDiv(f.To.UnixMilli()-1, 86_400_000) - floorDiv(f.From.UnixMilli(), 86_400_000)
	bound := first
	if toHour > first && days >= 2 && first+3600 <= time.Now().Unix() {
		if bound, err = foldedUntil(ctx, db, hoursSQL, first, toHour); err != nil {
			return nil, false, fmt.Errorf("fold bound: %w", err)
		}
	}
	return append(f.args(), clickhouse.Named("first_s", first), clickhouse.Named("flags_bound_s", bound)), skipsADay(first, bound), nil
}

// skipsADay reports whether the raw calls before first and from bound on
// (boundArgs) leave out a whole UTC day, which the server then does not
// read: only then does reading the folded hours from their fold pay for
// the sets that put them aside. Within a day's partition the calls of the
// folded hours lie in the same granules as the others (the sort key does
// not start with time): over 24 hours of 10M calls the folded form took
// 1.09-1.10x the raw one on 26.7 (BENCHMARKS.md, fifty-fifth round).
func skipsADay(first, bound int64) bool {
	return -floorDiv(-first, 86400)*86400+86400 <= bound
}

// Filter selects the calls a query reads: request time in [From, To), and
// optional exact matches on tenant, server and tool ("" matches all).
// Tenants, when not empty, is an allow-list on top of Tenant: the tenants
// of the API token that asks (every query binds it as @tenants and has
// "(@all_tenants = 1 OR has(@tenants, tenant))").
type Filter struct {
	From, To time.Time
	Tenant   string
	Server   string
	Tool     string
	Tenants  []string
	// ByPair asks the chain analytics (RetryOutcomes, Recalls,
	// Misclassifications) for rows per tenant and server as well: each row
	// then names its pair, and holds what the same call with Tenant and
	// Server set to that pair returns. Without it Tenant and Server are ""
	// in every row. The other queries ignore it.
	ByPair bool
	// ByClient asks Recalls and RetryOutcomes for rows per client as well
	// (the client of the failure's or chain's session; ByPair is then
	// ignored): what each client does after a failure. The other queries
	// ignore it.
	ByClient bool
}

func (f Filter) args() []any {
	// 18.16 cannot type has() over an empty array literal, so "all
	// tenants" is a flag with a one-element list beside it.
	all, tenants := 0, f.Tenants
	if len(tenants) == 0 {
		all, tenants = 1, []string{""}
	}
	byPair, byClient := 0, 0
	if f.ByPair {
		byPair = 1
	}
	if f.ByClient {
		byClient = 1
	}
	return []any{
		clickhouse.Named("from_s", f.From.Unix()),
		clickhouse.Named("to_s", f.To.Unix()),
		clickhouse.Named("from_ms", f.From.UnixMilli()),
		clickhouse.Named("to_ms", f.To.UnixMilli()),
		clickhouse.Named("tenant", f.Tenant),
		clickhouse.Named("server", f.Server),
		clickhouse.Named("tool", f.Tool),
		clickhouse.Named("all_tenants", all),
		clickhouse.Named("tenants", tenants),
		clickhouse.Named("by_pair", byPair),
		clickhouse.Named("by_client", byClient),
	}
}

// splitRowKey reads the tool column of a row of RetryOutcomes or Recalls
// as f asked for it: the client's key with f.ByClient (which wins), the
// pair's with f.ByPair, the tool itself otherwise.
func splitRowKey(f Filter, key string) (tenant, server, client, tool string, err error) {
	switch {
	case f.ByClient:
		client, tool, err = splitClientKey(key)
	case f.ByPair:
		tenant, server, tool, err = splitPairKey(key)
	default:
		tool = key
	}
	return tenant, server, client, tool, err
}

// splitPairKey reads the key the chain analytics put in a row's tool with
// Filter.ByPair: "<bytes of tenant>:<tenant><bytes of server>:<server><tool>"
// (retry_outcomes.sql). The lengths make it exact whatever bytes the names
// hold.
func splitPairKey(key string) (tenant, server, tool string, err error) {
	f, tool, ok := splitKey(key, 2)
	if !ok {
		return "", "", "", fmt.Errorf("pair key %q: want <bytes>:<tenant><bytes>:<server><tool>", key)
	}
	return f[0], f[1], tool, nil
}

// splitClientKey reads the key recalls.sql puts in a row's tool with
// Filter.ByClient: "<bytes of client>:<client><tool>".
func splitClientKey(key string) (client, tool string, err error) {
	f, tool, ok := splitKey(key, 1)
	if !ok {
		return "", "", fmt.Errorf("client key %q: want <bytes>:<client><tool>", key)
	}
	return f[0], tool, nil
}

// splitKey reads n length-prefixed fields ("<bytes>:<field>") off the front
// of key and returns them and the rest.
func splitKey(key string, n int) (fields []string, rest string, ok bool) {
	for range n {
		size, after, found := strings.Cut(key, ":")
		bytes, err := strconv.Atoi(size)
		if !found || err != nil || bytes < 0 || bytes > len(after) {
			return nil, "", false
		}
		fields, key = append(fields, after[:bytes]), after[bytes:]
	}
	return fields, key, true
}

// stepSeconds returns step in whole seconds, or one bucket spanning the range.
func stepSeconds(f Filter, step time.Duration) int64 {
	if step >= time.Second {
		return int64(step / time.Second)
	}
	return max(1, int64(math.Ceil(f.To.Sub(f.From).Seconds()))+1)
}

func ratio(num, den float64) float64 {
	if den == 0 || math.IsNaN(num/den) {
		return 0
	}
	return num / den
}
