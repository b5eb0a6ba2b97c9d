package dashboards

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/grafana/grafana-foundation-sdk/go/alerting"
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// Builders returns every dashboard, in the order of the overview's links.
func Builders() []*dashboard.DashboardBuilder {
	return []*dashboard.DashboardBuilder{Overview(), ToolDrilldown(), Retries(), SchemaQuality(), EmptyResults()}
}

var registerOnce sync.Once

// RegisterPlugins registers the SDK's panel and query types and
// ClickHouseQuery with the SDK runtime, which unmarshalling needs (building
// does not). It is safe to call more than once.
func RegisterPlugins() {
	registerOnce.Do(func() {
		plugins.RegisterDefaultPlugins()
		cog.NewRuntime().RegisterDataqueryVariant(ClickHouseVariant())
	})
}

// Build builds and validates every dashboard.
func Build() ([]dashboard.Dashboard, error) {
	var out []dashboard.Dashboard
	for _, b := range Builders() {
		d, err := b.Build()
		if err != nil {
			return nil, fmt.Errorf("build dashboard: %w", err)
		}
		if err := d.Validate(); err != nil {
			return nil, fmt.Errorf("dashboard %s: %w", *d.Uid, err)
		}
		out = append(out, d)
	}
	return out, nil
}

// Paths of the generated files, relative to this package's directory.
const (
	GeneratedDashboardsDir = "generated/dashboards"
	GeneratedAlertsFile    = "generated/alerting/mcplens-alerts.json"
	PreviewsDir            = "../docs/previews"
)

// Files returns every generated file by path relative to this package's
// directory: the dashboards (what Grafana provisions), the alert rules in
// Grafana's file-provisioning format, and an HTML layout preview per
// dashboard.
func Files() (map[string][]byte, error) {
	ds, err := Build()
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	var index []previewEntry
	for _, d := range ds {
		b, err := marshal(d)
		if err != nil {
			return nil, err
		}
		files[GeneratedDashboardsDir+"/"+*d.Uid+".json"] = b
		files[PreviewsDir+"/"+*d.Uid+".html"] = []byte(Preview(d))
		index = append(index, previewEntry{uid: *d.Uid, title: deref(d.Title)})
	}
	files[PreviewsDir+"/index.html"] = []byte(previewIndex(index))
	groups, err := RuleGroups()
	if err != nil {
		return nil, err
	}
	prov, err := ProvisioningFile(groups)
	if err != nil {
		return nil, err
	}
	files[GeneratedAlertsFile] = prov
	return files, nil
}

// marshal writes indented JSON with a final newline, the committed form.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Provisioning file format of Grafana alert rules (grafana/grafana
// pkg/services/provisioning/alerting/rules_types.go: AlertRuleGroupV1,
// AlertRuleV1, QueryV1). It differs from the HTTP API body the SDK builds:
// the folder is a title, the interval a duration string, and the panel link
// top-level fields instead of annotations.
type provisioningFile struct {
	APIVersion int                 `json:"apiVersion"`
	Groups     []provisioningGroup `json:"groups"`
}

type provisioningGroup struct {
	OrgID    int64              `json:"orgId"`
	Name     string             `json:"name"`
	Folder   string             `json:"folder"`
	Interval string             `json:"interval"`
	Rules    []provisioningRule `json:"rules"`
}

type provisioningRule struct {
	UID          string              `json:"uid"`
	Title        string              `json:"title"`
	Condition    string              `json:"condition"`
	Data         []provisioningQuery `json:"data"`
	DashboardUID string              `json:"dashboardUid"`
	PanelID      int64               `json:"panelId"`
	NoDataState  string              `json:"noDataState"`
	ExecErrState string              `json:"execErrState"`
	For          string              `json:"for"`
	Annotations  map[string]string   `json:"annotations"`
	Labels       map[string]string   `json:"labels"`
	IsPaused     bool                `json:"isPaused"`
}

type provisioningQuery struct {
	RefID             string          `json:"refId"`
	QueryType         string          `json:"queryType,omitempty"`
	RelativeTimeRange relativeRange   `json:"relativeTimeRange"`
	DatasourceUID     string          `json:"datasourceUid"`
	Model             json.RawMessage `json:"model"`
}

