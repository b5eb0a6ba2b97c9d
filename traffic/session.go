package traffic

import (
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"time"
)

// client is an MCP client as it shows up in captures.
type client struct {
	name      string
	protocol  string
	version   string        // clientInfo version, sent in _meta by 2026-07-28 clients
	firstID   int           // first tools/call id: initialize and tools/list come before
	timeout   time.Duration // the client gives up after this long ("error":"timeout")
	stateless bool          // 2026-07-28: no session_id, _meta on every request, string ids
	habits    habits
	weight    int
}

// habits are how a client's retry layer treats failures, beyond what every
// story's episodes do. They are what /recalls?by=client and the Retries
// dashboard's *Retry habits by client* panel tell apart: the seed article's
// clients that retry what they should correct and give up on what they
// should retry. The zero value adds nothing to the stories.
type habits struct {
	// retryAll is the percent of invalid_params failures that the client's
	// retry layer sends again unchanged, 1-2 s later, before the model
	// corrects the arguments: a layer that retries every failure. It also
	// retries an expired token 2-4 times, where the other clients try again
	// at most once.
	retryAll int
	// giveUp is the percent of retryable failures (rate limits, upstream
	// timeouts, exhausted pools) that nothing retries: no retry layer, and
	// the model moves on.
	giveUp int
	// early: the client retries a rate limit after a fixed 1-1.5 s,
	// before the server's retryAfterMs has passed, and is refused again,
	// until its backoff reaches the hint.
	early bool
	// loop is the percent of those early retries that run away: the retry
	// layer keeps re-sending the call every 1-1.5 s, 20-29 more times, each
	// refused, before its backoff reaches the hint (a retry loop that
	// /retry-loops and the MCPRetryLoop alert find).
	loop int
}

var clients = []client{
	{name: "claude-desktop", protocol: "2025-06-18", firstID: 2, timeout: 60 * time.Second, weight: 30},
	{name: "cursor", protocol: "2025-03-26", firstID: 3, timeout: 60 * time.Second, weight: 20,
		habits: habits{retryAll: 70}},
	{name: "python-sdk", protocol: "2024-11-05", firstID: 2, timeout: 30 * time.Second, weight: 15,
		habits: habits{giveUp: 70}},
	{name: "typescript-sdk", protocol: "2025-11-25", firstID: 2, timeout: 60 * time.Second, weight: 15},
	{name: "stateless-agent", protocol: "2026-07-28", version: "0.9.3", timeout: 60 * time.Second, stateless: true, weight: 20,
		habits: habits{early: true, loop: 30}},
}

// sdk is the server-side SDK whose wire habits a server has.
type sdk int

const (
	sdkPython sdk = iota // explicit isError false; uuid4().hex session ids
	sdkGo                // modelcontextprotocol/go-sdk: isError omitted; base32 session ids
	sdkMCPGo             // mark3labs/mcp-go: isError omitted; handler errors are -32603
	sdkTSv2              // TypeScript SDK v2: isError omitted; "Tool X not found" as -32602
	sdkTSv1              // TypeScript SDK v1 server that sets isError false; unknown tools as isError text
)

// server is one MCP server of the demo fleet.
type server struct {
	idx     int
	name    string
	version string
	sdk     sdk
}

var (
	kb       = &server{0, "kb", "1.8.2", sdkPython}
	crm      = &server{1, "crm", "0.9.4", sdkGo}
	payments = &server{2, "payments", "2.3.0", sdkMCPGo}
	weather  = &server{3, "weather", "1.2.0", sdkTSv2}
	github   = &server{4, "github", "0.6.1", sdkTSv1}
	servers  = []*server{kb, crm, payments, weather, github}
)

// explicitFalse reports whether the server writes "isError":false on success.
func (s *server) explicitFalse() bool { return s.sdk == sdkPython || s.sdk == sdkTSv1 }

// conn is one MCP session between the conversation's client and a server.
type conn struct {
	sessionID string
	nextID    int
}

// call is one tools/call as a story wants it. Exactly one of result and
// rpcErr is set; neither means the client got no answer and timed out.
type call struct {
	srv    *server
	tool   string
	args   obj
	extra  obj // params after arguments: requestState, inputResponses
	dur    time.Duration
	result obj
	rpcErr obj
	repeat bool // a retry or continuation of the same call: may follow it closely
}

// again marks c as a deliberate repeat of the previous identical call.
func (c call) again() call {
	c.repeat = true
	return c
}

