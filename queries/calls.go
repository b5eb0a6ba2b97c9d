package queries

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
)

var (
	callsPageSQL     = mustSQL("calls_page.sql")
	callsPageArgsSQL = mustSQL("calls_page_args.sql")
	callsLatestSQL   = mustSQL("calls_page_latest.sql")
	callsRowsSQL     = mustSQL("calls_rows.sql")
)

// MaxCallsLimit is the largest page CallList returns.
const MaxCallsLimit = 1000

// CallsOptions selects the calls of CallList beyond Filter. The conditions
// on the classification and the arguments hold for a call's latest ingest.
type CallsOptions struct {
	Category   string // only this category ("" = all)
	Failed     *bool  // only failed (true) or not failed (false) calls
	Misflagged *bool  // only calls whose isError contradicts their category, or only the others
	Code       *int64 // only this JSON-RPC error code (0: not a JSON-RPC error)
	Session    string // only this session key ("" = all)
	TraceID    string // only this trace id ("" = all)
	ArgKey     string // only calls with this argument key ("" = all)
	ArgValue   *string
	Limit      int64   // calls a page holds, 1 to MaxCallsLimit
	Before     *Cursor // only calls after this one in the page order (the next page)
}

// Cursor is a call's place in CallList's order: newest first, then by call
// id, descending. Call.Cursor is its text form.
type Cursor struct {
	TimeMs int64
	CallID uint64
}

// String returns the cursor as "<unix ms>-<call id>".
func (c Cursor) String() string {
	return strconv.FormatInt(c.TimeMs, 10) + "-" + strconv.FormatUint(c.CallID, 10)
}

// ParseCursor reads a Cursor's text form, decimal digits only.
func ParseCursor(s string) (Cursor, error) {
	digits := func(s string) bool {
		return s != "" && strings.Trim(s, "0123456789") == ""
	}
	ms, id, ok := strings.Cut(s, "-")
	t, err1 := strconv.ParseInt(ms, 10, 64)
	c, err2 := strconv.ParseUint(id, 10, 64)
	if !ok || !digits(ms) || !digits(id) || err1 != nil || err2 != nil {
		return Cursor{}, errors.New("want the cursor of a row, <unix ms>-<call id>")
	}
	return Cursor{TimeMs: t, CallID: c}, nil
}

// Call is one call of CallList as its latest ingest stored it: the
// classification with what it was derived from. Arguments are canonical
// JSON, redacted at ingest (null when none were recorded); CallID is the
// decimal text of the 64-bit id, which a JSON number would round.
type Call struct {
	Time              time.Time       `json:"time"`
	Tenant            string          `json:"tenant"`
	Server            string          `json:"server"`
	Tool              string          `json:"tool"`
	Session           string          `json:"session"`
	SessionID         string          `json:"session_id"`
	TraceID           string          `json:"trace_id"`
	RequestID         string          `json:"request_id"`
	CallID            string          `json:"call_id"`
	Client            string          `json:"client"`
	ProtocolVersion   string          `json:"protocol_version"`
	Source            string          `json:"source"`
	Side              string          `json:"side"`
	DurationMs        int64           `json:"duration_ms"`
	Category          string          `json:"category"`
	Failed            bool            `json:"failed"`
	DeclaredRetryable int8            `json:"declared_retryable"`
	ExpectedRetryable int8            `json:"expected_retryable"`
	ClassSource       string          `json:"class_source"`
	ClassRule         string          `json:"class_rule"`
	Misflagged        bool            `json:"misflagged"`
	HasResponse       bool            `json:"has_response"`
	IsError           int8            `json:"is_error"`
	RPCError          bool            `json:"rpc_error"`
	Code              int64           `json:"code"`
	RPCMessage        string          `json:"rpc_message"`
	ErrorCode         string          `json:"error_code"`
	ResultType        string          `json:"result_type"`
	ContentBlocks     int32           `json:"content_blocks"`
	TextBytes         int64           `json:"text_bytes"`
	HasStructured     bool            `json:"has_structured"`
	Message           string          `json:"message"`
	RetryAfterMs      int64           `json:"retry_after_ms"`
	Continuation      bool            `json:"continuation"`
	Args              json.RawMessage `json:"args"`
	TaxonomyVersion   string          `json:"taxonomy_version"`
	Ingested          time.Time       `json:"ingested"`
	// Cursor is the row's place in the order: before=Cursor asks for the
	// calls after it.
	Cursor string `json:"cursor"`
}

