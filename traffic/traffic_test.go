package traffic

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
)

// capture is the test's own decoding of a capture line.
type capture struct {
	Time            string    `json:"time"`
	DurationMs      *int64    `json:"duration_ms"`
	Tenant          string    `json:"tenant"`
	Server          string    `json:"server"`
	SessionID       string    `json:"session_id"`
	TraceID         string    `json:"trace_id"`
	Client          string    `json:"client"`
	ProtocolVersion string    `json:"protocol_version"`
	Request         request   `json:"request"`
	Response        *response `json:"response"`
	Error           string    `json:"error"`
}

type request struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  struct {
		Meta           map[string]any  `json:"_meta"`
		Name           string          `json:"name"`
		Arguments      json.RawMessage `json:"arguments"`
		RequestState   string          `json:"requestState"`
		InputResponses map[string]any  `json:"inputResponses"`
	} `json:"params"`
}

type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  *struct {
		ResultType string `json:"resultType"`
		Content    []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		StructuredContent json.RawMessage `json:"structuredContent"`
		IsError           *bool           `json:"isError"`
		RequestState      string          `json:"requestState"`
		InputRequests     map[string]any  `json:"inputRequests"`
	} `json:"result"`
	Error *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

// line is one generated line with its label and decoding.
type labeled struct {
	story Story
	raw   []byte
	c     capture
	t     time.Time
}

// key identifies the session a line belongs to: the MCP session, or the
// trace of a sessionless client.
func (l *labeled) key() string {
	if l.c.SessionID != "" {
		return "s:" + l.c.SessionID
	}
	return "t:" + l.c.TraceID
}

func (l *labeled) arg(name string) any {
	var m map[string]any
	_ = json.Unmarshal(l.c.Request.Params.Arguments, &m)
	return m[name]
}

func (l *labeled) text() string {
	if l.c.Response == nil || l.c.Response.Result == nil || len(l.c.Response.Result.Content) == 0 {
		return ""
	}
	return l.c.Response.Result.Content[0].Text
}

// isError is "true", "false" or "absent"; "" when there is no result.
func (l *labeled) isError() string {
	if l.c.Response == nil || l.c.Response.Result == nil {
		return ""
	}
	switch r := l.c.Response.Result; {
	case r.IsError == nil:
		return "absent"
	case *r.IsError:
		return "true"
	}
	return "false"
}

func (l *labeled) rpcError() (int, string) {
	if l.c.Response == nil || l.c.Response.Error == nil {
		return 0, ""
	}
	return l.c.Response.Error.Code, l.c.Response.Error.Message
}

func (l *labeled) structured() map[string]any {
	if l.c.Response == nil || l.c.Response.Result == nil {
		return nil
	}
	var m map[string]any
	_ = json.Unmarshal(l.c.Response.Result.StructuredContent, &m)
	return m
}

// signature identifies the call a line makes: its session, server, tool
// and arguments. A line with another's signature sends the same call again.
func (l *labeled) signature() string {
	return l.key() + " " + l.c.Server + " " + l.c.Request.Params.Name + " " + string(l.c.Request.Params.Arguments)
}

// failed reports whether the line is a failure on the wire: no answer, a
// JSON-RPC error or isError true.
func (l *labeled) failed() bool {
	code, _ := l.rpcError()
	return l.c.Response == nil || code != 0 || l.isError() == "true"
}

func generate(t testing.TB, cfg Config) ([]labeled, Stats) {
	t.Helper()
	var lines []labeled
	stats, err := GenerateLabeled(cfg, func(b []byte, s Story) error {
		l := labeled{story: s, raw: b}
		if err := json.Unmarshal(b, &l.c); err != nil {
			return err
		}
		lines = append(lines, l)
		return nil
	})
	if err != nil {
		t.Fatalf("GenerateLabeled: %v", err)
	}
	return lines, stats
}

func generateBytes(t *testing.T, cfg Config) []byte {
	t.Helper()
	var buf bytes.Buffer
	err := Generate(cfg, func(b []byte) error {
		buf.Write(b)
		buf.WriteByte('\n')
		return nil
	})
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	return buf.Bytes()
}

func TestGenerateIsDeterministic(t *testing.T) {
	cfg := Config{Seed: 42, Sessions: 200}
	a, b := generateBytes(t, cfg), generateBytes(t, cfg)
	if !bytes.Equal(a, b) {
		t.Fatal("two runs with the same Config differ")
	}
	cfg.Seed = 43
	if c := generateBytes(t, cfg); bytes.Equal(a, c) {
		t.Fatal("seeds 42 and 43 produced the same output")
	}
}

