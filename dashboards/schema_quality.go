package dashboards

import (
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/units"
)

// Panel ids of Schema quality.
const (
	schemaRowInvalid      = 400
	schemaInvalidSpikes   = 401
	schemaInvalidByTool   = 402
	schemaTopArgs         = 403
	schemaRowUnknown      = 410
	schemaUnknownTools    = 411
	schemaUnknownOverTime = 412
)

// SchemaQuality is how well models use the tools' schemas: INVALID_ARGUMENT
// shares and spikes per tool, the argument values behind them, calls to
// tools that do not exist, and (schema_validation.go) the paths that fail
// the tools' own schemas, with definition changes marked on the charts.
func SchemaQuality() *dashboard.DashboardBuilder {
	return withSchemaValidation(newDashboard(SchemaQualityUID, "mcplens / Schema quality",
		"INVALID_ARGUMENT share per tool with spikes marked, the argument keys and values models get wrong, and UNKNOWN_TOOL calls (hallucinated or stale tool names).").
		WithVariable(datasourceVariable()).
		WithVariable(filterVariable("tenant", "Tenant", "Tenants to include (All: no filter).")).
		WithVariable(filterVariable("server", "Server", "MCP servers to include (All: no filter).", "tenant")).
		WithVariable(filterVariable("tool", "Tool", "Tools to include (All: no filter).", "tenant", "server")).
		WithVariable(customVariable("min_calls", "Min calls",
			"Smallest number of calls a tool needs to be listed in the share table.",
			"1,5,10,20,50,100", "20")).
		WithVariable(rollupBoundVariable()).
		WithVariable(argsBoundVariable()).
		WithRow(row(schemaRowInvalid, "INVALID_ARGUMENT")).
		WithPanel(timeSeriesPanel(schemaInvalidSpikes, "INVALID_ARGUMENT share per tool (hourly), spikes marked",
			"Hourly share of each tool's calls rejected as invalid arguments; large dots mark spikes (at least 20 calls, at least 5 %, and at least 3 times the tool's share over the previous 7 days), the same test as the MCPInvalidArgumentSpike alert. A spike right after a deploy means the new schema or description confuses models: compare it with the previous version and check the top offending values below.",
			panelSQL("invalid_argument_spikes")).
			Unit(units.PercentUnit).Min(0).
			Span(24).
			OverrideByRegexp("^spike", []dashboard.DynamicConfigValue{
				override("custom.drawStyle", "points"),
				override("custom.pointSize", 12),
				override("color", map[string]any{"mode": "fixed", "fixedColor": "red"}),
				override("custom.hideFrom", map[string]any{"legend": true, "tooltip": false, "viz": false}),
			})).
		WithPanel(tablePanel(schemaInvalidByTool, "INVALID_ARGUMENT share per tool",
			"Over the whole range, the share of each tool's calls rejected as invalid arguments (tools with fewer than min_calls calls left out). Tools at the top need clearer parameter names, enums and examples in their schema.",
			panelSQL("invalid_argument_by_tool")).
			OverrideByName("tool_name", []dashboard.DynamicConfigValue{toolLinks()}).
			OverrideByName("invalid_share", []dashboard.DynamicConfigValue{
				override("unit", units.PercentUnit),
				override("custom.cellOptions", map[string]any{"type": "color-background", "mode": "basic"}),
			}).
			Thresholds(thresholds("green", 0.05, "yellow", 0.15, "red"))).
		WithPanel(tablePanel(schemaTopArgs, "Top offending argument keys and values",
			"The key=value pairs most often sent with INVALID_ARGUMENT calls, ten per tool. A value that is not in the schema (a renamed enum, a wrong format) tells you what to document or accept.",
			panelSQL("invalid_argument_top_args")).
			OverrideByName("tool_name", []dashboard.DynamicConfigValue{toolLinks()}).
			OverrideByName("arg_value", []dashboard.DynamicConfigValue{callsLinks("INVALID_ARGUMENT calls of ${__data.fields.tool_name} with ${__data.fields.arg_key}=${__data.fields.arg_value}",
				callsNarrowing{tool: rowTool("tool_name"), category: "INVALID_ARGUMENT", argKey: rowValue("arg_key"), argValue: rowValue("arg_value")})})).
		WithRow(row(schemaRowUnknown, "UNKNOWN_TOOL")).
		WithPanel(tablePanel(schemaUnknownTools, "Unknown tool names",
			"Tool names called on a server that does not have them: hallucinated names or names from an old tool list. If one name recurs, add it as an alias, or make sure clients refresh tools/list after a rename. GET /api/v1/unknown-tools gives each name a verdict (removed from the list, prefixed, misspelled, invented...) and the real tool it was most likely meant to be.",
			panelSQL("unknown_tools")).
			OverrideByName("requested_tool", []dashboard.DynamicConfigValue{callsLinks("Calls of ${__data.fields.requested_tool}",
				callsNarrowing{tool: rowTool("requested_tool"), category: "UNKNOWN_TOOL"})})).
		WithPanel(timeSeriesPanel(schemaUnknownOverTime, "UNKNOWN_TOOL calls by server",
			"UNKNOWN_TOOL calls per interval and server. A jump right after a deploy means a tool was renamed or removed while clients still use the old list.",
			panelSQL("unknown_tools_over_time")).
			Interval(rollupInterval).
			Unit(units.Short).
			DrawStyle(common.GraphDrawStyleBars)))
}