// pageRow is a row of calls_page.sql or calls_page_args.sql.
type pageRow struct {
	TimeMs   int64  `ch:"ts_ms"`
	CallID   uint64 `ch:"call_id"`
	Ingested int64  `ch:"ingested_ms"`
}

// callRow is a row of calls_rows.sql.
type callRow struct {
	TimeMs            int64  `ch:"ts_ms"`
	CallID            uint64 `ch:"call_id"`
	Ingested          int64  `ch:"ingested_ms"`
	DurationMs        int64  `ch:"duration_ms"`
	Tenant            string `ch:"tenant_name"`
	Server            string `ch:"server_name"`
	Tool              string `ch:"tool_name"`
	SessionKey        string `ch:"session_key"`
	SessionID         string `ch:"session_id"`
	TraceID           string `ch:"trace_id"`
	RequestID         string `ch:"request_id"`
	Client            string `ch:"client_name"`
	Protocol          string `ch:"protocol"`
	Source            string `ch:"source_name"`
	Side              string `ch:"side_name"`
	ArgsJSON          string `ch:"args_json"`
	HasResponse       uint8  `ch:"has_response"`
	IsError           int8   `ch:"is_error"`
	RPCError          uint8  `ch:"rpc_error"`
	RPCCode           int64  `ch:"rpc_code"`
	RPCMessage        string `ch:"rpc_message"`
	Result            string `ch:"result"`
	ContentBlocks     int32  `ch:"content_blocks"`
	TextBytes         int64  `ch:"text_bytes"`
	HasStructured     uint8  `ch:"has_structured"`
	Message           string `ch:"message"`
	Category          string `ch:"category_name"`
	IsFailure         uint8  `ch:"is_failure"`
	DeclaredRetryable int8   `ch:"declared_retryable"`
	ExpectedRetryable int8   `ch:"expected_retryable"`
	ClassSource       string `ch:"source_of_class"`
	ClassRule         string `ch:"rule"`
	ErrorCode         string `ch:"error_code"`
	Misflagged        uint8  `ch:"misflagged"`
	RetryAfterMs      int64  `ch:"retry_after_ms"`
	Continuation      uint8  `ch:"continuation"`
	Taxonomy          string `ch:"taxonomy"`
	Matches           uint8  `ch:"matches"`
}

// callKey is a call's place in the order, which its copies share.
type callKey struct {
	timeMs int64
	callID uint64
}

// CallList returns the calls of f that meet o, newest first (ties by call
// id, descending), at most o.Limit of them: the latest ingest of each, so
// that a call ingested more than once is listed once, where its latest
// ingest classified it. A page shorter than o.Limit is the last; the next
// page is asked with Before set to the last row's cursor.
//
// It reads in two steps: candidates from the light columns of the range
// (the rows that meet the conditions, in order, each call's first), then
// every copy of the candidates whole, keeping a candidate when its latest
// ingest meets the conditions. Once a candidate is dropped so (a call
// reclassified by a later ingest), the candidates come from the form that
// reads each call's latest ingest only (calls_page_latest.sql): after a
// replay under new rules most rows that meet a condition may be earlier
// ingests, and reading on after each short page would scan the range again
// and again.
func CallList(ctx context.Context, db DB, f Filter, o CallsOptions) ([]Call, error) {
	query := callsPageSQL
	if o.ArgKey != "" {
		query = callsPageArgsSQL
	}
	return callList(ctx, db, f, o, query)
}

// latestWindow is the latest form's first chunk, back from the cursor;
// each chunk that runs out makes the next four times as long.
const latestWindow = time.Hour

