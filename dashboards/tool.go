package dashboards

import (
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/units"
)

// Panel ids of the tool drilldown.
const (
	toolRowFailures    = 200
	toolByCategory     = 201
	toolByCode         = 202
	toolRowRetries     = 210
	toolRetryOutcomes  = 211
	toolRecalls        = 212
	toolRowArguments   = 220
	toolEmptyByArg     = 221
	toolFailureMessage = 222
	toolCalls          = 223
)

// ToolDrilldown is one tool in depth: its categories and codes over time,
// how its retries end by category and retryability, how often agents send
// the same failing request again, which argument values come back empty,
// its recent failure messages, and its calls one by one, with what they
// sent and got back.
func ToolDrilldown() *dashboard.DashboardBuilder {
	return newDashboard(ToolUID, "mcplens / Tool drilldown",
		"One MCP tool in depth: failures by category and code, retry outcomes with declared vs expected retryability, unchanged re-calls, empty results by argument value, recent failure messages and the calls themselves with their arguments. Reached from the overview's Top failing tools.").
		WithVariable(datasourceVariable()).
		WithVariable(filterVariable("tenant", "Tenant", "Tenants to include (All: no filter).")).
		WithVariable(filterVariable("server", "Server", "MCP servers to include (All: no filter).", "tenant")).
		WithVariable(singleToolVariable()).
		WithVariable(argKeyVariable()).
		WithVariable(argValueVariable()).
		WithVariable(categoryVariable()).
		WithVariable(sessionVariable()).
		Annotation(definitionChangeAnnotations()).
		WithVariable(customVariable("min_calls", "Min calls",
			"Smallest number of non-failed calls an argument value needs to be listed under empty results.",
			"1,5,10,20,50,100", "5")).
		WithVariable(chainBoundVariable()).
		WithRow(row(toolRowFailures, "Failures")).
		WithPanel(timeSeriesPanel(toolByCategory, "Calls by category",
			"This tool's calls per second by category, OK and EMPTY_RESULT included, stacked. The failure categories say what to fix: INVALID_ARGUMENT the schema or description, UNAUTHENTICATED/PERMISSION_DENIED credentials, RATE_LIMITED/UPSTREAM_TIMEOUT/UNAVAILABLE capacity or dependencies.",
			panelSQL("calls_by_category")).
			Interval(rollupInterval).
			Unit(units.RequestsPerSecond).
			Stacking(common.NewStackingConfigBuilder().Mode(common.StackingModeNormal)).
			FillOpacity(40).
			DataLinks(callsDataLinks("Calls of ${tool} in ${__field.labels.category_}",
				callsNarrowing{tool: "${tool:queryparam}", category: "${__field.labels.category_:percentencode}"}))).
		WithPanel(timeSeriesPanel(toolByCode, "Failures by category and code",
			"Failures per second by category and error code (JSON-RPC code, the server's own code, tool_error for isError results, no_response for calls that got no answer). One code taking over usually has one cause in the server's log.",
			panelSQL("failures_by_code")).
			Interval(rollupInterval).
			Unit(units.RequestsPerSecond).
			DataLinks(callsDataLinks("Calls of ${tool} in ${__field.labels.category_}",
				callsNarrowing{tool: "${tool:queryparam}", category: "${__field.labels.category_:percentencode}"}))).
		WithRow(row(toolRowRetries, "Retries")).
		WithPanel(tablePanel(toolRetryOutcomes, "Retry outcomes by category and retryability",
			"Retry chains of this tool by the first call's category, the retryability the server declared and the one the taxonomy expects. Declared 'no' but recovering chains, or declared 'yes' with a low recovered share, mean the server advertises the wrong retry advice: change its error data, or add a classification rule override.",
			panelSQL("retry_outcomes")).
			OverrideByName("recovered_share", []dashboard.DynamicConfigValue{override("unit", units.PercentUnit)}).
			Links(linkList(dashboardLink("Retries & misclassification", RetriesUID)))).
		WithPanel(tablePanel(toolRecalls, "Unchanged re-calls after failures",
			"Failed calls of this tool, those followed within 60 s by another call, and those whose next call had identical arguments. An unchanged rate above 50 % means the error text does not tell the model what to change: make the message say which argument is wrong and what is allowed. with_retry_after_n counts the failures that carried the server's retry-after hint, before_retry_after_n those called again before it had passed: clients that do not wait as asked keep a rate limit saturated.",
			panelSQL("recalls")).
			OverrideByName("unchanged_rate", []dashboard.DynamicConfigValue{
				override("unit", units.PercentUnit),
				override("custom.cellOptions", map[string]any{"type": "color-background", "mode": "basic"}),
			}).
			Thresholds(thresholds("green", 0.2, "yellow", 0.5, "red"))).
		WithRow(row(toolRowArguments, "Arguments and messages")).
		WithPanel(tablePanel(toolEmptyByArg, "Empty results by argument value",
			"Per argument key=value, the share of this tool's non-failed calls that found nothing (min_calls applies). A value far above its siblings is usually misspelled or renamed: list the allowed values in the tool's schema (enum) or description.",
			panelSQL("empty_by_argument")).
			OverrideByName("arg_value", []dashboard.DynamicConfigValue{emptyCallsLinks()}).
			OverrideByName("empty_rate", []dashboard.DynamicConfigValue{
				override("unit", units.PercentUnit),
				override("custom.cellOptions", map[string]any{"type": "color-background", "mode": "basic"}),
			}).
			Thresholds(thresholds("green", 0.2, "yellow", 0.5, "red"))).
		WithPanel(tablePanel(toolFailureMessage, "Recent failure messages",
			"The latest distinct failure messages of this tool with their count and sessions. Read them as the model does: if a message does not say what to change, the model repeats the call (see Unchanged re-calls).",
			panelSQL("failure_messages")).
			OverrideByName("failure_message", []dashboard.DynamicConfigValue{override("custom.width", 600)}).
			OverrideByName("category_", []dashboard.DynamicConfigValue{callsLinks("Calls of ${tool} in ${__data.fields.category_}",
				callsNarrowing{tool: "${tool:queryparam}", category: rowValue("category_")})})).
		WithPanel(tablePanel(toolCalls, "Calls",
			"This tool's latest calls, at most 100, newest first, each as its latest ingest stored it: the arguments sent (redacted at ingest), isError as sent, the error code and message that came back, the category mcplens gave it, whether the server's isError contradicts it (misflagged) and the classification rule that decided. Narrow them with Category, Argument value (under the chosen argument keys) and Session (a session in the table opens its calls); the rows of Empty results by argument value and Recent failure messages open this panel narrowed to their calls. GET /api/v1/calls lists every call of a range, page by page.",
			panelSQL("tool_calls")).
			Span(24).
			Height(12).
			OverrideByName("session", []dashboard.DynamicConfigValue{callsLinks("Calls of ${tool} in session ${__data.fields.session}",
				callsNarrowing{tool: "${tool:queryparam}", session: rowValue("session")})}).
			OverrideByName("duration_ms", []dashboard.DynamicConfigValue{override("unit", units.Milliseconds)}).
			OverrideByName("arguments", []dashboard.DynamicConfigValue{override("custom.width", 420)}).
			OverrideByName("message", []dashboard.DynamicConfigValue{override("custom.width", 420)}))
}

