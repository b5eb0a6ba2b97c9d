package traffic

import (
	"cmp"
	"container/heap"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// Config shapes the generated traffic. Zero fields take the defaults below.
type Config struct {
	Seed     int64
	Start    time.Time     // first session start (UTC); zero: DefaultStart
	Duration time.Duration // spread sessions over [Start, Start+Duration); zero: 4h (see Generate)
	Sessions int           // number of agent conversations; zero: 100
	Tenants  []string      // default {"acme","globex"}
}

// Defaults for the zero fields of Config.
var (
	DefaultStart    = time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	DefaultDuration = 4 * time.Hour
	DefaultSessions = 100
	DefaultTenants  = []string{"acme", "globex"}
)

// withDefaults fills the zero fields of cfg and rejects values that cannot
// produce traffic.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.Start.IsZero() {
		cfg.Start = DefaultStart
	}
	cfg.Start = cfg.Start.UTC()
	if cfg.Duration == 0 {
		cfg.Duration = DefaultDuration
	}
	if cfg.Sessions == 0 {
		cfg.Sessions = DefaultSessions
	}
	if len(cfg.Tenants) == 0 {
		cfg.Tenants = DefaultTenants
	}
	if cfg.Duration < 0 {
		return cfg, fmt.Errorf("traffic: duration %v is negative", cfg.Duration)
	}
	if cfg.Sessions < 0 {
		return cfg, fmt.Errorf("traffic: sessions %d is negative", cfg.Sessions)
	}
	for _, t := range cfg.Tenants {
		if strings.TrimSpace(t) == "" {
			return cfg, errors.New("traffic: empty tenant name")
		}
	}
	return cfg, nil
}

// Story names the scenario a capture line belongs to. Every call of one
// episode (the first failure, its retries, the corrected call that follows)
// carries the episode's story; an unrelated call made in between is
// StorySuccess.
type Story string

// The stories, in the order Stories lists them.
const (
	// StorySuccess: ordinary successful calls of every tool.
	StorySuccess Story = "success"
	// StoryRepeatAfterPause: the same call with the same arguments again after
	// more than 60 s; both succeed. Not a retry.
	StoryRepeatAfterPause Story = "repeat_after_pause"
	// StoryMisspelledEnum: an argument value that does not exist
	// (department "finace", city "Atlantis") yields an empty result with
	// isError false; the model sometimes corrects it, sometimes gives up.
	StoryMisspelledEnum Story = "misspelled_enum"
	// StoryPoolExhausted: isError true "connection pool exhausted", retried
	// unchanged until the client gives up; the last attempt may time out.
	StoryPoolExhausted Story = "pool_exhausted"
	// StoryRateLimited: a 429 (text or structured RATE_LIMITED with
	// retryAfterMs), retried after 2-10 s, then success; unless the client
	// gives up or retries before the hint (its habits, session.go).
	StoryRateLimited Story = "rate_limited"
	// StoryExpiredToken: 401 / 令牌过期, sometimes declared retryable, retried
	// unchanged at most once, or 2-4 times by cursor's retry layer; all
	// fail.
	StoryExpiredToken Story = "expired_token"
	// StoryInvalidParams: -32602 or "Input validation error", then a call
	// with corrected arguments that succeeds; cursor's retry layer often
	// sends the invalid call again unchanged first (its habits, session.go).
	StoryInvalidParams Story = "invalid_params"
	// StoryUnknownTool: a hallucinated tool name, answered in the shape of
	// the server's SDK.
	StoryUnknownTool Story = "unknown_tool"
	// StoryUpstreamTimeout: isError "upstream timed out after 30s"; some
	// retried successfully, some not.
	StoryUpstreamTimeout Story = "upstream_timeout"
	// StoryHiddenFailure: isError false (or absent) around a traceback or a
	// structuredContent {"error":true}.
	StoryHiddenFailure Story = "hidden_failure"
	// StoryInternalError: mcp-go style JSON-RPC -32603.
	StoryInternalError Story = "internal_error"
	// StoryInputRequired: 2026-07-28 MRTR: an input_required result, then a
	// continuation with a new id, requestState and inputResponses.
	StoryInputRequired Story = "input_required"
	// StoryPermissionDenied: 403 / 无权限访问该文档.
	StoryPermissionDenied Story = "permission_denied"
	// StoryNotFound: get_doc of a missing id and similar: -32002 or isError
	// "document D-999 not found".
	StoryNotFound Story = "not_found"
)

// Stories lists every story in a fixed order, for printing.
var Stories = []Story{
	StorySuccess, StoryRepeatAfterPause, StoryMisspelledEnum, StoryPoolExhausted, StoryRateLimited,
	StoryExpiredToken, StoryInvalidParams, StoryUnknownTool, StoryUpstreamTimeout, StoryHiddenFailure,
	StoryInternalError, StoryInputRequired, StoryPermissionDenied, StoryNotFound,
}

// StoryCount is how often one story occurred.
type StoryCount struct {
	Episodes int // occurrences of the scenario (for StorySuccess: groups of related calls)
	Lines    int // capture lines labelled with the story
}

// Stats describes one generated data set.
type Stats struct {
	Sessions int   // agent conversations (Config.Sessions)
	Lines    int   // capture lines emitted
	Bytes    int64 // bytes emitted, without newlines
	Stories  map[Story]StoryCount
}

