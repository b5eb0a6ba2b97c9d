package dashboards

import (
	"fmt"
	"strings"

	"github.com/grafana/grafana-foundation-sdk/go/alerting"
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/expr"
)

// AlertFolder is the Grafana folder (title) the provisioned rules go into.
const AlertFolder = "mcplens"

// RunbookBase is where the runbook sections of docs/alerts.md are served.
const RunbookBase = "https://github.com/mcplens/mcplens/blob/main/docs/alerts.md"

// AlertRule is one Grafana-managed alert rule on ClickHouse: a table-format
// query (string columns become labels, one numeric column is the value),
// reduced with Reducer and compared with Threshold. The query runs over
// [now - RangeSeconds, now]; alert queries get no template variables, so
// their SQL uses only the plugin's backend macros.
type AlertRule struct {
	UID          string
	Title        string
	Group        string
	SQLFile      string // alerts/<SQLFile>.sql
	RangeSeconds int64
	Reducer      expr.TypeReduceReducer
	Threshold    expr.ExprTypeThresholdConditionsEvaluatorType
	Value        float64
	For          string
	Severity     string
	Area         string
	Summary      string // Go template over $labels and $values
	Description  string // what it means and what to do
	DashboardUID string
	PanelID      uint32
	PanelVars    string // extra query parameters of the panel link, templated
}

// Rule groups and their evaluation intervals. The rules over the last hour
// or less run every minute; those that compare it with days of history (the
// spike rules' 7-day baselines, the definition-change rule's two days) every
// 5 minutes, as the classification rules over 24 hours do: their signal
// moves on the scale of the hour, and each evaluation costs 0.25-0.5 s of
// ClickHouse on 18.16 at 10M calls a week with the baselines' days folded
// (0.45-2 s without), where the 1-hour rules cost 0.015-0.04 s
// (BENCHMARKS.md, fifteenth to seventeenth rounds).
const (
	groupClassification = "mcplens-classification"
	groupTools          = "mcplens-tools"
	groupBaselines      = "mcplens-baselines"
)

var groupIntervals = map[string]int64{groupClassification: 300, groupTools: 60, groupBaselines: 300}

const (
	day       = 86400
	hour      = 3600
	spikeSpan = 7*day + hour
	// faultSpan is MCPToolFaultRate's range: short, so that the rule fires
	// within minutes of a fault and resolves soon after it clears.
	faultSpan = 15 * 60
)

const (
	serverVars = "&var-tenant={{ $labels.tenant_name }}&var-server={{ $labels.server_name }}"
	toolVars   = serverVars + "&var-tool={{ $labels.tool_name }}"
)

