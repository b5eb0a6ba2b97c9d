// Package dashboards generates the mcplens Grafana dashboards and Grafana
// alert rules with the Grafana foundation SDK: one function per dashboard,
// the panel SQL in panels/*.sql and the alert SQL in alerts/*.sql (Grafana
// ClickHouse plugin macros, no bound values), and the generated files in
// generated/, which Grafana provisions and the tests compare against (run
// `go test ./dashboards -update` after a change and review the diff).
package dashboards