// session generates one agent conversation: one client and tenant talking
// to the servers it needs, with one MCP session per server (none for
// stateless clients).
type session struct {
	idx      int
	rng      *rand.Rand
	tenant   string
	client   client
	traceID  string
	conns    []*conn // by server index
	nextID   int     // request ids of a stateless client
	t        time.Time
	seq      int
	lines    []line
	episodes map[Story]int
	buf      []byte

	// lastEnd holds when the last call with the same server, tool and
	// arguments ended. Only calls marked repeat (retries, continuations)
	// follow such a call within a minute, so the retries a reader finds
	// are the ones the stories meant.
	lastEnd map[string]time.Time
}

func newSession(cfg Config, idx int, start time.Time) *session {
	r := sessionRNG(cfg.Seed, idx, 1)
	g := &session{
		idx:      idx,
		rng:      r,
		tenant:   cfg.Tenants[r.IntN(len(cfg.Tenants))],
		t:        start,
		conns:    make([]*conn, len(servers)),
		episodes: make(map[Story]int),
		lastEnd:  make(map[string]time.Time),
	}
	w := 0
	for _, c := range clients {
		w += c.weight
	}
	n := r.IntN(w)
	for _, c := range clients {
		if n < c.weight {
			g.client = c
			break
		}
		n -= c.weight
	}
	if g.client.stateless {
		g.traceID = g.hex(32)
		g.nextID = 1
	}
	return g
}

// A session starts no episode after episodeBudget; no episode is long enough
// to take it past maxSession (the longest seen is under 30 minutes).
const (
	episodeBudget = 20 * time.Minute
	maxSession    = time.Hour
)

// run plays a conversation of two to eight episodes.
func (g *session) run() {
	start := g.t
	n := 2 + g.rng.IntN(4) + g.rng.IntN(4)
	for i := 0; i < n && g.t.Sub(start) < episodeBudget; i++ {
		if i > 0 {
			g.pause()
		}
		g.episode()
	}
}

// episodeWeights picks what happens next; input_required only exists for
// 2026-07-28 clients and is skipped for the others.
var episodeWeights = []struct {
	story Story
	w     int
	play  func(*session)
}{
	{StorySuccess, 64, (*session).success},
	{StoryRepeatAfterPause, 3, (*session).repeatAfterPause},
	{StoryMisspelledEnum, 6, (*session).misspelledEnum},
	{StoryPoolExhausted, 4, (*session).poolExhausted},
	{StoryRateLimited, 5, (*session).rateLimited},
	{StoryExpiredToken, 4, (*session).expiredToken},
	{StoryInvalidParams, 5, (*session).invalidParams},
	{StoryUnknownTool, 4, (*session).unknownTool},
	{StoryUpstreamTimeout, 4, (*session).upstreamTimeout},
	{StoryHiddenFailure, 4, (*session).hiddenFailure},
	{StoryInternalError, 3, (*session).internalError},
	{StoryInputRequired, 20, (*session).inputRequired},
	{StoryPermissionDenied, 3, (*session).permissionDenied},
	{StoryNotFound, 3, (*session).notFound},
}

func (g *session) episode() {
	total := 0
	for _, e := range episodeWeights {
		if e.story == StoryInputRequired && !g.client.stateless {
			continue
		}
		total += e.w
	}
	n := g.rng.IntN(total)
	for _, e := range episodeWeights {
		if e.story == StoryInputRequired && !g.client.stateless {
			continue
		}
		if n < e.w {
			g.episodes[e.story]++
			e.play(g)
			return
		}
		n -= e.w
	}
}

// Clock. g.t is when the next request may be sent.

// between returns a uniform duration in [lo, hi], in whole milliseconds.
func (g *session) between(lo, hi time.Duration) time.Duration {
	ms := lo.Milliseconds() + g.rng.Int64N(hi.Milliseconds()-lo.Milliseconds()+1)
	return time.Duration(ms) * time.Millisecond
}

// think is the model deciding on its next call after reading a result.
func (g *session) think() { g.t = g.t.Add(g.between(1200*time.Millisecond, 9*time.Second)) }

// pause is the gap between two episodes: the user reads and types.
func (g *session) pause() { g.t = g.t.Add(g.between(8*time.Second, 150*time.Second)) }

// retryWait waits gap (within 1-20 s) before a retry of tool on srv; a
// quarter of the time an unrelated call of another tool runs meanwhile.
func (g *session) retryWait(gap time.Duration, srv *server, tool string) {
	end := g.t.Add(gap)
	if g.rng.IntN(4) == 0 {
		g.t = g.t.Add(g.between(300*time.Millisecond, 1200*time.Millisecond))
		g.unrelated(srv, tool)
		if earliest := g.t.Add(300 * time.Millisecond); end.Before(earliest) {
			end = earliest
		}
	}
	g.t = end
}

