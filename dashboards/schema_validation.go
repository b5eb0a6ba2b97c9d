package dashboards

import (
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/expr"
	"github.com/grafana/grafana-foundation-sdk/go/units"
)

// Panel ids of the schema validation rows of Schema quality.
const (
	schemaRowValidation     = 420
	schemaViolationPaths    = 421
	schemaViolationsOutcome = 422
	schemaDefinitionChanges = 423
)

// withSchemaValidation adds to Schema quality what tool definitions make
// possible (docs/schemas.md): the argument and result paths that fail their
// tool's schema, whether servers refused or accepted such calls, the
// definition changes, and a marker per change on the charts.
func withSchemaValidation(b *dashboard.DashboardBuilder) *dashboard.DashboardBuilder {
	return b.
		Annotation(definitionChangeAnnotations()).
		WithRow(row(schemaRowValidation, "Schema validation (tools/list definitions)")).
		WithPanel(tablePanel(schemaViolationPaths, "Top violated argument and result paths",
			"Paths at which calls failed their tool's schema, from the definition in force at each call's time (tools/list captures or POST /v1/tools): missing required properties, wrong types, values not in an enum (with the nearest allowed value when the model slipped, e.g. finace for finance), out-of-range numbers, undeclared properties; side result means structuredContent that breaks the outputSchema. accepted_calls are calls the server answered without failing: it accepted input its own schema rules out, so fix the server's validation; refused_calls got INVALID_ARGUMENT: make the schema and description say what is allowed.",
			panelSQL("schema_violation_paths")).
			OverrideByName("tool_name", []dashboard.DynamicConfigValue{toolLinks()}).
			OverrideByName("violation_share", []dashboard.DynamicConfigValue{
				override("unit", units.PercentUnit),
				override("custom.cellOptions", map[string]any{"type": "color-background", "mode": "basic"}),
			}).
			Thresholds(thresholds("green", 0.01, "yellow", 0.05, "red"))).
		WithPanel(timeSeriesPanel(schemaViolationsOutcome, "Schema-violating calls by outcome",
			"Calls per interval whose arguments or structured result failed the tool's schema, by what the server did: refused the arguments (INVALID_ARGUMENT), accepted them (the call did not fail, so bad input got through), failed otherwise, or returned structured content that breaks its outputSchema. A jump right after a definition change marker means the new schema rules out what models send.",
			panelSQL("schema_violations_over_time")).
			Unit(units.Short).
			DrawStyle(common.GraphDrawStyleBars).
			Stacking(common.NewStackingConfigBuilder().Mode(common.StackingModeNormal))).
		WithPanel(tablePanel(schemaDefinitionChanges, "Tool definition changes",
			"Each time a tool's definition changed in the range (a new hash of its tools/list entry, or a return to an older one), with the previous and new definition hashes; GET /api/v1/tools has the versions in full. Compare the INVALID_ARGUMENT share and the violated paths before and after a change.",
			panelSQL("tool_definition_changes")).
			OverrideByName("tool_name", []dashboard.DynamicConfigValue{toolLinks()}))
}

// definitionChangeAnnotations marks every tool definition change of the
// selected tenants, servers and tools on the dashboard's time-series charts.
func definitionChangeAnnotations() *dashboard.AnnotationQueryBuilder {
	return dashboard.NewAnnotationQueryBuilder().
		Name("Tool definition changes").
		Datasource(clickHouseVar).
		Enable(true).
		IconColor("orange").
		Target(chQuery(panelSQL("definition_change_annotations"), FormatTable))
}

// schemaValidationRules are the alert rules on tool definitions
// (docs/alerts.md).
func schemaValidationRules() []AlertRule {
	return []AlertRule{{
		UID: "mcplens-definition-change-invalid-args", Title: "MCPDefinitionChangeInvalidArguments", Group: groupBaselines,
		SQLFile: "definition_change_invalid_arguments", RangeSeconds: 2 * day,
		Reducer: expr.TypeReduceReducerLast, Threshold: expr.ExprTypeThresholdConditionsEvaluatorTypeGte, Value: 2,
		For: "5m", Severity: "warning", Area: "schema",
		Summary:      `{{ $labels.tool_name }}: INVALID_ARGUMENT share {{ printf "%.1f" $values.B.Value }}x what it was before its definition changed (1000: none before)`,
		Description:  "This tool's definition (its tools/list entry) changed in the last 24 hours, and since then at least 20 calls came in, at least 5 % of them rejected as invalid arguments, at least twice the share of the 24 hours before the change. The new schema or description rules out what models send: look at the top violated paths and the suggested values, then accept the old form again, or say the new one in the description and enum.",
		DashboardUID: SchemaQualityUID, PanelID: schemaViolationPaths, PanelVars: toolVars,
	}}
}