var (
	timeFormat  = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$`)
	docNotFound = regexp.MustCompile(`^document D-\d+ not found$`)
)

func TestEveryLineIsAWellFormedCapture(t *testing.T) {
	start := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	cfg := Config{Seed: 1, Start: start, Duration: 3 * time.Hour, Sessions: 200}
	lines, _ := generate(t, cfg)
	if len(lines) < 1000 {
		t.Fatalf("got %d lines for 200 sessions, want at least 1000", len(lines))
	}
	var prev time.Time
	for i := range lines {
		l := &lines[i]
		c := &l.c
		if !timeFormat.MatchString(c.Time) {
			t.Fatalf("line %d: time %q is not RFC 3339 UTC with milliseconds", i, c.Time)
		}
		tm, err := time.Parse(time.RFC3339Nano, c.Time)
		if err != nil {
			t.Fatalf("line %d: %v", i, err)
		}
		l.t = tm
		if c.DurationMs == nil || *c.DurationMs < 0 {
			t.Fatalf("line %d: duration_ms missing or negative: %s", i, l.raw)
		}
		if tm.Before(prev) {
			t.Fatalf("line %d: time %s before the previous line's %s", i, tm, prev)
		}
		prev = tm
		if tm.Before(start) || !tm.Add(time.Duration(*c.DurationMs)*time.Millisecond).Before(start.Add(cfg.Duration)) {
			t.Fatalf("line %d: call %s + %dms outside [Start, Start+Duration)", i, tm, *c.DurationMs)
		}
		if c.Tenant == "" || c.Server == "" || c.Client == "" || c.ProtocolVersion == "" {
			t.Fatalf("line %d: tenant, server, client or protocol_version missing: %s", i, l.raw)
		}
		if c.Request.JSONRPC != "2.0" || c.Request.Method != "tools/call" || c.Request.Params.Name == "" || len(c.Request.ID) == 0 {
			t.Fatalf("line %d: not a tools/call request with id and name: %s", i, l.raw)
		}
		switch {
		case c.Response == nil:
			if c.Error != "timeout" {
				t.Fatalf("line %d: no response and error %q, want \"timeout\"", i, c.Error)
			}
		case c.Error != "":
			t.Fatalf("line %d: both a response and error %q", i, c.Error)
		case (c.Response.Result == nil) == (c.Response.Error == nil):
			t.Fatalf("line %d: response needs exactly one of result and error: %s", i, l.raw)
		case !bytes.Equal(c.Response.ID, c.Request.ID):
			t.Fatalf("line %d: response id %s, request id %s", i, c.Response.ID, c.Request.ID)
		}
		if r := c.Response; r != nil && r.Result != nil && r.Result.ResultType != "input_required" && r.Result.Content == nil {
			t.Fatalf("line %d: result without content: %s", i, l.raw)
		}
		if c.ProtocolVersion == "2026-07-28" {
			if c.SessionID != "" || c.TraceID == "" {
				t.Fatalf("line %d: 2026-07-28 line needs a trace_id and no session_id: %s", i, l.raw)
			}
			if c.Request.Params.Meta["io.modelcontextprotocol/protocolVersion"] != "2026-07-28" ||
				c.Request.Params.Meta["io.modelcontextprotocol/clientInfo"] == nil {
				t.Fatalf("line %d: 2026-07-28 request without _meta: %s", i, l.raw)
			}
			if r := c.Response; r != nil && r.Result != nil && r.Result.ResultType == "" {
				t.Fatalf("line %d: 2026-07-28 result without resultType: %s", i, l.raw)
			}
		} else {
			if c.SessionID == "" {
				t.Fatalf("line %d: %s line without session_id", i, c.ProtocolVersion)
			}
			if r := c.Response; r != nil && r.Result != nil && r.Result.ResultType != "" {
				t.Fatalf("line %d: resultType on a %s result", i, c.ProtocolVersion)
			}
		}
	}

	// Within a session, time and request ids only go forward.
	type last struct {
		t  time.Time
		id string
	}
	seen := map[string]last{}
	for i := range lines {
		l := &lines[i]
		id := string(l.c.Request.ID)
		if p, ok := seen[l.key()]; ok {
			if l.t.Before(p.t) {
				t.Fatalf("line %d: session %s goes back in time", i, l.key())
			}
			if !idAfter(id, p.id) {
				t.Fatalf("line %d: session %s: request id %s after %s", i, l.key(), id, p.id)
			}
		}
		seen[l.key()] = last{l.t, id}
	}
}

// idAfter compares JSON ids: numbers numerically, "tc-NNNN" strings by text.
func idAfter(id, prev string) bool {
	if strings.HasPrefix(id, `"`) {
		return id > prev
	}
	if len(id) != len(prev) {
		return len(id) > len(prev)
	}
	return id > prev
}

