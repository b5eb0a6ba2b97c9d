package dashboards

import (
	"fmt"
	"html"
	"strings"

	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// Preview cell size in pixels: one of 24 grid columns, one grid row.
const (
	previewColumn = 48
	previewRow    = 30
)

// Preview renders a dashboard's layout as a self-contained HTML page: every
// row and panel at its grid position, with its title, id, type and (as a
// tooltip) description, so that a reviewer can see the layout without a
// Grafana server.
func Preview(d dashboard.Dashboard) string {
	var b strings.Builder
	height := uint32(0)
	for _, p := range d.Panels {
		if g := gridPos(p); g != nil && g.Y+g.H > height {
			height = g.Y + g.H
		}
	}
	fmt.Fprintf(&b, "<!doctype html>\n<meta charset=\"utf-8\">\n<title>%s: layout preview</title>\n", htmlEscape(deref(d.Title)))
	b.WriteString("<style>\nbody{font:13px sans-serif;margin:1.5em;background:#f4f5f5}\n")
	fmt.Fprintf(&b, ".grid{position:relative;width:%dpx;height:%dpx}\n", 24*previewColumn, height*previewRow)
	b.WriteString(".p{position:absolute;box-sizing:border-box;border:1px solid #c7d0d9;background:#fff;border-radius:3px;padding:6px;overflow:hidden}\n")
	b.WriteString(".p b{display:block}.p small{color:#6e7781}.row{background:none;border:none;border-bottom:2px solid #8e8e8e;font-weight:bold}\n")
	b.WriteString(".timeseries{border-top:4px solid #5794f2}.table{border-top:4px solid #73bf69}.stat{border-top:4px solid #ff9830}\n</style>\n")
	fmt.Fprintf(&b, "<h1>%s</h1>\n<p>uid <code>%s</code> · %s</p>\n", htmlEscape(deref(d.Title)), deref(d.Uid), htmlEscape(deref(d.Description)))
	if d.Templating.List != nil {
		var names []string
		for _, v := range d.Templating.List {
			names = append(names, "$"+v.Name)
		}
		fmt.Fprintf(&b, "<p>Variables: <code>%s</code></p>\n", strings.Join(names, "</code> <code>"))
	}
	b.WriteString("<div class=\"grid\">\n")
	for _, p := range d.Panels {
		g := gridPos(p)
		if g == nil {
			continue
		}
		style := fmt.Sprintf("left:%dpx;top:%dpx;width:%dpx;height:%dpx", g.X*previewColumn, g.Y*previewRow, g.W*previewColumn, g.H*previewRow)
		if p.RowPanel != nil {
			fmt.Fprintf(&b, "<div class=\"p row\" style=\"%s\">%s <small>row %d</small></div>\n", style, htmlEscape(deref(p.RowPanel.Title)), p.RowPanel.Id)
			continue
		}
		pn := p.Panel
		fmt.Fprintf(&b, "<div class=\"p %s\" style=\"%s\" title=\"%s\"><b>%s</b><small>id %d · %s · %dx%d</small></div>\n",
			pn.Type, style, htmlEscape(deref(pn.Description)), htmlEscape(deref(pn.Title)), deref(pn.Id), pn.Type, g.W, g.H)
	}
	b.WriteString("</div>\n")
	return b.String()
}

func gridPos(p dashboard.PanelOrRowPanel) *dashboard.GridPos {
	switch {
	case p.Panel != nil:
		return p.Panel.GridPos
	case p.RowPanel != nil:
		return p.RowPanel.GridPos
	}
	return nil
}

func htmlEscape(s string) string { return html.EscapeString(s) }
