package dashboards

import (
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/units"
)

// Panel ids of Empty results.
const (
	emptyRowByTool     = 500
	emptyRateOverTime  = 501
	emptyByTool        = 502
	emptyRowByArgument = 510
	emptyByArgument    = 511
)

// EmptyResults is where tools run fine and find nothing: the empty-result
// rate by tool and by query condition (argument key=value), above a
// minimum volume.
func EmptyResults() *dashboard.DashboardBuilder {
	return newDashboard(EmptyResultsUID, "mcplens / Empty results",
		"Empty-result rate (EMPTY_RESULT among non-failed calls) by tool and by query condition (argument key=value), with a minimum-volume floor. Empty results look like successes to clients; a high rate on one argument value usually means a misspelled or renamed value.").
		WithVariable(datasourceVariable()).
		WithVariable(filterVariable("tenant", "Tenant", "Tenants to include (All: no filter).")).
		WithVariable(filterVariable("server", "Server", "MCP servers to include (All: no filter).", "tenant")).
		WithVariable(filterVariable("tool", "Tool", "Tools to include (All: no filter).", "tenant", "server")).
		WithVariable(argKeyVariable()).
		WithVariable(customVariable("min_calls", "Min calls",
			"Smallest number of non-failed calls a tool, interval or argument value needs to be shown: keeps one empty call out of two from reading as 50 %.",
			"1,5,10,20,50,100", "20")).
		WithRow(row(emptyRowByTool, "By tool")).
		WithPanel(timeSeriesPanel(emptyRateOverTime, "Empty-result rate by tool",
			"Per interval (at least an hour, so that the floor means something), the share of each tool's non-failed calls that found nothing; intervals with fewer than min_calls such calls are left out. A step up after a data change or deploy is the signal; the same test over 1 h against the previous 7 days is the MCPEmptyResultSpike alert.",
			panelSQL("empty_rate_over_time")).
			Interval("1h").
			Unit(units.PercentUnit).Min(0).Max(1)).
		WithPanel(tablePanel(emptyByTool, "Empty-result rate per tool",
			"Over the range, EMPTY_RESULT as a share of each tool's non-failed calls (min_calls applies). Tools at the top either search data that is missing or receive conditions that match nothing: look at their argument values below.",
			panelSQL("empty_by_tool")).
			OverrideByName("tool_name", []dashboard.DynamicConfigValue{toolLinks()}).
			OverrideByName("empty_rate", []dashboard.DynamicConfigValue{
				override("unit", units.PercentUnit),
				override("custom.cellOptions", map[string]any{"type": "color-background", "mode": "basic"}),
			}).
			Thresholds(thresholds("green", 0.2, "yellow", 0.5, "red"))).
		WithRow(row(emptyRowByArgument, "By query condition")).
		WithPanel(tablePanel(emptyByArgument, "Empty-result rate by query condition",
			"Per tool and argument key=value, the non-failed calls and the share that came back empty (min_calls applies; the argument key filter narrows it). A value far above its siblings (department=finace next to department=finance) is a misspelling or a renamed value: add an enum to the schema or normalise the value in the tool.",
			panelSQL("empty_by_argument")).
			OverrideByName("tool_name", []dashboard.DynamicConfigValue{toolLinks()}).
			OverrideByName("arg_value", []dashboard.DynamicConfigValue{emptyCallsLinks()}).
			Span(24).
			OverrideByName("empty_rate", []dashboard.DynamicConfigValue{
				override("unit", units.PercentUnit),
				override("custom.cellOptions", map[string]any{"type": "color-background", "mode": "basic"}),
			}).
			Thresholds(thresholds("green", 0.2, "yellow", 0.5, "red")))
}

// emptyCallsLinks makes an empty-results row's argument value open the
// tool drilldown's Calls panel on the calls that came back empty with it.
func emptyCallsLinks() dashboard.DynamicConfigValue {
	return callsLinks("Empty calls of ${__data.fields.tool_name} with ${__data.fields.arg_key}=${__data.fields.arg_value}",
		callsNarrowing{tool: rowTool("tool_name"), category: "EMPTY_RESULT", argKey: rowValue("arg_key"), argValue: rowValue("arg_value")})
}

// argKeyVariable lists the argument keys of the selected tools.
func argKeyVariable() *dashboard.QueryVariableBuilder {
	sql := `SELECT DISTINCT k AS arg_key_value
FROM calls
ARRAY JOIN arg_keys AS k
WHERE $__timeFilter(ts)
  AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
  AND $__conditionalAll(server IN (${server:singlequote}), $server)
  AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
ORDER BY arg_key_value`
	return dashboard.NewQueryVariableBuilder("arg_key").
		Label("Argument key").
		Description("Argument keys to include (All: every key).").
		Datasource(clickHouseVar).
		Query(dashboard.StringOrMap{Map: map[string]any{"editorType": "sql", "rawSql": sql}}).
		Definition(sql).
		Refresh(dashboard.VariableRefreshOnTimeRangeChanged).
		Sort(dashboard.VariableSortAlphabeticalAsc).
		Multi(true).
		IncludeAll(true).
		Current(allOption())
}