func TestStoriesAppearAcrossSessionsAndTenants(t *testing.T) {
	for _, seed := range []int64{1, 2, 3} {
		lines, stats := generate(t, Config{Seed: seed, Sessions: 200})
		tenants := map[Story]map[string]bool{}
		sessions := map[Story]map[string]bool{}
		for i := range lines {
			l := &lines[i]
			if tenants[l.story] == nil {
				tenants[l.story], sessions[l.story] = map[string]bool{}, map[string]bool{}
			}
			tenants[l.story][l.c.Tenant] = true
			sessions[l.story][l.key()] = true
		}
		for _, s := range Stories {
			if got := stats.Stories[s].Episodes; got < 8 {
				t.Errorf("seed %d: %s: got %d episodes, want at least 8", seed, s, got)
			}
			if got := len(tenants[s]); got < 2 {
				t.Errorf("seed %d: %s: got %d tenants, want 2", seed, s, got)
			}
			if got := len(sessions[s]); got < 5 {
				t.Errorf("seed %d: %s: got %d sessions, want at least 5", seed, s, got)
			}
		}
	}
}

// TestStoriesLookLikeTheWire pins each story to what it puts on the wire:
// every row needs at least one line of its story that matches.
func TestStoriesLookLikeTheWire(t *testing.T) {
	lines, _ := generate(t, Config{Seed: 1, Sessions: 300})
	emptyText := func(l *labeled) bool {
		return l.text() == "未找到匹配文档" || l.text() == "No matching documents found"
	}
	failed := (*labeled).failed
	tests := []struct {
		story Story
		rule  string
		match func(l *labeled) bool
	}{
		{StorySuccess, "success with explicit isError false", func(l *labeled) bool { return l.isError() == "false" }},
		{StorySuccess, "success with isError absent", func(l *labeled) bool { return l.isError() == "absent" }},
		{StorySuccess, "structuredContent mirrored in the text block", func(l *labeled) bool {
			r := l.c.Response.Result
			return r != nil && len(r.StructuredContent) > 0 && string(r.StructuredContent) == l.text()
		}},
		{StorySuccess, "Chinese result text", func(l *labeled) bool { return strings.Contains(l.text(), "找到") }},
		{StoryMisspelledEnum, "finace gives an empty result with isError false", func(l *labeled) bool {
			return l.arg("department") == "finace" && emptyText(l) && l.isError() == "false"
		}},
		{StoryMisspelledEnum, "the model corrects the department", func(l *labeled) bool {
			return l.arg("department") == "finance" && !emptyText(l)
		}},
		{StoryMisspelledEnum, "Atlantis has no forecast", func(l *labeled) bool {
			return l.arg("city") == "Atlantis" && l.text() == "No forecast available for Atlantis" && l.isError() != "true"
		}},
		{StoryPoolExhausted, "Chinese pool text", func(l *labeled) bool {
			return l.text() == "数据库连接池耗尽: too many connections" && l.isError() == "true"
		}},
		{StoryPoolExhausted, "English pool text", func(l *labeled) bool {
			return l.text() == "connection pool exhausted (max=50)" && l.isError() == "true"
		}},
		{StoryPoolExhausted, "the last attempt times out", func(l *labeled) bool { return l.c.Error == "timeout" }},
		{StoryRateLimited, "structured RATE_LIMITED", func(l *labeled) bool {
			sc := l.structured()
			return l.isError() == "true" && sc["errorCode"] == "RATE_LIMITED" && sc["retryable"] == true && sc["retryAfterMs"] != nil
		}},
		{StoryRateLimited, "plain 429 text", func(l *labeled) bool { return l.text() == "429 Too Many Requests" }},
		{StoryRateLimited, "Chinese throttling text", func(l *labeled) bool { return l.text() == "请求过于频繁，请稍后再试" }},
		{StoryRateLimited, "success after backoff", func(l *labeled) bool { return !failed(l) }},
		{StoryExpiredToken, "401 declared retryable", func(l *labeled) bool {
			sc := l.structured()
			return l.text() == "401 Unauthorized: token expired" && sc["errorCode"] == "UNAUTHENTICATED" && sc["retryable"] == true
		}},
		{StoryExpiredToken, "Chinese expired token", func(l *labeled) bool { return l.text() == "令牌过期，请重新登录" }},
		{StoryInvalidParams, "-32602 for days out of range", func(l *labeled) bool {
			code, msg := l.rpcError()
			return code == -32602 && msg == "Invalid arguments for tool get_forecast: days must be between 1 and 14"
		}},
		{StoryInvalidParams, "Input validation error as isError", func(l *labeled) bool {
			return strings.HasPrefix(l.text(), "Input validation error: ") && l.isError() == "true"
		}},
		{StoryInvalidParams, "corrected call succeeds", func(l *labeled) bool { return !failed(l) }},
		{StoryUnknownTool, "Unknown tool: X", func(l *labeled) bool {
			code, msg := l.rpcError()
			return code == -32602 && strings.HasPrefix(msg, "Unknown tool: ")
		}},
		{StoryUnknownTool, "go-sdk unknown tool", func(l *labeled) bool {
			code, msg := l.rpcError()
			return code == -32602 && strings.HasPrefix(msg, `unknown tool "`)
		}},
		{StoryUpstreamTimeout, "upstream timed out", func(l *labeled) bool {
			return strings.HasPrefix(l.text(), "upstream timed out after 30s") && l.isError() == "true"
		}},
		{StoryUpstreamTimeout, "Chinese upstream timeout", func(l *labeled) bool { return strings.HasPrefix(l.text(), "上游服务超时") }},
		{StoryUpstreamTimeout, "retried successfully", func(l *labeled) bool { return !failed(l) }},
		{StoryHiddenFailure, "traceback with isError false", func(l *labeled) bool {
			return strings.HasPrefix(l.text(), "Error: Traceback (most recent call last):") && l.isError() == "false"
		}},
		{StoryHiddenFailure, "structured error with isError absent", func(l *labeled) bool {
			return l.structured()["error"] == true && l.isError() == "absent"
		}},
		{StoryInternalError, "mcp-go -32603", func(l *labeled) bool {
			code, msg := l.rpcError()
			return code == -32603 && msg == "internal error: nil pointer dereference"
		}},
		{StoryInputRequired, "input_required result", func(l *labeled) bool {
			r := l.c.Response.Result
			return r != nil && r.ResultType == "input_required" && r.RequestState != ""
		}},
		{StoryInputRequired, "continuation with inputResponses", func(l *labeled) bool {
			p := l.c.Request.Params
			return p.RequestState != "" && p.InputResponses != nil
		}},
		{StoryPermissionDenied, "403 on a repo", func(l *labeled) bool {
			return strings.HasPrefix(l.text(), "403 Forbidden: no access to repo ")
		}},
		{StoryPermissionDenied, "无权限", func(l *labeled) bool { return strings.HasPrefix(l.text(), "无权限访问该文档") }},
		{StoryNotFound, "-32002 resource not found", func(l *labeled) bool { code, _ := l.rpcError(); return code == -32002 }},
		{StoryNotFound, "document not found text", func(l *labeled) bool {
			return docNotFound.MatchString(l.text()) && l.isError() == "true"
		}},
		{StoryRepeatAfterPause, "succeeds", func(l *labeled) bool { return !failed(l) }},
	}
	for _, tt := range tests {
		found := false
		for i := range lines {
			if lines[i].story == tt.story && tt.match(&lines[i]) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("%s: no line matches %q", tt.story, tt.rule)
		}
	}
}

