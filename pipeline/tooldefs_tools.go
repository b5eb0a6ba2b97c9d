package pipeline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/mcplens/mcplens/pipeline/classify"
)

// ToolsConfig tunes tool-definition capture and schema validation.
type ToolsConfig struct {
	FlushEvery    time.Duration // insert queued rows at least this often (default 1 s)
	QueueCapacity int           // violation rows held in memory at most; more are dropped and counted (-tool-queue-capacity, default 100000)
	SightingEvery time.Duration // a version's sightings are written at most this often per process (-tool-sighting-every, default 1 h)
	Refresh       time.Duration // reload the definitions other processes captured this often; 0 = only at start (-tool-refresh)
	MaxTools      int           // (tenant, server, tool) tracked at most (default 100000)
}

func (c ToolsConfig) withDefaults() ToolsConfig {
	if c.FlushEvery <= 0 {
		c.FlushEvery = time.Second
	}
	if c.QueueCapacity <= 0 {
		c.QueueCapacity = 100000
	}
	if c.SightingEvery <= 0 {
		c.SightingEvery = time.Hour
	}
	if c.MaxTools <= 0 {
		c.MaxTools = 100000
	}
	return c
}

// Tools captures tool definitions (tools/list results) and validates every
// call against the definition in force at the call's time
// (docs/schemas.md). It keeps a catalog of the versions of each (tenant,
// server, tool), loaded from ClickHouse by Load and updated by Observe, and
// queues the rows it produces (definitions, sightings, violations) for
// Run to insert. The queue is memory only: the rows are derived from calls
// and tool lists, so a crash loses at most one flush interval of them, and
// replaying the captures restores them. Observe and Check are safe for
// concurrent use; Run starts no goroutine and returns when its context
// ends.
type Tools struct {
	cfg ToolsConfig
	cat *catalog
	w   *Writer  // nil: rows stay queued
	db  Selecter // for Load and Refresh; nil: none
	m   *toolMetrics
	log *slog.Logger

	mu      sync.Mutex
	pending ToolRows
	logged  time.Time // last flush error logged
}

// NewTools returns a Tools that inserts through w and loads from db (either
// may be nil), with its metrics on reg.
func NewTools(w *Writer, db Selecter, cfg ToolsConfig, reg prometheus.Registerer, log *slog.Logger) *Tools {
	cfg = cfg.withDefaults()
	return &Tools{cfg: cfg, cat: newCatalog(cfg.SightingEvery, cfg.MaxTools), w: w, db: db, m: newToolMetrics(reg), log: log}
}

// Load merges the definitions stored in ClickHouse into the catalog. Calls
// are validated only once a definition is known: load before taking calls.
func (t *Tools) Load(ctx context.Context) error {
	if t.db == nil {
		return nil
	}
	n, err := t.cat.load(ctx, t.db)
	if err != nil {
		return err
	}
	t.m.tracked.Set(float64(n))
	return nil
}

// Sources of definitions, the label of mcplens_tool_definitions_seen_total.
const (
	ToolSourceCapture = "capture" // tools/list lines of POST /v1/calls and replay
	ToolSourceOTLP    = "otlp"    // tools/list spans that carry the result
	ToolSourceAPI     = "api"     // POST /v1/tools and `ingest tools`
)