type relativeRange struct {
	From int64 `json:"from"`
	To   int64 `json:"to"`
}

// ProvisioningFile converts SDK rule groups to Grafana's file-provisioning
// format. Grafana expands environment variables in most string fields of
// these files (group name, folder, interval; rule uid, title, condition,
// for, states, labels; query refId and datasourceUid), and "$$" is its
// escape for a literal "$", so every "$" in those fields is doubled. Query
// models and annotations are read raw (Grafana 9.1+), so the macros in the
// SQL and the {{ $labels.x }} templates are written as they are.
func ProvisioningFile(groups []alerting.RuleGroup) ([]byte, error) {
	f := provisioningFile{APIVersion: 1}
	for _, g := range groups {
		pg := provisioningGroup{
			OrgID:    1,
			Name:     escapeEnv(deref(g.Title)),
			Folder:   escapeEnv(deref(g.FolderUid)),
			Interval: escapeEnv(fmt.Sprintf("%ds", int64(deref(g.Interval)))),
		}
		for _, r := range g.Rules {
			pr := provisioningRule{
				UID:          escapeEnv(deref(r.Uid)),
				Title:        escapeEnv(r.Title),
				Condition:    escapeEnv(r.Condition),
				NoDataState:  escapeEnv(string(r.NoDataState)),
				ExecErrState: escapeEnv(string(r.ExecErrState)),
				For:          escapeEnv(r.For),
				Annotations:  map[string]string{},
				Labels:       map[string]string{},
			}
			for k, v := range r.Annotations {
				switch k {
				case "__dashboardUid__":
					pr.DashboardUID = escapeEnv(v)
				case "__panelId__":
					if _, err := fmt.Sscan(v, &pr.PanelID); err != nil {
						return nil, fmt.Errorf("rule %s: panel id %q: %w", r.Title, v, err)
					}
				default:
					pr.Annotations[k] = v
				}
			}
			for k, v := range r.Labels {
				pr.Labels[escapeEnv(k)] = escapeEnv(v)
			}
			for _, q := range r.Data {
				model, err := json.Marshal(q.Model)
				if err != nil {
					return nil, fmt.Errorf("rule %s query %s: %w", r.Title, deref(q.RefId), err)
				}
				pq := provisioningQuery{
					RefID:         escapeEnv(deref(q.RefId)),
					QueryType:     deref(q.QueryType),
					DatasourceUID: escapeEnv(deref(q.DatasourceUid)),
					Model:         model,
				}
				if q.RelativeTimeRange != nil {
					pq.RelativeTimeRange = relativeRange{From: int64(deref(q.RelativeTimeRange.From)), To: int64(deref(q.RelativeTimeRange.To))}
				}
				pr.Data = append(pr.Data, pq)
			}
			pg.Rules = append(pg.Rules, pr)
		}
		f.Groups = append(f.Groups, pg)
	}
	return marshal(f)
}

// escapeEnv protects s from Grafana's environment-variable expansion of
// provisioning values.
func escapeEnv(s string) string { return strings.ReplaceAll(s, "$", "$$") }

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

type previewEntry struct{ uid, title string }

func previewIndex(entries []previewEntry) string {
	sort.Slice(entries, func(i, j int) bool { return entries[i].uid < entries[j].uid })
	var b strings.Builder
	b.WriteString("<!doctype html>\n<meta charset=\"utf-8\">\n<title>mcplens dashboards: layout previews</title>\n")
	b.WriteString("<style>body{font:14px sans-serif;margin:2em}</style>\n<h1>mcplens dashboards: layout previews</h1>\n")
	b.WriteString("<p>Generated by <code>go test ./dashboards -update</code> from the same builders as dashboards/generated/. Each page draws the panel grid (24 columns) with titles, ids and types.</p>\n<ul>\n")
	for _, e := range entries {
		fmt.Fprintf(&b, "<li><a href=\"%s.html\">%s</a> (<code>%s</code>)</li>\n", e.uid, htmlEscape(e.title), e.uid)
	}
	b.WriteString("</ul>\n")
	return b.String()
}