// TestEmptyResultsGroupByArgument checks that the values behind the silent
// empty results are empty every time, so grouping by argument finds them.
func TestEmptyResultsGroupByArgument(t *testing.T) {
	lines, _ := generate(t, Config{Seed: 5, Sessions: 300})
	bad := map[string]bool{}
	for _, m := range misspelledDepartments {
		bad[m.bad] = true
	}
	n := 0
	for i := range lines {
		l := &lines[i]
		if l.c.Response == nil || l.c.Response.Result == nil || l.isError() == "true" {
			continue
		}
		if d, ok := l.arg("department").(string); ok && bad[d] {
			n++
			if l.text() != "未找到匹配文档" && l.text() != "No matching documents found" {
				t.Errorf("department %q returned %q, want an empty result", d, l.text())
			}
		}
		if l.arg("city") == "Atlantis" && l.text() != "No forecast available for Atlantis" {
			t.Errorf("city Atlantis returned %q", l.text())
		}
	}
	if n < 10 {
		t.Errorf("got %d results for misspelled departments, want at least 10", n)
	}
}

// TestInputRequiredIsContinued: every input_required result is followed in
// its trace by the same call with a new id and the echoed requestState.
func TestInputRequiredIsContinued(t *testing.T) {
	lines, _ := generate(t, Config{Seed: 3, Sessions: 300})
	n := 0
	for i := range lines {
		l := &lines[i]
		r := l.c.Response
		if r == nil || r.Result == nil || r.Result.ResultType != "input_required" {
			continue
		}
		n++
		if l.c.ProtocolVersion != "2026-07-28" {
			t.Fatalf("input_required on %s", l.c.ProtocolVersion)
		}
		found := false
		for j := i + 1; j < len(lines) && !found; j++ {
			m := &lines[j]
			if m.key() != l.key() || m.c.Request.Params.RequestState != r.Result.RequestState {
				continue
			}
			found = true
			if bytes.Equal(m.c.Request.ID, l.c.Request.ID) {
				t.Errorf("continuation reuses id %s", m.c.Request.ID)
			}
			if m.c.Request.Params.Name != l.c.Request.Params.Name ||
				!bytes.Equal(m.c.Request.Params.Arguments, l.c.Request.Params.Arguments) {
				t.Errorf("continuation changed the call: %s", m.raw)
			}
			if len(r.Result.InputRequests) > 0 && m.c.Request.Params.InputResponses == nil {
				t.Errorf("continuation answers no input requests: %s", m.raw)
			}
		}
		if !found {
			t.Errorf("input_required without continuation: %s", l.raw)
		}
	}
	if n == 0 {
		t.Fatal("no input_required results")
	}
}

