package dashboards

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/variants"
	"github.com/grafana/grafana-foundation-sdk/go/common"
)

// ClickHousePluginID is the Grafana ClickHouse data source plugin id.
const ClickHousePluginID = "grafana-clickhouse-datasource"

// ClickHousePluginVersion is the plugin version written into every target.
// A target without it, or with one below 4.0.0, makes the plugin's frontend
// run its v3 migration over the query.
const ClickHousePluginVersion = "4.20.0"

// Result formats of a ClickHouse target (grafana/clickhouse-datasource
// src/types/sql.ts): a time series is converted from long to wide, with the
// string columns as labels; a table is shown as returned.
const (
	FormatTimeSeries = 0
	FormatTable      = 1
)

// ClickHouseQuery is a raw-SQL target of the ClickHouse plugin: only the
// fields the plugin reads for the SQL editor. The SDK has no such type.
type ClickHouseQuery struct {
	RefID         string                `json:"refId"`
	Hide          *bool                 `json:"hide,omitempty"`
	Datasource    *common.DataSourceRef `json:"datasource,omitempty"`
	PluginVersion string                `json:"pluginVersion"`
	EditorType    string                `json:"editorType"`
	RawSQL        string                `json:"rawSql"`
	Format        int                   `json:"format"`
	QueryType     string                `json:"queryType,omitempty"`
}

// ImplementsDataqueryVariant marks ClickHouseQuery as a panel target.
func (ClickHouseQuery) ImplementsDataqueryVariant() {}

// DataqueryType returns the plugin id.
func (ClickHouseQuery) DataqueryType() string { return ClickHousePluginID }

// Validate checks what the plugin would reject or misread.
func (q ClickHouseQuery) Validate() error {
	if q.RawSQL == "" {
		return fmt.Errorf("clickhouse target %s: empty rawSql", q.RefID)
	}
	if q.Format != FormatTimeSeries && q.Format != FormatTable {
		return fmt.Errorf("clickhouse target %s: format %d; use 0 (time series) or 1 (table)", q.RefID, q.Format)
	}
	return nil
}

// Equals compares two targets field by field.
func (q ClickHouseQuery) Equals(other variants.Dataquery) bool {
	o, ok := other.(ClickHouseQuery)
	if !ok {
		return false
	}
	a, _ := json.Marshal(q)
	b, _ := json.Marshal(o)
	return bytes.Equal(a, b)
}

// ClickHouseVariant registers ClickHouseQuery with the SDK runtime so that
// unmarshalling a dashboard reads ClickHouse targets as ClickHouseQuery (and
// rejects unknown fields in strict mode) instead of an untyped map.
func ClickHouseVariant() variants.DataqueryConfig {
	return variants.DataqueryConfig{
		Identifier: ClickHousePluginID,
		DataqueryUnmarshaler: func(raw []byte) (variants.Dataquery, error) {
			var q ClickHouseQuery
			err := json.Unmarshal(raw, &q)
			return q, err
		},
		StrictDataqueryUnmarshaler: func(raw []byte) (variants.Dataquery, error) {
			var q ClickHouseQuery
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.DisallowUnknownFields()
			err := dec.Decode(&q)
			return q, err
		},
	}
}

// clickHouseBuilder builds a ClickHouseQuery; it satisfies
// cog.Builder[variants.Dataquery].
type clickHouseBuilder struct{ q ClickHouseQuery }

var _ cog.Builder[variants.Dataquery] = clickHouseBuilder{}

func (b clickHouseBuilder) Build() (variants.Dataquery, error) {
	if err := b.q.Validate(); err != nil {
		return nil, err
	}
	return b.q, nil
}

// chQuery returns a target running sql on the dashboard's ClickHouse data
// source variable, as the panel's query A.
func chQuery(sql string, format int) clickHouseBuilder { return chQueryRef("A", sql, format) }

// chQueryRef is chQuery for a panel's further queries, named refID.
func chQueryRef(refID, sql string, format int) clickHouseBuilder {
	return clickHouseBuilder{q: chTarget(refID, sql, format, clickHouseVar)}
}

func chTarget(refID, sql string, format int, ds common.DataSourceRef) ClickHouseQuery {
	qt := "table"
	if format == FormatTimeSeries {
		qt = "timeseries"
	}
	return ClickHouseQuery{
		RefID:         refID,
		Datasource:    &ds,
		PluginVersion: ClickHousePluginVersion,
		EditorType:    "sql",
		RawSQL:        sql,
		Format:        format,
		QueryType:     qt,
	}
}