// AlertRules returns the Grafana alert rules, in provisioning order. The
// thresholds and minimum volumes are those of the analytics
// (docs/analytics.md); docs/alerts.md has a runbook section per rule.
func AlertRules() []AlertRule {
	return append([]AlertRule{
		{
			UID: "mcplens-retryable-never-recovers", Title: "MCPRetryableNeverRecovers", Group: groupClassification,
			SQLFile: "retryable_never_recovers", RangeSeconds: day,
			Reducer: expr.TypeReduceReducerLast, Threshold: expr.ExprTypeThresholdConditionsEvaluatorTypeLt, Value: 0.1,
			For: "15m", Severity: "warning", Area: "classification",
			Summary:      "{{ $labels.tool_name }} {{ $labels.category_name }}: retryable, but only {{ humanizePercentage $values.B.Value }} of retried chains recover",
			Description:  "Calls of this tool and category are declared or expected retryable, yet fewer than 10 % of at least 5 retried chains in the last 24 h ended in success. Clients waste retries on a fault that does not clear. Stop declaring it retryable (error data), or reclassify it with a rules override; if the upstream is down, fix that first.",
			DashboardUID: RetriesUID, PanelID: retriesMisclassified,
		},
		{
			UID: "mcplens-non-retryable-recovers", Title: "MCPNonRetryableRecovers", Group: groupClassification,
			SQLFile: "non_retryable_recovers", RangeSeconds: day,
			Reducer: expr.TypeReduceReducerLast, Threshold: expr.ExprTypeThresholdConditionsEvaluatorTypeGte, Value: 0.5,
			For: "15m", Severity: "warning", Area: "classification",
			Summary:      "{{ $labels.tool_name }} {{ $labels.category_name }}: not retryable, yet {{ humanizePercentage $values.B.Value }} of same-argument retries succeed",
			Description:  "Calls of this tool and category are declared or expected not retryable, but at least half of at least 5 chains retried with unchanged arguments in the last 24 h succeeded: the fault is transient. Declare it retryable (with a retry-after hint), or reclassify the error text with a rules override, so that clients that obey the advice stop giving up.",
			DashboardUID: RetriesUID, PanelID: retriesMisclassified,
		},
		{
			UID: "mcplens-retried-non-retryable", Title: "MCPRetriedNonRetryable", Group: groupClassification,
			SQLFile: "retried_non_retryable", RangeSeconds: day,
			Reducer: expr.TypeReduceReducerLast, Threshold: expr.ExprTypeThresholdConditionsEvaluatorTypeGte, Value: 5,
			For: "15m", Severity: "info", Area: "classification",
			Summary:      "{{ $labels.tool_name }} {{ $labels.category_name }}: {{ $values.B.Value }} chains retried unchanged although not retryable",
			Description:  "Clients retried, with the same arguments, calls that the taxonomy says cannot succeed that way (at least 5 chains in 24 h). Make the error say what must change (which argument, which value is allowed) and mark it not retryable, so that agents correct the call instead of repeating it.",
			DashboardUID: RetriesUID, PanelID: retriesMisclassified,
		},
		{
			UID: "mcplens-misflagged", Title: "MCPMisflagged", Group: groupClassification,
			SQLFile: "misflagged", RangeSeconds: day,
			Reducer: expr.TypeReduceReducerLast, Threshold: expr.ExprTypeThresholdConditionsEvaluatorTypeGte, Value: 5,
			For: "15m", Severity: "info", Area: "classification",
			Summary:      "{{ $labels.tool_name }} {{ $labels.category_name }}: {{ $values.B.Value }} calls with an isError flag that contradicts the category",
			Description:  "At least 5 calls of this tool and category in 24 h carry an isError flag that contradicts their category: failures sent as successes, or successes flagged as errors. Fix the server to set isError on failures only; if the classification is what is wrong, add a rules override.",
			DashboardUID: RetriesUID, PanelID: retriesMisflagged,
		},
		{
			UID: "mcplens-invalid-argument-spike", Title: "MCPInvalidArgumentSpike", Group: groupBaselines,
			SQLFile: "invalid_argument_spike", RangeSeconds: spikeSpan,
			Reducer: expr.TypeReduceReducerLast, Threshold: expr.ExprTypeThresholdConditionsEvaluatorTypeGte, Value: 3,
			For: "5m", Severity: "warning", Area: "schema",
			Summary:      `{{ $labels.tool_name }}: INVALID_ARGUMENT share {{ printf "%.1f" $values.B.Value }}x its 7-day baseline (1000: none before); its schema or description is confusing models`,
			Description:  "In the last hour this tool had at least 20 calls, at least 5 % of them rejected as invalid arguments, and at least 3 times its INVALID_ARGUMENT share of the previous 7 days. A tool's schema or description is confusing models: check what changed (deploy, schema, description, client model), look at the top offending argument values, and make the schema say what is allowed (enums, formats, examples).",
			DashboardUID: SchemaQualityUID, PanelID: schemaInvalidSpikes, PanelVars: toolVars,
		},
		{
			UID: "mcplens-hidden-failures", Title: "MCPHiddenFailures", Group: groupTools,
			SQLFile: "hidden_failures", RangeSeconds: hour,
			Reducer: expr.TypeReduceReducerLast, Threshold: expr.ExprTypeThresholdConditionsEvaluatorTypeGte, Value: 10,
			For: "5m", Severity: "warning", Area: "errors",
			Summary:      "{{ $labels.tool_name }}: {{ $values.B.Value }} failures sent as successes in the last hour",
			Description:  "At least 10 calls of this tool failed in the last hour but were sent with isError false or absent, so clients treat them as successes and neither retry nor correct them. Fix the server to return isError: true (or a JSON-RPC error) for these failures; the tool drilldown's failure messages show which.",
			DashboardUID: RetriesUID, PanelID: retriesMisflagged, PanelVars: toolVars,
		},
		{
			UID: "mcplens-tool-fault-rate", Title: "MCPToolFaultRate", Group: groupTools,
			SQLFile: "tool_fault_rate", RangeSeconds: faultSpan,
			Reducer: expr.TypeReduceReducerLast, Threshold: expr.ExprTypeThresholdConditionsEvaluatorTypeGte, Value: 0.05,
			For: "5m", Severity: "warning", Area: "errors",
			Summary:      "{{ $labels.tool_name }}: {{ humanizePercentage $values.B.Value }} of calls failed on the server's side (rate limit, timeout, unavailable, internal) in the last 15 minutes",
			Description:  "In the last 15 minutes this tool had at least 20 calls and at least 5 % of them failed with RATE_LIMITED, UPSTREAM_TIMEOUT, UNAVAILABLE or INTERNAL: faults on the server's side that a retry may clear, or a bug. Failures by category and code shows which and since when; a point of it opens the calls with their messages. Timeouts and unavailability: check the upstream and the connection pool; rate limits: the quota, and whether clients back off; INTERNAL: the server's logs and the last deploy.",
			DashboardUID: ToolUID, PanelID: toolByCode, PanelVars: toolVars,
		},
		{
			UID: "mcplens-unchanged-recalls", Title: "MCPUnchangedRecalls", Group: groupTools,
			SQLFile: "unchanged_recalls", RangeSeconds: hour,
			Reducer: expr.TypeReduceReducerLast, Threshold: expr.ExprTypeThresholdConditionsEvaluatorTypeGte, Value: 0.5,
			For: "5m", Severity: "warning", Area: "errors",
			Summary:      "{{ $labels.tool_name }}: {{ humanizePercentage $values.B.Value }} of failures are re-called with unchanged arguments; its error text is not actionable",
			Description:  "In the last hour at least 20 calls of this tool failed and at least half were followed within 60 s by the same call with identical arguments. The error text is not actionable: the model cannot tell what to change. Rewrite the tool's error messages to name the wrong argument and the allowed values, or mark transient errors retryable with a retry-after hint.",
			DashboardUID: ToolUID, PanelID: toolRecalls, PanelVars: toolVars,
		},
		{
			UID: "mcplens-retry-loop", Title: "MCPRetryLoop", Group: groupTools,
			SQLFile: "retry_loop", RangeSeconds: hour,
			Reducer: expr.TypeReduceReducerLast, Threshold: expr.ExprTypeThresholdConditionsEvaluatorTypeGte, Value: 20,
			For: "5m", Severity: "warning", Area: "errors",
			Summary:      "{{ $labels.tool_name }}: a session called it {{ $values.B.Value }} times in one retry loop in the last hour",
			Description:  "A session called this tool at least 20 times in one retry chain started in the last hour, each call at most 60 s after a failed one: an agent or retry layer stuck in a loop, burning quota and the server's capacity. Retries → Retry loops names the session and client and whether the arguments ever changed (the same call again and again: nothing tells the agent to stop; changed arguments: the model guessing). Cap the client's retries, make the error say what to change or mark it not retryable, and for rate limits send a retry-after hint the client honours.",
			DashboardUID: RetriesUID, PanelID: retriesLoops, PanelVars: toolVars,
		},
		{
			UID: "mcplens-retry-after-ignored", Title: "MCPRetryAfterIgnored", Group: groupTools,
			SQLFile: "retry_after_ignored", RangeSeconds: hour,
			Reducer: expr.TypeReduceReducerLast, Threshold: expr.ExprTypeThresholdConditionsEvaluatorTypeGte, Value: 0.5,
			For: "5m", Severity: "warning", Area: "errors",
			Summary:      "{{ $labels.tool_name }}: {{ humanizePercentage $values.B.Value }} of failures with a retry-after hint are called again before it has passed",
			Description:  "In the last hour at least 20 failed calls of this tool carried the server's retry-after hint, and at least half of them were followed by another call of the tool in the same session within 60 s and before the hint had passed. Clients do not wait as the server asks, which keeps a rate limit or an exhausted pool saturated. Make the client (or the agent framework's retry policy) honour retryAfter; check that the server sends it where clients read it (structuredContent, _meta or the JSON-RPC error data).",
			DashboardUID: ToolUID, PanelID: toolRecalls, PanelVars: toolVars,
		},
		{
			UID: "mcplens-unknown-tool-calls", Title: "MCPUnknownToolCalls", Group: groupTools,
			SQLFile: "unknown_tool_calls", RangeSeconds: hour,
			Reducer: expr.TypeReduceReducerLast, Threshold: expr.ExprTypeThresholdConditionsEvaluatorTypeGte, Value: 10,
			For: "5m", Severity: "warning", Area: "errors",
			Summary:      "{{ $labels.server_name }}: {{ $values.B.Value }} calls of the unknown tool {{ $labels.tool_name }} in the last hour",
			Description:  "At least 10 calls in the last hour asked this server for a tool it does not have (UNKNOWN_TOOL). A client works from a stale tool list (a tool renamed or removed) or a model invents the name; retrying cannot help. Find the clients (the Calls panel's sessions), make them list tools again, and if the name was renamed, keep the old name as an alias for a while; if models invent it, say in the real tool's description what it is for.",
			DashboardUID: SchemaQualityUID, PanelID: schemaUnknownTools, PanelVars: serverVars,
		},
		{
			UID: "mcplens-empty-result-spike", Title: "MCPEmptyResultSpike", Group: groupBaselines,
			SQLFile: "empty_result_spike", RangeSeconds: spikeSpan,
			Reducer: expr.TypeReduceReducerLast, Threshold: expr.ExprTypeThresholdConditionsEvaluatorTypeGte, Value: 3,
			For: "5m", Severity: "warning", Area: "results",
			Summary:      `{{ $labels.tool_name }}: empty-result rate {{ printf "%.1f" $values.B.Value }}x its 7-day baseline (1000: none before)`,
			Description:  "In the last hour this tool had at least 20 non-failed calls, at least 20 % of them came back empty, and that rate is at least 3 times the previous 7 days'. Either the data behind the tool went missing (check the index or upstream) or models send conditions that match nothing: the Empty results dashboard shows which argument values.",
			DashboardUID: EmptyResultsUID, PanelID: emptyRateOverTime, PanelVars: toolVars,
		},
	}, schemaValidationRules()...)
}

