package dashboards

import (
	"embed"
	"fmt"
	"strconv"
	"strings"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/table"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
	"github.com/mcplens/mcplens/pipeline/classify"
)

//go:embed panels/*.sql alerts/*.sql variables/*.sql
var sqlFiles embed.FS

// panelSQL returns panels/<name>.sql. A missing file panics, so every test of
// the package fails on it.
func panelSQL(name string) string { return mustSQL("panels/" + name + ".sql") }

// alertSQL returns alerts/<name>.sql.
func alertSQL(name string) string { return mustSQL("alerts/" + name + ".sql") }

func mustSQL(path string) string {
	b, err := sqlFiles.ReadFile(path)
	if err != nil {
		panic(fmt.Sprintf("dashboards: %v", err))
	}
	return string(b)
}

// Data source references. Panels use the dashboard's data source variables;
// alert rules, which cannot use variables, name the provisioned data sources
// (deploy/grafana/provisioning/datasources/mcplens.yaml).
var (
	clickHouseVar = common.DataSourceRef{Type: cog.ToPtr(ClickHousePluginID), Uid: cog.ToPtr("${datasource}")}
	prometheusVar = common.DataSourceRef{Type: cog.ToPtr("prometheus"), Uid: cog.ToPtr("${prometheus}")}
)

// Provisioned data source UIDs, used by alert rules.
const (
	ClickHouseDatasourceUID = "mcplens-clickhouse"
	PrometheusDatasourceUID = "mcplens-prometheus"
)

// Dashboard UIDs: stable, so that links, alert annotations and bookmarks
// survive regeneration.
const (
	OverviewUID      = "mcplens-overview"
	ToolUID          = "mcplens-tool"
	RetriesUID       = "mcplens-retries"
	SchemaQualityUID = "mcplens-schema-quality"
	EmptyResultsUID  = "mcplens-empty-results"
)

// newDashboard starts a dashboard with the settings every mcplens dashboard
// shares: UTC, last 24 hours, refresh every minute, shared crosshair, links
// to the other dashboards by tag.
func newDashboard(uid, title, description string) *dashboard.DashboardBuilder {
	return dashboard.NewDashboardBuilder(title).
		Uid(uid).
		Description(description).
		Tags([]string{"mcplens"}).
		Timezone(common.TimeZoneUtc).
		Time("now-24h", "now").
		Refresh("1m").
		Tooltip(dashboard.DashboardCursorSyncCrosshair).
		Readonly().
		Link(topBarLink{dashboard.NewDashboardLinkBuilder("mcplens").
			Type(dashboard.DashboardLinkTypeDashboards).
			Tags([]string{"mcplens"}).
			AsDropdown(true).
			IncludeVars(true).
			KeepTime(true).
			Icon("external link").
			Tooltip("The other mcplens dashboards, with the same time range and filters")})
}

// topBarLink builds a dashboard link without the SDK's default placement
// (inControlsMenu, which Grafana 12 tucks into the controls menu), so that
// the link shows in the dashboard's top bar.
type topBarLink struct {
	b *dashboard.DashboardLinkBuilder
}

func (l topBarLink) Build() (dashboard.DashboardLink, error) {
	link, err := l.b.Build()
	link.Placement = nil
	return link, err
}

// datasourceVariable is the ClickHouse data source picker; every ClickHouse
// target uses ${datasource}.
func datasourceVariable() *dashboard.DatasourceVariableBuilder {
	return dashboard.NewDatasourceVariableBuilder("datasource").
		Label("ClickHouse").
		Description("The ClickHouse data source holding the mcplens calls table.").
		Type(ClickHousePluginID)
}

// prometheusVariable is the Prometheus data source picker, for panels on the
// metrics that cmd/api exports.
func prometheusVariable() *dashboard.DatasourceVariableBuilder {
	return dashboard.NewDatasourceVariableBuilder("prometheus").
		Label("Prometheus").
		Description("The Prometheus that scrapes the mcplens api (/metrics).").
		Type("prometheus")
}

// filterVariable is a multi-value query variable over one column of calls
// (tenant, server or tool), narrowed by the variables named in narrowedBy.
// "All" leaves the filter out: panels wrap it in $__conditionalAll.
func filterVariable(name, label, description string, narrowedBy ...string) *dashboard.QueryVariableBuilder {
	sql := distinctSQL(name, narrowedBy...)
	return dashboard.NewQueryVariableBuilder(name).
		Label(label).
		Description(description).
		Datasource(clickHouseVar).
		Query(dashboard.StringOrMap{Map: map[string]any{"editorType": "sql", "rawSql": sql}}).
		Definition(sql).
		Refresh(dashboard.VariableRefreshOnTimeRangeChanged).
		Sort(dashboard.VariableSortAlphabeticalAsc).
		Multi(true).
		IncludeAll(true).
		Current(allOption())
}

