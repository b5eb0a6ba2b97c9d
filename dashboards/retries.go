package dashboards

import (
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/units"
)

// Panel ids of Retries & misclassification.
const (
	retriesRowOutcomes   = 300
	retriesOverTime      = 301
	retriesByCategory    = 302
	retriesRecoveries    = 303
	retriesRowMisclass   = 310
	retriesMisclassified = 311
	retriesMisflagged    = 312
	retriesRowClients    = 320
	retriesClientHabits  = 321
	retriesLoops         = 322
	retriesClientOutcome = 323
)

// Retries is how retry chains end, by category and retryability, the
// misclassifications that their outcomes reveal, each client's retry
// habits and outcomes, and the longest retry loops.
func Retries() *dashboard.DashboardBuilder {
	return newDashboard(RetriesUID, "mcplens / Retries & misclassification",
		"Retry chains (a failed call and the retries within 60 s): retry-then-success vs retry-then-fail by category and retryability, attempts, same-argument vs changed-argument recoveries, the five misclassification kinds, each client's retry habits and outcomes, and the longest retry loops with their sessions.").
		WithVariable(datasourceVariable()).
		WithVariable(filterVariable("tenant", "Tenant", "Tenants to include (All: no filter).")).
		WithVariable(filterVariable("server", "Server", "MCP servers to include (All: no filter).", "tenant")).
		WithVariable(filterVariable("tool", "Tool", "Tools to include (All: no filter).", "tenant", "server")).
		WithVariable(customVariable("min_chains", "Min chains",
			"Smallest population (retry chains, or misflagged calls) a misclassification is reported for; the API's default is 5.",
			"2,5,10,20,50", "5")).
		WithVariable(chainBoundVariable()).
		WithRow(row(retriesRowOutcomes, "Retry outcomes")).
		WithPanel(timeSeriesPanel(retriesOverTime, "Retry chains by outcome",
			"Retry chains started per interval by how they ended. A growing retry_then_fail band is wasted load on a failing server; a growing no_retry band of retryable categories means clients give up too early.",
			panelSQL("retry_outcomes_over_time")).
			Unit(units.Short).
			Stacking(common.NewStackingConfigBuilder().Mode(common.StackingModeNormal)).
			FillOpacity(40)).
		WithPanel(tablePanel(retriesByCategory, "Outcomes by category and retryability",
			"Chains by the first call's category, declared retryability (what the server said) and expected retryability (the taxonomy's advice), with the recovered share of retried chains and the average attempts. Where declared and expected disagree and the outcomes side with expected, the server's retry advice is wrong.",
			panelSQL("retry_outcomes")).
			OverrideByName("recovered_share", []dashboard.DynamicConfigValue{
				override("unit", units.PercentUnit),
				override("custom.cellOptions", map[string]any{"type": "color-background", "mode": "basic"}),
			}).
			Thresholds(thresholds("red", 0.1, "yellow", 0.5, "green"))).
		WithPanel(tablePanel(retriesRecoveries, "Recoveries: same arguments vs changed arguments",
			"Retried chains by category, split by whether a retry changed the arguments. Recoveries with changed arguments mean the error was correctable (the model fixed its input): the category should not be retried blindly. Same-argument recoveries mean a transient fault that is worth retrying.",
			panelSQL("retry_recoveries")).
			Span(24)).
		WithRow(row(retriesRowMisclass, "Misclassification")).
		WithPanel(tablePanel(retriesMisclassified, "Misclassified retryables",
			"retryable_never_recovers: retryable but fewer than 10 % of retried chains recover (stop advertising it as retryable). non_retryable_recovers: not retryable, yet at least half of the same-argument retries succeed (mark it retryable). retried_non_retryable: clients retry, unchanged, what cannot succeed (say so in the error). retried_non_idempotent: clients retry after a timeout or no answer a tool whose definition declares neither idempotentHint nor readOnlyHint, so a retry may repeat its effect (make the tool idempotent, or declare it). misflagged: isError contradicts the category. evidence_share is the recovered share, or the misflagged share of calls.",
			panelSQL("misclassifications")).
			WithTarget(chQueryRef("B", panelSQL("misclassifications_misflagged"), FormatTable)).
			WithTransformation(mergeRows()).
			OverrideByName("tool_name", []dashboard.DynamicConfigValue{toolLinks()}).
			OverrideByName("category_name", []dashboard.DynamicConfigValue{callsLinks("Calls of ${__data.fields.tool_name} in ${__data.fields.category_name}",
				callsNarrowing{tool: rowTool("tool_name"), category: rowValue("category_name")})}).
			OverrideByName("evidence_share", []dashboard.DynamicConfigValue{override("unit", units.PercentUnit)})).
		WithPanel(timeSeriesPanel(retriesMisflagged, "Misflagged calls over time",
			"Misflagged calls per interval: hidden_failure is a failure sent with isError false or absent, so the client takes it for a success and neither retries nor corrects it; false_alarm is a success flagged as an error. Fix the server's isError, or add a classification rule when the category is wrong.",
			panelSQL("misflagged_over_time")).
			Interval(rollupInterval).
			Unit(units.Short)).
		WithRow(row(retriesRowClients, "Clients")).
		WithPanel(tablePanel(retriesClientHabits, "Retry habits by client",
			"Per client (its clientInfo name; empty where none was captured), the two mistakes retry advice exists to prevent. resent_share: of its failures that should be corrected, not retried (expected retryable no: INVALID_ARGUMENT, UNAUTHENTICATED, UNKNOWN_TOOL...), those it sent again unchanged within 60 s: a retry layer that retries everything, or error text that does not say what to change. given_up_share: of its failures worth retrying (RATE_LIMITED, UPSTREAM_TIMEOUT, UNAVAILABLE...), those with no next call of the tool within 60 s. before_retry_after_n: re-calls before the server's retry-after hint had passed. GET /api/v1/recalls?by=client has the same per tool and category.",
			panelSQL("client_habits")).
			OverrideByName("resent_share", []dashboard.DynamicConfigValue{override("unit", units.PercentUnit)}).
			OverrideByName("given_up_share", []dashboard.DynamicConfigValue{override("unit", units.PercentUnit)}).
			Span(24)).
		WithPanel(tablePanel(retriesClientOutcome, "Retry outcomes by client",
			"Per client, the retry chains that started in the range (a failed call and the calls of the same tool in the same session each at most 60 s after a failed one) and how they ended: retry_then_success, retry_then_fail, no_retry (the client did not call again within 60 s). recovered_share is of the retried chains. A low recovered_share with many attempts: a client that retries what will not succeed (compare Retry habits by client); many no_retry chains of retryable categories: a client that gives up. GET /api/v1/retry-outcomes?by=client has the same per tool, category and retryability.",
			panelSQL("client_outcomes")).
			OverrideByName("recovered_share", []dashboard.DynamicConfigValue{override("unit", units.PercentUnit)}).
			Span(24)).
		WithPanel(tablePanel(retriesLoops, "Retry loops",
			"The 50 longest retry chains that started in the range, at least 5 calls each: a session that kept calling a tool after failures, each call at most 60 s after a failed one. arguments same: every call identical, the agent repeating what failed (with expected retryable no, a retry layer retrying what should be corrected); changed: the model trying other inputs. outcome retry_then_fail with many calls: a client that does not back off. A session opens its calls in the tool drilldown. GET /api/v1/retry-loops has the same with other minimums and windows.",
			panelSQL("retry_loops")).
			OverrideByName("tool_name", []dashboard.DynamicConfigValue{toolLinks()}).
			OverrideByName("session", []dashboard.DynamicConfigValue{callsLinks("Calls of ${__data.fields.tool_name} in session ${__data.fields.session}",
				callsNarrowing{tool: rowTool("tool_name"), session: rowValue("session")})}).
			OverrideByName("duration_s", []dashboard.DynamicConfigValue{override("unit", units.Seconds)}).
			Span(24))
}
