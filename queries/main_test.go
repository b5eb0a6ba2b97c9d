package queries_test

import (
	"os"
	"testing"
	"time"

	"github.com/mcplens/mcplens/chtest"
	"github.com/mcplens/mcplens/pipeline"
	"github.com/mcplens/mcplens/pipeline/classify"
)

func TestMain(m *testing.M) { os.Exit(chtest.Main(m)) }

// t0 is the start of the fixtures' hour.
var t0 = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

// call builds a fixture row: the fields the analytics read, with the
// classification fields set from the category as the classifier would.
type call struct {
	at       time.Duration // after t0
	tenant   string
	server   string
	session  string
	tool     string
	req      string
	category classify.Category
	code     int64
	args     string // canonical arguments
	keys     []string
	values   []string
	declared int8
}

func (c call) row() pipeline.Call {
	ts := t0.Add(c.at)
	tenant, server := c.tenant, c.server
	if tenant == "" {
		tenant = "acme"
	}
	if server == "" {
		server = "kb"
	}
	args := c.args
	if args == "" {
		args = "{}"
	}
	cat := c.category
	if cat == "" {
		cat = classify.OK
	}
	row := pipeline.Call{
		Time: ts, TimeMs: ts.UnixMilli(), DurationMs: 10, Tenant: tenant, Server: server, Tool: c.tool,
		SessionID: c.session, SessionKey: c.session, RequestID: c.req,
		CallID: hashString(tenant + "|" + server + "|" + c.session + "|" + c.req + "|" + ts.String()),
		Source: "capture", ArgsJSON: args, ArgsHash: hashString(args), ArgKeys: c.keys, ArgValues: c.values,
		HasResponse: 1, IsError: -1, ContentBlocks: 1, Category: string(cat),
		DeclaredRetryable: c.declared, ExpectedRetryable: cat.ExpectedRetryable(),
		ClassSource: classify.SourceDefault, RPCCode: c.code, TaxonomyVersion: "test", IngestedMs: 1,
	}
	if row.ArgKeys == nil {
		row.ArgKeys, row.ArgValues = []string{}, []string{}
	}
	if cat.Failure() {
		row.IsFailure = 1
		row.IsError = 1
	}
	if c.code != 0 {
		row.RPCError = 1
	}
	return row
}

func rows(cs ...call) []pipeline.Call {
	out := make([]pipeline.Call, len(cs))
	for i, c := range cs {
		out[i] = c.row()
	}
	return out
}

func hashString(s string) uint64 {
	var h uint64 = 14695981039346656037
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}