// Observe records definitions seen at their SeenMs: the catalog learns them
// at once, so calls decoded after Observe returns are validated against
// them, and the rows to store are queued. It returns how many were tracked
// (the rest exceed MaxTools and are counted as dropped).
func (t *Tools) Observe(defs []ToolDef, source string) int {
	var rows ToolRows
	tracked := 0
	for i := range defs {
		d := &defs[i]
		writeDef, writeSighting, ok := t.cat.observe(d)
		if !ok {
			t.m.dropped.WithLabelValues("catalog_full").Inc()
			continue
		}
		tracked++
		t.m.seen.WithLabelValues(source).Inc()
		if writeDef {
			rows.Definitions = append(rows.Definitions, *d)
			t.m.versions.Inc()
		}
		if writeSighting {
			rows.Sightings = append(rows.Sightings, ToolSighting{Time: time.UnixMilli(d.SeenMs).UTC(), TimeMs: d.SeenMs,
				Tenant: d.Tenant, Server: d.Server, Tool: d.Tool, DefinitionHash: d.Hash, IngestedMs: d.IngestedMs})
		}
	}
	t.cat.mu.RLock()
	t.m.tracked.Set(float64(len(t.cat.tools)))
	t.cat.mu.RUnlock()
	t.mu.Lock()
	// Definitions and sightings are never dropped for room: the catalog
	// bounds them, and a lost definition would not be written again.
	t.pending.Definitions = append(t.pending.Definitions, rows.Definitions...)
	t.pending.Sightings = append(t.pending.Sightings, rows.Sightings...)
	t.m.queued.Set(float64(t.pending.Len()))
	t.mu.Unlock()
	return tracked
}

// Check validates c (decoded and classified; in is its classifier Input)
// against the definition of its tool in force at c's time, and queues its
// violation rows. It sets c.ArgsValidated when the arguments were checked,
// whether they passed or not: the calls table counts the validated calls,
// which until schema migration 024 an empty violation row per passing call
// did. A call whose tool has no definition at that time is not validated,
// nor are arguments that the trace did not carry (in.Arguments nil). The result is
// validated when the definition has an outputSchema and the call ended in a
// complete, non-error result whose content is known: its structuredContent
// must conform, and must be present.
func (t *Tools) Check(c *Call, in *classify.Input) {
	v, ok := t.cat.at(c.Tenant, c.Server, c.Tool, c.TimeMs)
	if !ok {
		t.m.validations.WithLabelValues(SideArguments, "no_definition").Inc()
		return
	}
	inS, outS, err := v.compiled() // a side whose schema does not compile is nil: not validated
	if err != nil && v.reported.CompareAndSwap(false, true) && t.log != nil {
		t.log.Warn("tool schema does not compile; that side of its calls is not validated", "tenant", c.Tenant,
			"server", c.Server, "tool", c.Tool, "definition_hash", fmt.Sprintf("%016x", v.hash), "err", err)
	}
	var rows []Violation
	add := func(side string, f finding) {
		rows = append(rows, Violation{Time: c.Time, TimeMs: c.TimeMs, Tenant: c.Tenant, Server: c.Server, Tool: c.Tool,
			CallID: c.CallID, DefinitionHash: v.hash, Side: side, Path: f.path, Reason: f.reason, Detail: f.detail,
			Suggestion: f.suggestion, Category: c.Category, IsFailure: c.IsFailure, IngestedMs: c.IngestedMs})
		if f.reason != "" {
			t.m.violations.WithLabelValues(side, f.reason).Inc()
		}
	}
	switch {
	case in.Arguments == nil:
		t.m.validations.WithLabelValues(SideArguments, "unknown_arguments").Inc()
	case inS != nil:
		if t.validate(inS, in.Arguments, SideArguments, add) {
			c.ArgsValidated = 1
		}
	case v.input != "":
		t.m.validations.WithLabelValues(SideArguments, "schema_error").Inc()
	default:
		t.m.validations.WithLabelValues(SideArguments, "no_schema").Inc()
	}
	if outS != nil && c.HasResponse == 1 && c.RPCError == 0 && c.IsError != 1 && c.ResultType == resultComplete &&
		c.ContentBlocks >= 0 {
		if in.Structured == nil {
			t.m.validations.WithLabelValues(SideResult, "invalid").Inc()
			add(SideResult, finding{"$", ReasonMissingStructured, "the tool declares an outputSchema, the result has no structuredContent", ""})
		} else {
			t.validate(outS, in.Structured, SideResult, add)
		}
	}
	if len(rows) == 0 {
		return
	}
	t.mu.Lock()
	if len(t.pending.Violations)+len(rows) > t.cfg.QueueCapacity {
		t.mu.Unlock()
		t.m.dropped.WithLabelValues("queue_full").Add(float64(len(rows)))
		return
	}
	t.pending.Violations = append(t.pending.Violations, rows...)
	t.m.queued.Set(float64(t.pending.Len()))
	t.mu.Unlock()
}