// TestRepeatsWithinAMinuteAreRetries: a call that repeats the server, tool
// and arguments of a call that ended less than a minute earlier in the same
// session is a retry inside one story, sent 1-20 s after the failure. An
// MRTR continuation waits for the user and may take up to 30 s.
func TestRepeatsWithinAMinuteAreRetries(t *testing.T) {
	for _, seed := range []int64{1, 2} {
		lines, _ := generate(t, Config{Seed: seed, Sessions: 300})
		type prev struct {
			story Story
			end   time.Time
		}
		last := map[string]prev{}
		retries := 0
		for i := range lines {
			l := &lines[i]
			start, _ := time.Parse(time.RFC3339Nano, l.c.Time)
			sig := l.signature()
			if p, ok := last[sig]; ok && start.Sub(p.end) < time.Minute {
				gap, limit := start.Sub(p.end), 20*time.Second
				if l.c.Request.Params.RequestState != "" {
					limit = 30 * time.Second
				}
				switch {
				case p.story != l.story || l.story == StorySuccess:
					t.Errorf("seed %d: %s call repeats a %s call %v later: %s", seed, l.story, p.story, gap, l.raw)
				case gap < time.Second || gap > limit:
					t.Errorf("seed %d: %s retry %v after the previous attempt, want 1s-%v: %s", seed, l.story, gap, limit, l.raw)
				}
				retries++
			}
			last[sig] = prev{l.story, start.Add(time.Duration(*l.c.DurationMs) * time.Millisecond)}
		}
		if retries < 100 {
			t.Errorf("seed %d: found %d retries, want at least 100", seed, retries)
		}
	}
}

