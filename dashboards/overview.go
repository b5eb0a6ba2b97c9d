package dashboards

import (
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/units"
)

// Panel ids of the overview, referenced by links and alert rules.
const (
	overviewCalls           = 101
	overviewFailureRate     = 102
	overviewEmptyRate       = 103
	overviewInvalidShare    = 104
	overviewMisflagged      = 105
	overviewMisclassified   = 106
	overviewByCategory      = 111
	overviewRates           = 112
	overviewTopTools        = 121
	overviewRetryOutcomes   = 122
	overviewLatency         = 131
	overviewGaugeFreshness  = 132
	overviewRowTotals       = 100
	overviewRowOverTime     = 110
	overviewRowWhere        = 120
	overviewRowFromMetrics  = 130
	toolDrilldownLinkSuffix = "&var-tool=${__data.fields.tool_name}"
)

// Overview is the landing dashboard: how many calls, how many fail or come
// back empty, which categories and tools, how retries end, and what is
// misclassified; each panel links onwards.
func Overview() *dashboard.DashboardBuilder {
	return newDashboard(OverviewUID, "mcplens / Overview",
		"MCP tools/call health across tenants, servers and tools: volume, failures by category, empty results, retry outcomes and misclassifications. Start here; the tables link to the tool drilldown.").
		WithVariable(datasourceVariable()).
		WithVariable(prometheusVariable()).
		WithVariable(filterVariable("tenant", "Tenant", "Tenants to include (All: no filter).")).
		WithVariable(filterVariable("server", "Server", "MCP servers to include (All: no filter).", "tenant")).
		WithVariable(filterVariable("tool", "Tool", "Tools to include (All: no filter).", "tenant", "server")).
		WithVariable(customVariable("min_chains", "Min chains",
			"Smallest population (retry chains, or misflagged calls) a misclassification is reported for; the API's default is 5.",
			"2,5,10,20,50", "5")).
		WithVariable(chainBoundVariable()).
		WithRow(row(overviewRowTotals, "Totals for the range")).
		WithPanel(statPanel(overviewCalls, "Calls",
			"tools/call requests in the range, each counted once. A sudden drop with no deploy usually means ingest stopped: check mcplens_ingest_calls_dropped_total and the ingest /readyz.",
			panelSQL("overview_calls")).
			Unit(units.Short)).
		WithPanel(statPanel(overviewFailureRate, "Failure rate",
			"Share of calls whose category is a failure (anything but OK, EMPTY_RESULT and CANCELLED). Above 5 % is yellow, above 20 % red: open 'Failures by category' to see which kind dominates, then the tool drilldown.",
			panelSQL("overview_failure_rate")).
			Unit(units.PercentUnit).Decimals(1).
			Thresholds(thresholds("green", 0.05, "yellow", 0.2, "red"))).
		WithPanel(statPanel(overviewEmptyRate, "Empty-result rate",
			"EMPTY_RESULT calls as a share of calls that did not fail: the tool ran and found nothing. Above 20 % often means a misspelled or renamed enum value; the Empty results dashboard breaks it down by argument value.",
			panelSQL("overview_empty_rate")).
			Unit(units.PercentUnit).Decimals(1).
			Thresholds(thresholds("green", 0.2, "yellow", 0.4, "red")).
			Links(linkList(dashboardLink("Empty results", EmptyResultsUID)))).
		WithPanel(statPanel(overviewInvalidShare, "INVALID_ARGUMENT share",
			"Share of calls rejected as invalid arguments: the model sent something the tool's schema does not allow. Above 5 % the schema or description is confusing models; see Schema quality.",
			panelSQL("invalid_argument_share")).
			Unit(units.PercentUnit).Decimals(1).
			Thresholds(thresholds("green", 0.05, "yellow", 0.15, "red")).
			Links(linkList(dashboardLink("Schema quality", SchemaQualityUID)))).
		WithPanel(statPanel(overviewMisflagged, "Misflagged calls",
			"Calls whose isError flag contradicts their category: failures sent as successes (clients never retry or correct them) or successes flagged as errors. Any is worth a look: fix the server's isError or add a classification rule.",
			panelSQL("overview_misflagged")).
			Unit(units.Short).
			Thresholds(thresholds("green", 1.0, "yellow", 50.0, "red")).
			Links(linkList(dashboardLink("Retries & misclassification", RetriesUID)))).
		WithPanel(statPanel(overviewMisclassified, "Misclassifications",
			"Number of (kind, tool, category) findings where observed retry behaviour contradicts the declared or expected retryability, retries after a timeout may have repeated a tool that does not declare itself idempotent, or isError contradicts the category (min_chains applies). Open Retries & misclassification for the list and evidence.",
			panelSQL("misclassifications")).
			WithTarget(chQueryRef("B", panelSQL("misclassifications_misflagged"), FormatTable)).
			WithTransformation(mergeRows()).
			Unit(units.Short).
			ReduceOptions(common.NewReduceDataOptionsBuilder().Calcs([]string{"count"}).Fields("/^calls_n$/").Values(false)).
			NoValue("0").
			Thresholds(thresholds("green", 1.0, "orange")).
			Links(linkList(dashboardLink("Retries & misclassification", RetriesUID)))).
		WithRow(row(overviewRowOverTime, "Over time")).
		WithPanel(timeSeriesPanel(overviewByCategory, "Failures by category",
			"Failed calls per second by taxonomy category. A category that rises alone points at one cause: RATE_LIMITED and UPSTREAM_TIMEOUT at capacity, UNAUTHENTICATED at credentials, INVALID_ARGUMENT at schemas. Filter by tool to find the source.",
			panelSQL("failures_by_category")).
			Interval(rollupInterval).
			Unit(units.RequestsPerSecond).
			Stacking(common.NewStackingConfigBuilder().Mode(common.StackingModeNormal)).
			FillOpacity(40)).
		WithPanel(timeSeriesPanel(overviewRates, "Failure and empty-result rate",
			"Failure rate (failed calls / calls) and empty-result rate (EMPTY_RESULT / non-failed calls) per interval. The dashed lines are the stat thresholds (5 % failures, 20 % empty).",
			panelSQL("rates_over_time")).
			Interval(rollupInterval).
			Unit(units.PercentUnit).Min(0).
			Thresholds(thresholds("green", 0.05, "yellow", 0.2, "red")).
			ThresholdsStyle(common.NewGraphThresholdsStyleConfigBuilder().Mode(common.GraphThresholdsStyleModeDashed))).
		WithRow(row(overviewRowWhere, "Where to look")).
		WithPanel(tablePanel(overviewTopTools, "Top failing tools",
			"The 20 tools with the most failures, their failure rate and commonest failure category. Click a tool to open its drilldown with the same range and filters.",
			panelSQL("top_failing_tools")).
			OverrideByName("failure_rate", []dashboard.DynamicConfigValue{
				override("unit", units.PercentUnit),
				override("custom.cellOptions", map[string]any{"type": "color-background", "mode": "basic"}),
			}).
			OverrideByName("tool_name", []dashboard.DynamicConfigValue{toolLinks()}).
			Thresholds(thresholds("green", 0.05, "yellow", 0.2, "red"))).
		WithPanel(tablePanel(overviewRetryOutcomes, "Retry outcomes at a glance",
			"Retry chains started in the range by the first call's category and retryability: how many recovered (retry_then_success), kept failing (retry_then_fail) or were not retried. A retryable category with a low recovered share wastes retries; a non-retryable one that recovers is misclassified.",
			panelSQL("retry_outcomes")).
			OverrideByName("recovered_share", []dashboard.DynamicConfigValue{override("unit", units.PercentUnit)}).
			Links(linkList(dashboardLink("Retries & misclassification", RetriesUID)))).
		WithRow(row(overviewRowFromMetrics, "From the exported metrics (Prometheus)")).
		WithPanel(promPanel(overviewLatency, "Tool call latency p50 / p95",
			"mcp_server_operation_duration_seconds (the OTel MCP metric mcp.server.operation.duration, rebuilt by the api from the duration_ms column of newly ingested calls): p50 and p95 per tool. A rising p95 with UPSTREAM_TIMEOUT failures means a slow dependency; raise its timeout or capacity.",
			`histogram_quantile(0.95, sum by (le, gen_ai_tool_name) (rate(mcp_server_operation_duration_seconds_bucket{tenant=~"${tenant:regex}", server=~"${server:regex}", gen_ai_tool_name=~"${tool:regex}"}[$__rate_interval])))`,
			"p95 {{gen_ai_tool_name}}",
			`histogram_quantile(0.5, sum by (le, gen_ai_tool_name) (rate(mcp_server_operation_duration_seconds_bucket{tenant=~"${tenant:regex}", server=~"${server:regex}", gen_ai_tool_name=~"${tool:regex}"}[$__rate_interval])))`,
			"p50 {{gen_ai_tool_name}}").
			Unit(units.Seconds)).
		WithPanel(promPanel(overviewGaugeFreshness, "Analytics gauges: age and series cut",
			"Seconds since the api last refreshed its analytics gauges from ClickHouse, and series dropped by the cardinality cap. An age above a few refresh intervals means the gauge queries fail (see the api log); series cut means -gauges-max-series is too low for this many tenants, servers and tools.",
			`time() - max(mcplens_gauges_last_success_timestamp_seconds)`,
			"age of the gauges (s)",
			`sum by (metric) (increase(mcplens_gauges_series_dropped_total[$__rate_interval]))`,
			"series cut: {{metric}}").
			Unit(units.Short))
}

// toolDrilldownURL links to the drilldown (panel 0: the whole dashboard),
// keeping the time range and the tenant and server filters.
func toolDrilldownURL(panelID uint32) string {
	url := "/d/" + ToolUID + "?${__url_time_range}&${tenant:queryparam}&${server:queryparam}"
	if panelID != 0 {
		url += "&viewPanel=" + itoa(panelID)
	}
	return url
}