// validate runs one side, adds its violations, and reports whether the
// side was validated (the schema evaluated it, passing or not).
func (t *Tools) validate(cs *compiledSchema, raw []byte, side string, add func(string, finding)) bool {
	fs, err := cs.validate(raw)
	switch {
	case err != nil:
		t.m.validations.WithLabelValues(side, "schema_error").Inc()
		return false
	case len(fs) == 0:
		t.m.validations.WithLabelValues(side, "valid").Inc()
	default:
		t.m.validations.WithLabelValues(side, "invalid").Inc()
		for _, f := range fs {
			add(side, f)
		}
	}
	return true
}

// InForce returns the hash of the definition of (tenant, server, tool) in
// force at t, as the catalog knows it: the version seen last at or before t.
func (t *Tools) InForce(tenant, server, tool string, at time.Time) (hash uint64, ok bool) {
	v, ok := t.cat.at(tenant, server, tool, at.UnixMilli())
	if !ok {
		return 0, false
	}
	return v.hash, true
}

// Queued returns the rows waiting to be inserted.
func (t *Tools) Queued() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.pending.Len()
}

// Run inserts the queued rows every FlushEvery and, with Refresh set,
// reloads the catalog, until ctx ends. Insert errors are logged (at most
// once a minute) and the rows retried at the next tick; call Drain after
// Run returns.
func (t *Tools) Run(ctx context.Context) {
	flush := time.NewTicker(t.cfg.FlushEvery)
	defer flush.Stop()
	var refresh <-chan time.Time
	if t.cfg.Refresh > 0 && t.db != nil {
		r := time.NewTicker(t.cfg.Refresh)
		defer r.Stop()
		refresh = r.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-flush.C:
			if err := t.Flush(ctx); err != nil {
				t.logError("insert tool rows", err)
			}
		case <-refresh:
			if err := t.Load(ctx); err != nil {
				t.logError("refresh tool definitions", err)
			}
		}
	}
}

func (t *Tools) logError(msg string, err error) {
	t.mu.Lock()
	due := time.Since(t.logged) >= time.Minute
	if due {
		t.logged = time.Now()
	}
	t.mu.Unlock()
	if due && t.log != nil {
		t.log.Error(msg, "err", err, "queued", t.Queued())
	}
}