// TestClientsHaveTheirHabits: each client's retry habits (session.go)
// show on the wire, and only that client's. Per client, over the failures
// of a session: the invalid_params failures followed within a minute by the
// same call unchanged (cursor's retry layer); the failures of the retryable
// stories followed by no such call (python-sdk gives up); and the rate limits
// with a retryAfterMs whose next call came before it had passed
// (stateless-agent); and the runs of 20 calls or more of one signature,
// each within a minute of the one before (stateless-agent's runaway
// retries).
func TestClientsHaveTheirHabits(t *testing.T) {
	lines, _ := generate(t, Config{Seed: 3, Sessions: 3000})
	type tally struct{ invalid, resent, retryable, givenUp, hinted, early, loops int }
	by := map[string]*tally{}
	retryable := map[Story]bool{StoryRateLimited: true, StoryUpstreamTimeout: true, StoryPoolExhausted: true}
	// next[i] is the index of the next line with line i's signature.
	next := make([]int, len(lines))
	seen := map[string]int{}
	for i := len(lines) - 1; i >= 0; i-- {
		s := lines[i].signature()
		next[i] = -1
		if j, ok := seen[s]; ok {
			next[i] = j
		}
		seen[s] = i
	}
	// gapToNext is the time from line i to the next line of its signature.
	gapToNext := func(i int) time.Duration {
		j := next[i]
		if j < 0 {
			return time.Duration(1<<63 - 1)
		}
		t1, _ := time.Parse(time.RFC3339Nano, lines[i].c.Time)
		t2, _ := time.Parse(time.RFC3339Nano, lines[j].c.Time)
		return t2.Sub(t1)
	}
	continues := map[int]bool{} // lines within a minute of the one before of their signature
	for i := range lines {
		if next[i] >= 0 && gapToNext(i) < time.Minute {
			continues[next[i]] = true
		}
	}
	for i := range lines {
		l := &lines[i]
		if !l.failed() {
			continue
		}
		tl := by[l.c.Client]
		if tl == nil {
			tl = &tally{}
			by[l.c.Client] = tl
		}
		if !continues[i] {
			n := 1
			for j := i; next[j] >= 0 && gapToNext(j) < time.Minute; j = next[j] {
				n++
			}
			if n >= 20 {
				tl.loops++
			}
		}
		gap := gapToNext(i)
		switch {
		case l.story == StoryInvalidParams:
			tl.invalid++
			if gap < time.Minute {
				tl.resent++
			}
		case retryable[l.story]:
			tl.retryable++
			if gap >= time.Minute {
				tl.givenUp++
			}
		}
		if ms, ok := l.structured()["retryAfterMs"].(float64); ok && l.story == StoryRateLimited {
			tl.hinted++
			if gap < time.Duration(ms)*time.Millisecond {
				tl.early++
			}
		}
	}
	share := func(n, of int) float64 { return float64(n) / float64(max(of, 1)) }
	// The habits each client is meant to show (doc.go), written out rather
	// than read from clients, so that losing one fails.
	want := map[string]habits{
		"claude-desktop":  {},
		"cursor":          {retryAll: 1},
		"python-sdk":      {giveUp: 1},
		"typescript-sdk":  {},
		"stateless-agent": {early: true, loop: 1},
	}
	if len(want) != len(clients) {
		t.Fatalf("%d clients, the test knows %d", len(clients), len(want))
	}
	for _, c := range clients {
		tl := by[c.name]
		h, ok := want[c.name]
		if !ok {
			t.Fatalf("client %s: the test does not know its habits", c.name)
		}
		if tl == nil || tl.invalid < 20 || tl.retryable < 50 || tl.hinted < 20 {
			t.Fatalf("%s: %+v: too few failures to tell its habits", c.name, tl)
		}
		resent, givenUp, early := share(tl.resent, tl.invalid), share(tl.givenUp, tl.retryable), share(tl.early, tl.hinted)
		t.Logf("%-15s invalid %d resent %.2f, retryable %d given up %.2f, hinted %d early %.2f, loops %d", c.name, tl.invalid, resent, tl.retryable, givenUp, tl.hinted, early, tl.loops)
		if w := h.retryAll > 0; (resent > 0.3) != w || (!w && resent != 0) {
			t.Errorf("%s re-sends %.2f of its invalid arguments unchanged, want the habit %v", c.name, resent, w)
		}
		if w := h.giveUp > 0; (givenUp > 0.5) != w || (!w && givenUp > 0.35) {
			t.Errorf("%s gives up on %.2f of its retryable failures, want the habit %v", c.name, givenUp, w)
		}
		if w := h.early; (early > 0.4) != w || (!w && early != 0) {
			t.Errorf("%s retries %.2f of its hinted rate limits early, want the habit %v", c.name, early, w)
		}
		if w := h.loop > 0; (tl.loops >= 5) != w || (!w && tl.loops != 0) {
			t.Errorf("%s ran %d retry loops of 20 calls or more, want the habit %v", c.name, tl.loops, w)
		}
	}
}