// String renders s as a small table in Stories order.
func (s Stats) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-20s %8s %8s\n", "story", "episodes", "lines")
	for _, st := range Stories {
		c := s.Stories[st]
		fmt.Fprintf(&b, "%-20s %8d %8d\n", st, c.Episodes, c.Lines)
	}
	avg := int64(0)
	if s.Lines > 0 {
		avg = s.Bytes / int64(s.Lines)
	}
	fmt.Fprintf(&b, "%d sessions, %d lines, %d bytes (%d B/line)\n", s.Sessions, s.Lines, s.Bytes, avg)
	return b.String()
}

// Generate calls emit for every capture line, in global time order (ties keep
// the order of their session). A line is one JSON object without the
// trailing newline; emit may keep it. The same Config always produces the
// same bytes. An error from emit stops generation and is returned as is.
//
// The first session starts at Start, the others at random in the window. A
// session lasts a few minutes (median 6, never an hour); one that would run
// past Start+Duration starts earlier instead, so with a window of an hour or
// more every call, response included, falls inside [Start, Start+Duration).
func Generate(cfg Config, emit func(line []byte) error) error {
	_, err := GenerateLabeled(cfg, func(line []byte, _ Story) error { return emit(line) })
	return err
}

// GenerateLabeled is Generate that also tells emit which story each line
// belongs to, and returns counts per story. emit may be nil to only count.
func GenerateLabeled(cfg Config, emit func(line []byte, story Story) error) (Stats, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return Stats{}, err
	}
	stats := Stats{Sessions: cfg.Sessions, Stories: make(map[Story]StoryCount, len(Stories))}

	// Every session draws from its own generator, seeded from (Seed, index),
	// so a session's lines do not depend on the order sessions are built in.
	// Sessions are built in order of their drawn start and their lines
	// merged through a heap. A session moved earlier to end inside the window
	// moves by less than maxSession, so a line older than the next drawn
	// start minus maxSession can no longer be preceded: it is emitted. Memory
	// holds only the sessions of one maxSession.
	type start struct {
		i int
		t time.Time
	}
	starts := make([]start, cfg.Sessions)
	for i := range starts {
		t := cfg.Start
		if i > 0 && cfg.Duration > 0 {
			t = t.Add(time.Duration(sessionRNG(cfg.Seed, i, 0).Int64N(int64(cfg.Duration))))
		}
		starts[i] = start{i, t.Truncate(time.Millisecond)}
	}
	slices.SortFunc(starts, func(a, b start) int {
		return cmp.Or(a.t.Compare(b.t), cmp.Compare(a.i, b.i))
	})

	var h lineHeap
	pop := func() error {
		l := heap.Pop(&h).(line)
		stats.Lines++
		stats.Bytes += int64(len(l.data))
		c := stats.Stories[l.story]
		c.Lines++
		stats.Stories[l.story] = c
		if emit == nil {
			return nil
		}
		return emit(l.data, l.story)
	}
	end := cfg.Start.Add(cfg.Duration)
	for _, s := range starts {
		for h.Len() > 0 && h[0].t.Before(s.t.Add(-maxSession)) {
			if err := pop(); err != nil {
				return stats, err
			}
		}
		g := newSession(cfg, s.i, s.t)
		g.run()
		if g.t.After(end) && s.t.After(cfg.Start) {
			// Replay the session from an earlier start: the same draws
			// give the same calls, now ending 1 ms before the window does.
			at := end.Add(-g.t.Sub(s.t) - time.Millisecond)
			at = latest(at, cfg.Start, s.t.Add(-maxSession))
			g = newSession(cfg, s.i, at)
			g.run()
		}
		for st, n := range g.episodes {
			c := stats.Stories[st]
			c.Episodes += n
			stats.Stories[st] = c
		}
		for _, l := range g.lines {
			heap.Push(&h, l)
		}
	}
	for h.Len() > 0 {
		if err := pop(); err != nil {
			return stats, err
		}
	}
	return stats, nil
}

func latest(ts ...time.Time) time.Time {
	m := ts[0]
	for _, t := range ts[1:] {
		if t.After(m) {
			m = t
		}
	}
	return m
}

// sessionRNG returns the generator for stream n of session i.
func sessionRNG(seed int64, i, n int) *rand.Rand {
	a := splitmix(uint64(seed) ^ splitmix(uint64(i)<<8|uint64(n)))
	return rand.New(rand.NewPCG(a, splitmix(a^0x6a09e667f3bcc909)))
}

// splitmix is the SplitMix64 finalizer: it spreads nearby inputs over the
// whole 64-bit range before they seed a PCG.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// line is one encoded capture line waiting to be emitted.
type line struct {
	t       time.Time
	session int
	seq     int
	story   Story
	data    []byte
}

// lineHeap orders lines by time, then session index, then position in the
// session: a total order, so the merge is deterministic.
type lineHeap []line

func (h lineHeap) Len() int { return len(h) }
func (h lineHeap) Less(i, j int) bool {
	return cmp.Or(h[i].t.Compare(h[j].t), cmp.Compare(h[i].session, h[j].session), cmp.Compare(h[i].seq, h[j].seq)) < 0
}
func (h lineHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *lineHeap) Push(x any)   { *h = append(*h, x.(line)) }
func (h *lineHeap) Pop() any {
	old := *h
	l := old[len(old)-1]
	old[len(old)-1] = line{}
	*h = old[:len(old)-1]
	return l
}