// givesUp reports whether the client's habits leave a retryable failure
// unretried (habits.giveUp). It draws nothing for a client without the habit,
// so that the other clients' conversations stay as they were.
func (g *session) givesUp() bool {
	return g.client.habits.giveUp > 0 && chance(g.rng, g.client.habits.giveUp)
}

// runsAway reports whether the client's early retries of a rate limit run
// away (habits.loop); no draw without the habit.
func (g *session) runsAway() bool {
	return g.client.habits.loop > 0 && chance(g.rng, g.client.habits.loop)
}

// resends reports whether the client's retry layer sends an invalid_params
// failure again unchanged (habits.retryAll); no draw without the habit.
func (g *session) resends() bool {
	return g.client.habits.retryAll > 0 && chance(g.rng, g.client.habits.retryAll)
}

// retryGap is a client's automatic retry delay: exponential from about 1 s.
func (g *session) retryGap(attempt int) time.Duration {
	base := time.Second << min(attempt, 3)
	return g.between(base, base+base/2)
}

// Encoding.

// do records c at the current time, labelled with story, and advances the
// clock past its response.
func (g *session) do(story Story, c call) {
	if c.dur >= g.client.timeout { // the client stopped waiting first
		c.result, c.rpcErr = nil, nil
	}
	if c.result == nil && c.rpcErr == nil {
		c.dur = g.client.timeout + g.between(0, 40*time.Millisecond)
	}
	c.dur = c.dur.Truncate(time.Millisecond)
	sig := g.signature(c)
	if end, ok := g.lastEnd[sig]; ok && !c.repeat && g.t.Sub(end) <= time.Minute {
		g.t = end.Add(g.between(61*time.Second, 3*time.Minute)) // the user came back to it later
	}
	g.t = g.t.Truncate(time.Millisecond)

	var id any
	var sessionID string
	if g.client.stateless {
		id = fmt.Sprintf("tc-%04d", g.nextID)
		g.nextID++
	} else {
		cn := g.conn(c.srv)
		id = cn.nextID
		cn.nextID++
		if g.rng.IntN(8) == 0 { // a ping or list call went in between
			cn.nextID++
		}
		sessionID = cn.sessionID
	}

	params := obj{}
	if g.client.stateless {
		params = append(params, kv{"_meta", obj{
			{"io.modelcontextprotocol/protocolVersion", g.client.protocol},
			{"io.modelcontextprotocol/clientInfo", obj{{"name", g.client.name}, {"version", g.client.version}}},
			{"io.modelcontextprotocol/clientCapabilities", obj{{"elicitation", obj{}}}},
			{"traceparent", "00-" + g.traceID + "-" + g.hex(16) + "-01"},
		}})
	} else if g.client.protocol == "2025-11-25" {
		params = append(params, kv{"_meta", obj{{"progressToken", g.rng.IntN(1 << 20)}}})
	}
	params = append(params, kv{"name", c.tool}, kv{"arguments", c.args})
	params = append(params, c.extra...)
	req := obj{{"jsonrpc", "2.0"}, {"id", id}, {"method", "tools/call"}, {"params", params}}

	rec := obj{
		{"time", g.t},
		{"duration_ms", c.dur.Milliseconds()},
		{"tenant", g.tenant},
		{"server", c.srv.name},
	}
	if sessionID != "" {
		rec = append(rec, kv{"session_id", sessionID})
	}
	if g.traceID != "" {
		rec = append(rec, kv{"trace_id", g.traceID})
	}
	rec = append(rec, kv{"client", g.client.name}, kv{"protocol_version", g.client.protocol}, kv{"request", req})
	switch {
	case c.result != nil:
		res := c.result
		if g.client.stateless {
			if res.get("resultType") == nil {
				res = append(obj{{"resultType", "complete"}}, res...)
			}
			if c.srv.sdk == sdkTSv2 || c.srv.sdk == sdkTSv1 {
				res = append(res, kv{"_meta", obj{{"io.modelcontextprotocol/serverInfo",
					obj{{"name", c.srv.name}, {"version", c.srv.version}}}}})
			}
		}
		rec = append(rec, kv{"response", obj{{"jsonrpc", "2.0"}, {"id", id}, {"result", res}}})
	case c.rpcErr != nil:
		rec = append(rec, kv{"response", obj{{"jsonrpc", "2.0"}, {"id", id}, {"error", c.rpcErr}}})
	default:
		rec = append(rec, kv{"error", "timeout"})
	}

	g.buf = appendRecord(g.buf[:0], rec)
	data := make([]byte, len(g.buf))
	copy(data, g.buf)
	g.lines = append(g.lines, line{t: g.t, session: g.idx, seq: g.seq, story: story, data: data})
	g.seq++
	g.t = g.t.Add(c.dur)
	g.lastEnd[sig] = g.t
}