// singleToolVariable is the tool picker of the drilldown: one tool, no All.
func singleToolVariable() *dashboard.QueryVariableBuilder {
	sql := distinctSQL("tool", "tenant", "server")
	return dashboard.NewQueryVariableBuilder("tool").
		Label("Tool").
		Description("The tool to drill into.").
		Datasource(clickHouseVar).
		Query(dashboard.StringOrMap{Map: map[string]any{"editorType": "sql", "rawSql": sql}}).
		Definition(sql).
		Refresh(dashboard.VariableRefreshOnTimeRangeChanged).
		Sort(dashboard.VariableSortAlphabeticalAsc)
}

// distinctSQL lists the values of column seen in the range, narrowed by the
// filter variables before it.
func distinctSQL(column string, narrowedBy ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "SELECT DISTINCT toString(%s) AS %s_value\nFROM calls\nWHERE $__timeFilter(ts)", column, column)
	for _, v := range narrowedBy {
		fmt.Fprintf(&b, "\n  AND $__conditionalAll(%s IN (${%s:singlequote}), $%s)", v, v, v)
	}
	fmt.Fprintf(&b, "\nORDER BY %s_value", column)
	return b.String()
}

// boundVariable is a hidden query variable whose query (variables/<name>.sql)
// returns one value that panels use as a constant, e.g. ${chain_bound}:
// Grafana runs it once on load, on every refresh and on every time range
// change, before the panels that use it (refresh "On time range change"),
// instead of each panel running it as a subquery. It is kept out of the URL
// and out of links: Grafana keeps a value taken from the URL through the
// first refresh after load (grafana/scenes MultiValueVariable), so a shared
// link would carry a stale bound into the panels.
func boundVariable(name, description string) boundVar {
	sql := mustSQL("variables/" + name + ".sql")
	return boundVar{dashboard.NewQueryVariableBuilder(name).
		Description(description).
		Datasource(clickHouseVar).
		Query(dashboard.StringOrMap{Map: map[string]any{"editorType": "sql", "rawSql": sql}}).
		Definition(sql).
		Refresh(dashboard.VariableRefreshOnTimeRangeChanged).
		Hide(dashboard.VariableHideHideVariable)}
}

// boundVar builds a boundVariable with skipUrlSync set, which the SDK's
// builder has no option for.
type boundVar struct {
	b *dashboard.QueryVariableBuilder
}

func (v boundVar) Build() (dashboard.VariableModel, error) {
	m, err := v.b.Build()
	m.SkipUrlSync = cog.ToPtr(true)
	return m, err
}

// chainBoundVariable is ${chain_bound}, the time up to which the retry-chain
// panels read their hourly fold (variables/chain_bound.sql).
func chainBoundVariable() boundVar {
	return boundVariable("chain_bound",
		"Hidden: the Unix second up to which the retry-chain panels read chains from their hourly fold; the chains that start later are computed from the raw calls.")
}

// rollupBoundVariable is ${rollup_bound}, the time from which the
// INVALID_ARGUMENT spikes panel reads raw calls (variables/rollup_bound.sql).
func rollupBoundVariable() boundVar {
	return boundVariable("rollup_bound",
		"Hidden: the Unix second from which the INVALID_ARGUMENT spikes panel reads raw calls; the hours before it come from the retention job's hourly folds.")
}

// argsBoundVariable is ${args_bound}, the time from which the top offending
// arguments panel reads the raw INVALID_ARGUMENT calls of the range's whole
// hours (variables/args_bound.sql).
func argsBoundVariable() boundVar {
	return boundVariable("args_bound",
		"Hidden: the Unix second from which the top offending arguments panel reads raw INVALID_ARGUMENT calls; the whole hours before it come from the retention job's hourly folds.")
}

// customVariable is a fixed list of numeric choices, e.g. a minimum volume.
func customVariable(name, label, description, values, current string) *dashboard.CustomVariableBuilder {
	return dashboard.NewCustomVariableBuilder(name).
		Label(label).
		Description(description).
		Values(dashboard.StringOrMap{String: cog.ToPtr(values)}).
		Current(dashboard.VariableOption{
			Selected: cog.ToPtr(true),
			Text:     dashboard.StringOrArrayOfString{String: cog.ToPtr(current)},
			Value:    dashboard.StringOrArrayOfString{String: cog.ToPtr(current)},
		})
}

