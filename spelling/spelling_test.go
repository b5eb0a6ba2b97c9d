package spelling

import (
	"slices"
	"strings"
	"testing"
)

func TestClosest(t *testing.T) {
	depts := []string{"finance", "engineering", "hr", "sales", "legal"}
	tests := []struct{ in, want string }{
		{"finace", "finance"},
		{"enginering", "engineering"},
		{"hr ", "hr"},
		{"salse", "sales"},
		{"Legal", "legal"},
		{"FINANCE", "finance"},
		{"it", ""},
		{"marketing", ""},
		{"", ""},
	}
	for _, tt := range tests {
		if got := Closest(tt.in, depts); got != tt.want {
			t.Errorf("Closest(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"open", "opne", 1}, // a swap of neighbours is one edit
		{"finance", "finace", 1},
		{"kitten", "sitting", 3},
		{"部门", "部们", 1}, // runes, not bytes
		{"abc", "", 3},
		{strings.Repeat("a", 300), "a", 300}, // long text: the longer length
	}
	for _, tt := range tests {
		if got := Distance(tt.a, tt.b); got != tt.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestWords(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"search_docs", []string{"search", "docs"}},
		{"searchDocs", []string{"search", "docs"}},
		{"Search-Docs", []string{"search", "docs"}},
		{"mcp__github__create_issue", []string{"mcp", "github", "create", "issue"}},
		{"default_api:create_issue", []string{"default", "api", "create", "issue"}},
		{"HTTPServer", []string{"http", "server"}},
		{"getV2Forecast", []string{"get", "v2", "forecast"}},
		{"查询_文档", []string{"查询", "文档"}},
		{"__", nil},
		{"", nil},
	}
	for _, tt := range tests {
		if got := Words(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("Words(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestNearest(t *testing.T) {
	tools := []string{"search_docs", "get_forecast", "create_issue", "github_list_issues", "web_search", "kb_search"}
	tests := []struct {
		name  string
		want  string
		match Match
	}{
		{"searchDocs", "search_docs", Respelled},
		{"Search-Docs", "search_docs", Respelled},
		{"mcp__github__create_issue", "create_issue", Namespaced},
		{"functions.get_forecast", "get_forecast", Namespaced},
		{"default_api:search_docs", "search_docs", Namespaced},
		{"list_issues", "github_list_issues", Namespaced}, // the model dropped the server's prefix
		{"search", "", ""}, // web_search or kb_search: a tie, and too far to be a slip
		{"search_doc", "search_docs", Misspelled},
		{"get_forcast", "get_forecast", Misspelled},
		{"serch-docs", "search_docs", Misspelled},
		{"delete_everything", "", ""},
		{"find_forecast", "get_forecast", Reworded},       // another verb
		{"weather_forecast", "get_forecast", Reworded},    // more words
		{"lookup_issues", "github_list_issues", Reworded}, // the one known name with "issues"
		{"get_docs", "search_docs", Reworded},             // the one known name with "docs"
		{"list_all", "", ""},                              // verbs shared only
		{"search_docs", "", ""},                           // the name itself is no suggestion
		{"", "", ""},
	}
	for _, tt := range tests {
		got, m := Nearest(tt.name, tools)
		if got != tt.want || m != tt.match {
			t.Errorf("Nearest(%q) = %q, %q; want %q, %q", tt.name, got, m, tt.want, tt.match)
		}
	}
	if got, m := Nearest("kb_search_docs", []string{"docs", "search_docs"}); got != "search_docs" || m != Namespaced {
		t.Errorf("the known name sharing the most words: %q, %q", got, m)
	}
	if got, m := Nearest("get_customer", []string{"customer_notes", "customer_orders"}); got != "" {
		t.Errorf("two known names share customer: %q, %q; want none", got, m)
	}
	if got, m := Nearest("get_customer", []string{"customer_notes", "lookup_customer_orders", "lookup_customer"}); got != "" {
		t.Errorf("three known names share customer: %q, %q; want none", got, m)
	}
	if got, m := Nearest("customer_orders_v2", []string{"customer_notes", "list_customer_orders"}); got != "list_customer_orders" || m != Reworded {
		t.Errorf("the known name sharing the most words: %q, %q", got, m)
	}
	if got, _ := Nearest("anything", nil); got != "" {
		t.Errorf("no known names: %q", got)
	}
}

// FuzzNearest checks Nearest's contract on any input: an answer is one of
// the known names, never the name itself, and comes with how it matched.
func FuzzNearest(f *testing.F) {
	f.Add("mcp__github__create_issue", "create_issue\nsearch_docs")
	f.Add("searchDocs", "search_docs")
	f.Add("serch", "search\nsearch")
	f.Add("\xff\xfe", "\xff")
	f.Fuzz(func(t *testing.T, name, list string) {
		known := strings.Split(list, "\n")
		got, m := Nearest(name, known)
		if got == "" {
			if m != "" {
				t.Fatalf("no name but match %q", m)
			}
			return
		}
		if got == name || !slices.Contains(known, got) {
			t.Fatalf("Nearest(%q, %q) = %q", name, known, got)
		}
		if m != Respelled && m != Namespaced && m != Misspelled && m != Reworded {
			t.Fatalf("match %q", m)
		}
		if m == Respelled && !slices.Equal(Words(name), Words(got)) {
			t.Fatalf("respelled %q as %q: words differ", name, got)
		}
	})
}