// signature identifies a call by server, tool and arguments.
func (g *session) signature(c call) string {
	g.buf = appendJSON(append(g.buf[:0], c.srv.name+"\x00"+c.tool+"\x00"...), c.args)
	return string(g.buf)
}

// recent reports whether the same call ended within the last minute.
func (g *session) recent(c call) bool {
	end, ok := g.lastEnd[g.signature(c)]
	return ok && g.t.Sub(end) <= time.Minute
}

// appendRecord encodes the top-level capture object; only "time" needs the
// capture's own format (RFC 3339 with milliseconds, UTC).
func appendRecord(b []byte, rec obj) []byte {
	b = append(b, '{')
	for i, m := range rec {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, m.k)
		b = append(b, ':')
		if t, ok := m.v.(time.Time); ok {
			b = append(b, '"')
			b = t.UTC().AppendFormat(b, "2006-01-02T15:04:05.000Z07:00")
			b = append(b, '"')
			continue
		}
		b = appendJSON(b, m.v)
	}
	return append(b, '}')
}

// conn returns the session with srv, opening it on first use.
func (g *session) conn(srv *server) *conn {
	if c := g.conns[srv.idx]; c != nil {
		return c
	}
	c := &conn{nextID: g.client.firstID + g.rng.IntN(3)}
	switch srv.sdk {
	case sdkPython:
		c.sessionID = g.hex(32)
	case sdkGo:
		c.sessionID = g.base32(26)
	case sdkMCPGo:
		c.sessionID = "mcp-session-" + g.uuid()
	default:
		c.sessionID = g.uuid()
	}
	g.conns[srv.idx] = c
	return c
}

func (g *session) hex(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = hexDigits[g.rng.IntN(16)]
	}
	return string(b)
}

func (g *session) base32(n int) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[g.rng.IntN(32)]
	}
	return string(b)
}

// uuid returns a version 4 UUID in its 8-4-4-4-12 form.
func (g *session) uuid() string {
	h := g.hex(32)
	return h[:8] + "-" + h[8:12] + "-4" + h[13:16] + "-" + string("89ab"[g.rng.IntN(4)]) + h[17:20] + "-" + h[20:]
}

// Results, in the shape of the server's SDK.

// text is one text content block.
func text(s string) obj { return obj{{"type", "text"}, {"text", s}} }

// ok is a successful result with one text block.
func (g *session) ok(srv *server, s string) obj {
	return g.result(srv, arr{text(s)}, nil, false)
}

// okStructured is a successful result whose structuredContent is mirrored
// as JSON in a text block, as the spec recommends.
func (g *session) okStructured(srv *server, sc any) obj {
	return g.result(srv, arr{text(jsonText(sc))}, sc, false)
}

// toolError is an isError true result; sc, when not nil, is the server's
// structured error.
func (g *session) toolError(srv *server, s string, sc obj) obj {
	if sc == nil {
		return g.result(srv, arr{text(s)}, nil, true)
	}
	return g.result(srv, arr{text(s)}, sc, true)
}

func (g *session) result(srv *server, content arr, sc any, isError bool) obj {
	r := obj{{"content", content}}
	if sc != nil {
		r = append(r, kv{"structuredContent", sc})
	}
	if isError {
		r = append(r, kv{"isError", true})
	} else if srv.explicitFalse() {
		r = append(r, kv{"isError", false})
	}
	return r
}

// rpcError is a JSON-RPC error object; data is omitted when nil.
func rpcError(code int, msg string, data any) obj {
	e := obj{{"code", code}, {"message", msg}}
	if data != nil {
		e = append(e, kv{"data", data})
	}
	return e
}

// requestState is an opaque MRTR state handle: base64 of a small JSON.
func (g *session) requestState(tool string, step int) string {
	st := obj{{"tool", tool}, {"step", step}, {"nonce", g.hex(12)}}
	return base64.RawURLEncoding.EncodeToString(appendJSON(nil, st))
}

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

func chance(r *rand.Rand, pct int) bool { return r.IntN(100) < pct }