// callList is CallList with its first candidates from query.
func callList(ctx context.Context, db DB, f Filter, o CallsOptions, query string) ([]Call, error) {
	limit := min(max(o.Limit, 1), MaxCallsLimit)
	before := Cursor{TimeMs: f.To.UnixMilli(), CallID: math.MaxUint64}
	if b := o.Before; b != nil && (b.TimeMs < before.TimeMs || b.TimeMs == before.TimeMs && b.CallID < before.CallID) {
		before = *b
	}
	conds := callArgs(o)
	var out []Call
	fetch := limit + 8
	window := latestWindow
	for int64(len(out)) < limit {
		// The latest form reads the range a chunk at a time, back from the
		// cursor: a call's copies share its time, so the copies of the
		// calls in a chunk lie in it, and its lookup groups the raw calls
		// of the chunk only, not of the whole range (1.2-1.6 s over an
		// unfolded day of 10M calls on 18.16; BENCHMARKS.md).
		chunked := query == callsLatestSQL
		ff := f
		if chunked {
			if end := time.UnixMilli(before.TimeMs + 1); end.Before(ff.To) {
				ff.To = end
			}
			if start := ff.To.Add(-window); start.After(ff.From) {
				ff.From = start
			}
		}
		var rows []pageRow
		args := append(append(ff.args(), conds...),
			clickhouse.Named("before_ms", before.TimeMs),
			clickhouse.Named("before_id", before.CallID),
			clickhouse.Named("fetch", fetch))
		if err := db.Select(ctx, &rows, query, args...); err != nil {
			return nil, fmt.Errorf("calls: %w", err)
		}
		// The candidates, each call's first row, as many as the page
		// still needs and a few more: the rest are read again if needed.
		var cands []callKey
		want := limit - int64(len(out)) + 8
		for _, r := range rows {
			k := callKey{r.TimeMs, r.CallID}
			if len(cands) > 0 && cands[len(cands)-1] == k {
				continue
			}
			if int64(len(cands)) == want {
				break
			}
			cands = append(cands, k)
		}
		page, err := latestMatching(ctx, db, f, conds, cands)
		if err != nil {
			return nil, err
		}
		out = append(out, page...)
		if len(page) < len(cands) {
			query = callsLatestSQL
		}
		if int64(len(rows)) < fetch && int64(len(cands)) < want {
			if !chunked || !ff.From.After(f.From) {
				break // the range holds no more
			}
			// The chunk holds no more: the one before it, four times as
			// long, or the rest of the range when that would leave less
			// than the chunk (a condition that few calls meet reads the
			// range in at most five statements over 7 days, three over a
			// day, where one statement's fixed cost is 50-90 ms).
			before = Cursor{TimeMs: ff.From.UnixMilli(), CallID: 0}
			window *= 4
			if rest := time.UnixMilli(before.TimeMs + 1).Sub(f.From); window > rest/2 {
				window = rest // the next chunk's end is the cursor's millisecond, included
			}
			continue
		}
		// Ask again after the last candidate: its further copies are older
		// ingests, its latest already read.
		last := cands[len(cands)-1]
		before = Cursor{TimeMs: last.timeMs, CallID: last.callID}
		fetch = min(fetch*2, 10*MaxCallsLimit)
	}
	return out[:min(int64(len(out)), limit)], nil
}