// callsNarrowing is what a link to the drilldown's Calls panel sets: the
// tool (a query parameter: "${tool:queryparam}" or rowParam's), and the
// narrowing variables, each a URL value. One left empty is reset (All, or
// an empty text box), so that no filter of an earlier visit narrows the
// list the link promises.
type callsNarrowing struct {
	tool, category, argKey, argValue, session string
}

// callsLinks makes a table column open the drilldown's Calls panel with the
// same time range, tenants and servers, narrowed by n.
func callsLinks(title string, n callsNarrowing) dashboard.DynamicConfigValue {
	return override("links", []map[string]any{{"title": title, "url": callsURL(n)}})
}

// callsDataLinks is callsLinks for a time series: a point of a series
// opens the Calls panel narrowed by n (a series' labels are
// ${__field.labels.<column>}).
func callsDataLinks(title string, n callsNarrowing) []cog.Builder[dashboard.DashboardLink] {
	return linkList(dashboard.NewDashboardLinkBuilder(title).Type(dashboard.DashboardLinkTypeLink).Url(callsURL(n)))
}

// callsURL is the drilldown's Calls panel narrowed by n.
func callsURL(n callsNarrowing) string {
	all := func(v string) string {
		if v == "" {
			return "$__all"
		}
		return v
	}
	return toolDrilldownURL(toolCalls) + "&" + n.tool +
		"&var-category=" + all(n.category) + "&var-arg_key=" + all(n.argKey) +
		"&var-arg_value=" + n.argValue + "&var-session=" + n.session
}

// rowValue is the clicked row's value of column, percent-encoded as
// Grafana encodes variables in URLs.
func rowValue(column string) string { return "${__data.fields." + column + ":percentencode}" }

// rowTool sets the tool variable to the clicked row's column.
func rowTool(column string) string { return "var-tool=" + rowValue(column) }