func TestStatsMatchOutput(t *testing.T) {
	lines, stats := generate(t, Config{Seed: 9, Sessions: 200})
	var bytesSum int64
	perStory := map[Story]int{}
	for _, l := range lines {
		bytesSum += int64(len(l.raw))
		perStory[l.story]++
	}
	if stats.Lines != len(lines) || stats.Bytes != bytesSum {
		t.Fatalf("stats say %d lines / %d bytes, emitted %d / %d", stats.Lines, stats.Bytes, len(lines), bytesSum)
	}
	for _, s := range Stories {
		if stats.Stories[s].Lines != perStory[s] {
			t.Errorf("%s: stats say %d lines, emitted %d", s, stats.Stories[s].Lines, perStory[s])
		}
	}
	if avg := stats.Bytes / int64(stats.Lines); avg < 500 || avg > 2048 {
		t.Errorf("average line is %d bytes, want 500-2048", avg)
	}
	counted, err := GenerateLabeled(Config{Seed: 9, Sessions: 200}, nil)
	if err != nil || !reflect.DeepEqual(counted, stats) {
		t.Errorf("counting only: got %v, %v; want the same stats", counted, err)
	}
	if !strings.Contains(stats.String(), "input_required") {
		t.Errorf("Stats.String misses a story:\n%s", stats)
	}
}

func TestSessionlessLineExists(t *testing.T) {
	lines, _ := generate(t, Config{Seed: 11, Sessions: 50})
	for _, l := range lines {
		if l.c.ProtocolVersion == "2026-07-28" && l.c.SessionID == "" && !bytes.Contains(l.raw, []byte(`"session_id"`)) {
			return
		}
	}
	t.Fatal("no 2026-07-28 line without session_id")
}

func TestConfig(t *testing.T) {
	t.Run("defaults", func(t *testing.T) {
		lines, stats := generate(t, Config{})
		if stats.Sessions != DefaultSessions {
			t.Errorf("got %d sessions, want %d", stats.Sessions, DefaultSessions)
		}
		if lines[0].c.Time != DefaultStart.Format("2006-01-02T15:04:05.000Z07:00") {
			t.Errorf("first line at %s, want %s", lines[0].c.Time, DefaultStart)
		}
		tenants := map[string]bool{}
		for _, l := range lines {
			tenants[l.c.Tenant] = true
		}
		if !reflect.DeepEqual(tenants, map[string]bool{"acme": true, "globex": true}) {
			t.Errorf("tenants %v, want acme and globex", tenants)
		}
	})
	t.Run("start and tenants", func(t *testing.T) {
		start := time.Date(2027, 1, 1, 8, 0, 0, 0, time.FixedZone("CST", 8*3600))
		lines, _ := generate(t, Config{Seed: 2, Start: start, Duration: time.Hour, Sessions: 100, Tenants: []string{"t1", "t2", "t3"}})
		if want := "2027-01-01T00:00:00.000Z"; lines[0].c.Time != want {
			t.Errorf("first line at %s, want %s", lines[0].c.Time, want)
		}
		tenants := map[string]bool{}
		for _, l := range lines {
			tenants[l.c.Tenant] = true
		}
		if !reflect.DeepEqual(tenants, map[string]bool{"t1": true, "t2": true, "t3": true}) {
			t.Errorf("tenants %v, want t1, t2 and t3", tenants)
		}
	})
	for _, bad := range []Config{{Sessions: -1}, {Duration: -time.Second}, {Tenants: []string{"acme", " "}}} {
		if err := Generate(bad, func([]byte) error { return nil }); err == nil {
			t.Errorf("Generate(%+v) accepted an invalid config", bad)
		}
	}
	stop := errors.New("stop")
	n := 0
	err := Generate(Config{Sessions: 10}, func([]byte) error { n++; return stop })
	if !errors.Is(err, stop) || n != 1 {
		t.Errorf("emit error: got %v after %d lines, want stop after 1", err, n)
	}
}

func BenchmarkGenerate(b *testing.B) {
	cfg := Config{Seed: 1, Sessions: 1000}
	stats, err := GenerateLabeled(cfg, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(stats.Bytes)
	b.ReportAllocs()
	for b.Loop() {
		if err := Generate(cfg, func([]byte) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(stats.Lines)*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
	b.ReportMetric(float64(stats.Bytes)/float64(stats.Lines), "B/line")
}