// categoryVariable picks categories of the taxonomy (pipeline/classify),
// several at once; "All" leaves the filter out.
func categoryVariable() *dashboard.CustomVariableBuilder {
	names := make([]string, len(classify.Categories))
	for i, c := range classify.Categories {
		names[i] = string(c)
	}
	return dashboard.NewCustomVariableBuilder("category").
		Label("Category").
		Description("Categories of the calls to list (All: every category). The category is that of a call's latest ingest.").
		Values(dashboard.StringOrMap{String: cog.ToPtr(strings.Join(names, ","))}).
		Multi(true).
		IncludeAll(true).
		Current(allOption())
}

// argValueVariable is a free-text argument value: panels keep the calls
// whose arguments have it under one of the arg_key variable's keys, and
// leave the filter out when it is empty. Panels read it percent-encoded
// (${arg_value:percentencode}, decoded in SQL), the one format that leaves
// no quote or backslash in the query.
func argValueVariable() *dashboard.TextBoxVariableBuilder {
	return textVariable("arg_value", "Argument value",
		"Lists only the calls with this argument value under one of the chosen argument keys (empty: no filter). The Empty results panels' values link here.")
}

// sessionVariable is a free-text session key (the session id, else the
// trace id), read as argValueVariable is.
func sessionVariable() *dashboard.TextBoxVariableBuilder {
	return textVariable("session", "Session",
		"Lists only the calls of this session key: the session id, else the trace id (empty: no filter). A session in the Calls panel links here, to read its calls in order.")
}

// textVariable is a text box, empty by default.
func textVariable(name, label, description string) *dashboard.TextBoxVariableBuilder {
	return dashboard.NewTextBoxVariableBuilder(name).
		Label(label).
		Description(description).
		DefaultValue(dashboard.StringOrMap{String: cog.ToPtr("")}).
		Current(dashboard.VariableOption{
			Text:  dashboard.StringOrArrayOfString{String: cog.ToPtr("")},
			Value: dashboard.StringOrArrayOfString{String: cog.ToPtr("")},
		})
}

func allOption() dashboard.VariableOption {
	return dashboard.VariableOption{
		Selected: cog.ToPtr(true),
		Text:     dashboard.StringOrArrayOfString{ArrayOfString: []string{"All"}},
		Value:    dashboard.StringOrArrayOfString{ArrayOfString: []string{"$__all"}},
	}
}

// row starts a new line of panels under a title.
func row(id uint32, title string) *dashboard.RowBuilder {
	return dashboard.NewRowBuilder(title).Id(id)
}

// statPanel is one number from a table-format query (the first numeric
// field of the first row), coloured by thresholds.
func statPanel(id uint32, title, description, sql string) *stat.PanelBuilder {
	return stat.NewPanelBuilder().
		Id(id).
		Title(title).
		Description(description).
		Datasource(clickHouseVar).
		WithTarget(chQuery(sql, FormatTable)).
		Height(4).
		Span(4).
		GraphMode(common.BigValueGraphModeNone).
		Orientation(common.VizOrientationAuto).
		ColorMode(common.BigValueColorModeValue).
		ReduceOptions(common.NewReduceDataOptionsBuilder().Calcs([]string{"lastNotNull"}).Values(false)).
		Thresholds(thresholds("green"))
}

// rollupInterval is the minimum interval of the time-series panels that read
// the 5-minute rollups calls_5m and calls_5m_classes: Grafana then never asks
// for buckets finer than the rollups', and every interval it picks above 5
// minutes (10m, 15m, 30m, 1h, ...) is a whole number of rollup buckets.
const rollupInterval = "5m"

// timeSeriesPanel is a time-series query (format 0: time first, ordered;
// string columns become series labels) drawn as lines.
func timeSeriesPanel(id uint32, title, description, sql string) *timeseries.PanelBuilder {
	return timeSeriesBase(id, title, description).
		Datasource(clickHouseVar).
		WithTarget(chQuery(sql, FormatTimeSeries))
}

// promPanel is a time series of PromQL expressions on the Prometheus data
// source variable; exprs alternate expression and legend.
func promPanel(id uint32, title, description string, exprs ...string) *timeseries.PanelBuilder {
	p := timeSeriesBase(id, title, description).Datasource(prometheusVar)
	for i := 0; i+1 < len(exprs); i += 2 {
		p.WithTarget(prometheus.NewDataqueryBuilder().
			RefId(string(rune('A' + i/2))).
			Datasource(prometheusVar).
			Expr(exprs[i]).
			LegendFormat(exprs[i+1]).
			Range())
	}
	return p
}

