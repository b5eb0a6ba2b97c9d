// Package traffic generates realistic, deterministic sample MCP tools/call
// traffic in mcplens's NDJSON capture format, for `make demo`, end-to-end
// tests and benchmarks.
//
// Generate plays Config.Sessions agent conversations spread over
// [Start, Start+Duration). Each conversation has one client (claude-desktop
// 2025-06-18, cursor 2025-03-26, python-sdk 2024-11-05, typescript-sdk
// 2025-11-25, or the sessionless stateless-agent 2026-07-28, which sends a
// trace_id instead of a session_id) and one tenant, and opens one MCP
// session per server it calls: kb, crm, payments, weather and github, each
// answering in the wire habits of a real SDK (Python, go-sdk, mcp-go,
// TypeScript). A conversation is a run of episodes; each episode is a Story:
// mostly plain successes, plus the failure stories mcplens exists to
// explain (silent empty results from misspelled enum values, exhausted
// connection pools retried in vain, rate limits that recover, expired tokens
// declared retryable, and so on). Clients differ in their retry habits
// (session.go): cursor's retry layer re-sends invalid arguments and expired
// tokens unchanged, python-sdk often gives up on rate limits and timeouts,
// stateless-agent retries rate limits before the server's retryAfterMs, and
// now and then runs away (20-29 more refused calls, 1-1.5 s apart: a retry
// loop); claude-desktop and typescript-sdk do only what the stories do.
//
// Output is a pure function of Config: every conversation draws from its own
// PCG seeded from (Seed, index), values derived from arguments (invoices,
// forecasts, issues) are seeded from the arguments alone, and JSON is written
// by hand in a fixed member order. Conversations are merged into one stream
// in time order through a heap, so memory holds only the conversations that
// overlap in time.
package traffic