// Flush inserts the queued rows once. On a retryable error the rows go back
// to the front of the queue (violations past QueueCapacity are dropped and
// counted); on an error ClickHouse will repeat, they are dropped and
// counted, and the definitions and sightings among them are forgotten so
// that their version's next sighting writes them again.
func (t *Tools) Flush(ctx context.Context) error {
	if t.w == nil {
		return nil
	}
	t.mu.Lock()
	rows := t.pending
	t.pending = ToolRows{}
	t.mu.Unlock()
	if rows.Len() == 0 {
		return nil
	}
	err := t.w.WriteToolRows(ctx, &rows)
	if err == nil {
		t.mu.Lock()
		t.m.queued.Set(float64(t.pending.Len()))
		t.mu.Unlock()
		return nil
	}
	if !Retryable(err) {
		t.m.dropped.WithLabelValues("insert_rejected").Add(float64(rows.Len()))
		for i := range rows.Definitions {
			t.cat.forget(&rows.Definitions[i])
		}
		for i := range rows.Sightings {
			t.cat.forgetSighting(&rows.Sightings[i])
		}
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	rows.Definitions = append(rows.Definitions, t.pending.Definitions...)
	rows.Sightings = append(rows.Sightings, t.pending.Sightings...)
	rows.Violations = append(rows.Violations, t.pending.Violations...)
	if over := len(rows.Violations) - t.cfg.QueueCapacity; over > 0 {
		t.m.dropped.WithLabelValues("queue_full").Add(float64(over))
		rows.Violations = rows.Violations[over:]
	}
	t.pending = rows
	t.m.queued.Set(float64(t.pending.Len()))
	return err
}

// Drain flushes until the queue is empty or ctx ends; it gets its own
// deadline at shutdown, as the Batcher's does.
func (t *Tools) Drain(ctx context.Context) error {
	if t.w == nil {
		return nil // nothing to insert through; the rows stay queued
	}
	for {
		err := t.Flush(ctx)
		if t.Queued() == 0 {
			return err
		}
		if err != nil && !Retryable(err) {
			continue // the rejected rows are gone; flush what came after
		}
		select {
		case <-ctx.Done():
			n := t.Queued()
			t.m.dropped.WithLabelValues("shutdown_timeout").Add(float64(n))
			return errors.Join(err, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// forget marks d's definition as not stored, so that its next sighting
// queues it again.
func (c *catalog) forget(d *ToolDef) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if h := c.tools[toolKey{d.Tenant, d.Server, d.Tool}]; h != nil {
		delete(h.stored, d.Hash)
		delete(h.lastSighting, d.Hash)
	}
}

// forgetSighting marks s as not stored when it is the last sighting of its
// version this process wrote, so that the next sighting of that version is
// written whatever the interval: a refused sighting may have been a change
// (a return to a stored version writes its sighting alone).
func (c *catalog) forgetSighting(s *ToolSighting) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if h := c.tools[toolKey{s.Tenant, s.Server, s.Tool}]; h != nil {
		if last, ok := h.lastSighting[s.DefinitionHash]; ok && last == s.TimeMs {
			delete(h.lastSighting, s.DefinitionHash)
		}
	}
}

// isToolsList reports whether a capture line may be a tools/list, cheaply:
// DecodeToolsList decides.
func isToolsList(line []byte) bool { return bytes.Contains(line, []byte(`"tools/list"`)) }

// toolMetrics are the Prometheus metrics of Tools. Labels come from fixed
// sets; tool and server names never become label values.
type toolMetrics struct {
	seen        *prometheus.CounterVec
	versions    prometheus.Counter
	tracked     prometheus.Gauge
	validations *prometheus.CounterVec
	violations  *prometheus.CounterVec
	queued      prometheus.Gauge
	dropped     *prometheus.CounterVec
}

func newToolMetrics(reg prometheus.Registerer) *toolMetrics {
	f := promauto.With(reg)
	return &toolMetrics{
		seen: f.NewCounterVec(prometheus.CounterOpts{
			Name: "mcplens_tool_definitions_seen_total",
			Help: "Tool definitions received, by source (capture: tools/list lines, otlp: tools/list spans, api: POST /v1/tools and ingest tools).",
		}, []string{"source"}),
		versions: f.NewCounter(prometheus.CounterOpts{
			Name: "mcplens_tool_definition_versions_total",
			Help: "Tool definition versions this process stored: a tool seen for the first time, or a changed definition.",
		}),
		tracked: f.NewGauge(prometheus.GaugeOpts{
			Name: "mcplens_tool_definitions_tracked_tools",
			Help: "Tools (tenant, server, tool) with a definition in the validation catalog.",
		}),
		validations: f.NewCounterVec(prometheus.CounterOpts{
			Name: "mcplens_schema_validations_total",
			Help: "Calls checked against their tool's schema, by side (arguments, result) and result (valid, invalid, no_definition, no_schema, unknown_arguments, schema_error).",
		}, []string{"side", "result"}),
		violations: f.NewCounterVec(prometheus.CounterOpts{
			Name: "mcplens_schema_violations_total",
			Help: "Schema violations found, by side and reason (docs/schemas.md).",
		}, []string{"side", "reason"}),
		queued: f.NewGauge(prometheus.GaugeOpts{
			Name: "mcplens_tool_rows_queued",
			Help: "Definition, sighting and violation rows waiting to be inserted.",
		}),
		dropped: f.NewCounterVec(prometheus.CounterOpts{
			Name: "mcplens_tool_rows_dropped_total",
			Help: "Rows of tool definitions and schema validation not stored, by reason (queue_full: raise -tool-queue-capacity; insert_rejected; shutdown_timeout; catalog_full: more tools than the catalog tracks).",
		}, []string{"reason"}),
	}
}