// latestMatching reads every copy of cands (in CallList's order) and
// returns, in that order, the latest ingest of each whose latest ingest
// meets the conditions.
func latestMatching(ctx context.Context, db DB, f Filter, conds []any, cands []callKey) ([]Call, error) {
	if len(cands) == 0 {
		return nil, nil
	}
	ids, times := make([]any, len(cands)), make([]any, len(cands))
	for i, c := range cands {
		ids[i], times[i] = c.callID, c.timeMs
	}
	// The candidates are newest first: their seconds run from the last's to the first's.
	args := append(append(f.args(), conds...),
		clickhouse.Named("min_s", cands[len(cands)-1].timeMs/1000),
		clickhouse.Named("max_s", cands[0].timeMs/1000),
		clickhouse.Named("page_ids", clickhouse.GroupSet{Value: ids}),
		clickhouse.Named("page_times", clickhouse.GroupSet{Value: times}))
	var rows []callRow
	if err := db.Select(ctx, &rows, callsRowsSQL, args...); err != nil {
		return nil, fmt.Errorf("calls: %w", err)
	}
	latest := make(map[callKey]*callRow, len(cands))
	for i := range rows {
		r := &rows[i]
		k := callKey{r.TimeMs, r.CallID}
		// Of two copies of one ingest millisecond, the one that does not
		// meet the conditions, so that the answer does not depend on the
		// order rows come in (FINAL would keep either).
		if l, ok := latest[k]; !ok || r.Ingested > l.Ingested || r.Ingested == l.Ingested && r.Matches < l.Matches {
			latest[k] = r
		}
	}
	out := make([]Call, 0, len(cands))
	for _, c := range cands {
		// A candidate without rows is gone since the first statement:
		// the retention job dropped its day.
		if r, ok := latest[c]; ok && r.Matches == 1 {
			out = append(out, r.call())
		}
	}
	return out, nil
}

// callArgs binds the options' conditions.
func callArgs(o CallsOptions) []any {
	flag := func(b *bool) int {
		switch {
		case b == nil:
			return -1
		case *b:
			return 1
		}
		return 0
	}
	anyCode, code := 1, int64(0)
	if o.Code != nil {
		anyCode, code = 0, *o.Code
	}
	anyValue, value := 1, ""
	if o.ArgValue != nil {
		anyValue, value = 0, *o.ArgValue
	}
	return []any{
		clickhouse.Named("category", o.Category),
		clickhouse.Named("failed", flag(o.Failed)),
		clickhouse.Named("misflagged", flag(o.Misflagged)),
		clickhouse.Named("any_code", anyCode),
		clickhouse.Named("code", code),
		clickhouse.Named("session", o.Session),
		clickhouse.Named("trace_id", o.TraceID),
		clickhouse.Named("arg_key", o.ArgKey),
		clickhouse.Named("any_value", anyValue),
		clickhouse.Named("arg_value", value),
	}
}

func (r *callRow) call() Call {
	var args json.RawMessage
	if r.ArgsJSON != "" && json.Valid([]byte(r.ArgsJSON)) {
		args = json.RawMessage(r.ArgsJSON)
	}
	return Call{
		Time: time.UnixMilli(r.TimeMs).UTC(), Tenant: r.Tenant, Server: r.Server, Tool: r.Tool,
		Session: r.SessionKey, SessionID: r.SessionID, TraceID: r.TraceID, RequestID: r.RequestID,
		CallID: strconv.FormatUint(r.CallID, 10), Client: r.Client, ProtocolVersion: r.Protocol,
		Source: r.Source, Side: r.Side, DurationMs: r.DurationMs,
		Category: r.Category, Failed: r.IsFailure == 1,
		DeclaredRetryable: r.DeclaredRetryable, ExpectedRetryable: r.ExpectedRetryable,
		ClassSource: r.ClassSource, ClassRule: r.ClassRule, Misflagged: r.Misflagged == 1,
		HasResponse: r.HasResponse == 1, IsError: r.IsError, RPCError: r.RPCError == 1,
		Code: r.RPCCode, RPCMessage: r.RPCMessage, ErrorCode: r.ErrorCode, ResultType: r.Result,
		ContentBlocks: r.ContentBlocks, TextBytes: r.TextBytes, HasStructured: r.HasStructured == 1,
		Message: r.Message, RetryAfterMs: r.RetryAfterMs, Continuation: r.Continuation == 1,
		Args: args, TaxonomyVersion: r.Taxonomy, Ingested: time.UnixMilli(r.Ingested).UTC(),
		Cursor: Cursor{TimeMs: r.TimeMs, CallID: r.CallID}.String(),
	}
}