// PanelURL is the rule's link to its dashboard panel.
func (r AlertRule) PanelURL() string {
	return fmt.Sprintf("/d/%s?viewPanel=%d%s", r.DashboardUID, r.PanelID, r.PanelVars)
}

// RunbookURL is the rule's section of docs/alerts.md.
func (r AlertRule) RunbookURL() string { return RunbookBase + "#" + strings.ToLower(r.Title) }

// SQL returns the rule's query text.
func (r AlertRule) SQL() string { return alertSQL(r.SQLFile) }

var exprRef = common.DataSourceRef{Type: cog.ToPtr("__expr__"), Uid: cog.ToPtr("__expr__")}

// builder returns the SDK rule: A the ClickHouse query, B the reduction, C
// the threshold on B. The panel link is also carried the way the HTTP
// provisioning API expects it, as the __dashboardUid__ and __panelId__
// annotations.
func (r AlertRule) builder() *alerting.RuleBuilder {
	chRef := common.DataSourceRef{Type: cog.ToPtr(ClickHousePluginID), Uid: cog.ToPtr(ClickHouseDatasourceUID)}
	return alerting.NewRuleBuilder(r.Title).
		Uid(r.UID).
		RuleGroup(r.Group).
		FolderUID(AlertFolder).
		OrgID(1).
		Condition("C").
		For(r.For).
		NoDataState(alerting.RuleNoDataStateOK).
		ExecErrState(alerting.RuleExecErrStateError).
		Labels(map[string]string{"service": "mcplens", "severity": r.Severity, "area": r.Area}).
		Annotations(map[string]string{
			"summary":          r.Summary,
			"description":      r.Description,
			"runbook_url":      r.RunbookURL(),
			"dashboard_panel":  r.PanelURL(),
			"__dashboardUid__": r.DashboardUID,
			"__panelId__":      fmt.Sprint(r.PanelID),
		}).
		WithQuery(alerting.NewQueryBuilder("A").
			DatasourceUid(ClickHouseDatasourceUID).
			QueryType("table").
			RelativeTimeRange(alerting.Duration(r.RangeSeconds), alerting.Duration(0)).
			Model(clickHouseBuilder{q: chTarget("A", r.SQL(), FormatTable, chRef)})).
		WithQuery(alerting.NewQueryBuilder("B").
			DatasourceUid("__expr__").
			Model(expr.NewExprBuilder().TypeReduce(expr.NewTypeReduceBuilder().
				RefId("B").
				Datasource(exprRef).
				Expression("A").
				Reducer(r.Reducer)))).
		WithQuery(alerting.NewQueryBuilder("C").
			DatasourceUid("__expr__").
			Model(expr.NewExprBuilder().TypeThreshold(expr.NewTypeThresholdBuilder().
				RefId("C").
				Datasource(exprRef).
				Expression("B").
				Conditions([]cog.Builder[expr.ExprTypeThresholdConditions]{
					expr.NewExprTypeThresholdConditionsBuilder().Evaluator(
						expr.NewExprTypeThresholdConditionsEvaluatorBuilder().
							Type(r.Threshold).
							Params([]float64{r.Value})),
				}))))
}

// RuleGroups builds the rules into SDK rule groups, the body of Grafana's
// HTTP provisioning API (PUT /api/v1/provisioning/folder/:uid/rule-groups/:group).
func RuleGroups() ([]alerting.RuleGroup, error) {
	var order []string
	byGroup := map[string]*alerting.RuleGroupBuilder{}
	for _, r := range AlertRules() {
		g, ok := byGroup[r.Group]
		if !ok {
			g = alerting.NewRuleGroupBuilder(r.Group).FolderUid(AlertFolder).Interval(alerting.Duration(groupIntervals[r.Group]))
			byGroup[r.Group] = g
			order = append(order, r.Group)
		}
		g.WithRule(r.builder())
	}
	out := make([]alerting.RuleGroup, 0, len(order))
	for _, name := range order {
		g, err := byGroup[name].Build()
		if err != nil {
			return nil, fmt.Errorf("rule group %s: %w", name, err)
		}
		out = append(out, g)
	}
	return out, nil
}