func timeSeriesBase(id uint32, title, description string) *timeseries.PanelBuilder {
	return timeseries.NewPanelBuilder().
		Id(id).
		Title(title).
		Description(description).
		Height(9).
		Span(12).
		Legend(common.NewVizLegendOptionsBuilder().
			ShowLegend(true).
			DisplayMode(common.LegendDisplayModeTable).
			Placement(common.LegendPlacementRight).
			Calcs([]string{"mean", "max"})).
		Tooltip(common.NewVizTooltipOptionsBuilder().Mode(common.TooltipDisplayModeMulti).Sort(common.SortOrderDescending)).
		LineWidth(1).
		FillOpacity(10).
		Thresholds(thresholds("green"))
}

// tablePanel shows a table-format query as returned.
func tablePanel(id uint32, title, description, sql string) *table.PanelBuilder {
	return table.NewPanelBuilder().
		Id(id).
		Title(title).
		Description(description).
		Datasource(clickHouseVar).
		WithTarget(chQuery(sql, FormatTable)).
		Height(9).
		Span(12).
		Footer(common.NewTableFooterOptionsBuilder().Show(false).Reducer([]string{})).
		CellHeight(common.TableCellHeightSm).
		Filterable(true).
		Thresholds(thresholds("green"))
}

// mergeRows is Grafana's merge transformation: the rows of a panel's
// queries, which must have the same columns, in one table, query A's first
// and each query's in its own order. (Rows equal in every column would be
// shown once; the queries that use it cannot return such rows.) The
// ClickHouse plugin runs a panel's queries at the same time, so a panel
// whose statement has two independent halves answers sooner when each half
// is a query of its own: Misclassified retryables took 31-42 % less on
// 18.16 and 9-15 % less on 26.7 (BENCHMARKS.md, forty-second round).
func mergeRows() dashboard.DataTransformerConfig {
	return dashboard.DataTransformerConfig{Id: "merge", Options: map[string]any{}}
}

// thresholds returns absolute thresholds: base colour, then (value, colour)
// pairs in ascending order.
func thresholds(base string, steps ...any) *dashboard.ThresholdsConfigBuilder {
	ts := []dashboard.Threshold{{Color: base}}
	for i := 0; i+1 < len(steps); i += 2 {
		ts = append(ts, dashboard.Threshold{Value: cog.ToPtr(steps[i].(float64)), Color: steps[i+1].(string)})
	}
	return dashboard.NewThresholdsConfigBuilder().Mode(dashboard.ThresholdsModeAbsolute).Steps(ts)
}

// override sets one field's display properties by its column name.
func override(id string, value any) dashboard.DynamicConfigValue {
	return dashboard.DynamicConfigValue{Id: id, Value: value}
}

// dashboardLink links to another mcplens dashboard, keeping the time range
// and the variables they share.
func dashboardLink(title, uid string) *dashboard.DashboardLinkBuilder {
	return dashboard.NewDashboardLinkBuilder(title).
		Type(dashboard.DashboardLinkTypeLink).
		Url("/d/" + uid + "?${__url_time_range}&${tenant:queryparam}&${server:queryparam}&${tool:queryparam}")
}

// linkList adapts link builders to the panels' Links argument.
func linkList(links ...*dashboard.DashboardLinkBuilder) []cog.Builder[dashboard.DashboardLink] {
	out := make([]cog.Builder[dashboard.DashboardLink], len(links))
	for i, l := range links {
		out[i] = l
	}
	return out
}

func itoa(n uint32) string { return strconv.FormatUint(uint64(n), 10) }

// toolLinks makes a table's tool_name column open the tool drilldown for
// that tool, with the same time range, tenants and servers.
func toolLinks() dashboard.DynamicConfigValue {
	return override("links", []map[string]any{{
		"title": "Tool drilldown for ${__data.fields.tool_name}",
		"url":   toolDrilldownURL(0) + toolDrilldownLinkSuffix,
	}})
}

// panelLink is a link to a panel of another dashboard, keeping the time
// range and the filter variables.
func panelLink(title, uid string, panelID uint32, extra string) *dashboard.DashboardLinkBuilder {
	url := fmt.Sprintf("/d/%s?viewPanel=%d&${__url_time_range}&${tenant:queryparam}&${server:queryparam}%s", uid, panelID, extra)
	return dashboard.NewDashboardLinkBuilder(title).Type(dashboard.DashboardLinkTypeLink).Url(url)
}
