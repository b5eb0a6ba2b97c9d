// Package deploy_test checks the deployment files against the tools that
// read them: docker-compose for docker-compose.yml, promtool for the
// Prometheus configuration and rules (syntax and unit tests), a real
// Prometheus scraping the api's gauges for the alerts end to end, and the
// generated dashboards for every link the rules carry.
package deploy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.yaml.in/yaml/v2"

	"github.com/mcplens/mcplens/chtest"
	"github.com/mcplens/mcplens/dashboards"
	"github.com/mcplens/mcplens/gauges"
	"github.com/mcplens/mcplens/pipeline"
	"github.com/mcplens/mcplens/pipeline/classify"
)

func TestMain(m *testing.M) { os.Exit(chtest.Main(m)) }

// tool returns the path of a command-line tool or fails the test, naming
// how to install it: a missing tool is a broken setup, not a skip.
func tool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s not found (%v); `make deps` installs it", name, err)
	}
	return p
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(tool(t, name), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestComposeConfig validates docker-compose.yml with docker-compose (no
// Docker engine needed) and checks that every file it mounts exists.
func TestComposeConfig(t *testing.T) {
	run(t, "docker-compose", "-f", "../docker-compose.yml", "config", "-q")
	var cfg struct {
		Services map[string]struct {
			Volumes []string `yaml:"volumes"` // docker-compose v1 prints the short form, absolute

		} `yaml:"services"`
	}
	if err := yaml.Unmarshal([]byte(run(t, "docker-compose", "-f", "../docker-compose.yml", "config")), &cfg); err != nil {
		t.Fatal(err)
	}
	mounts := 0
	for name, s := range cfg.Services {
		for _, v := range s.Volumes {
			source, _, _ := strings.Cut(v, ":")
			if !strings.HasPrefix(source, "/") {
				continue // a named volume
			}
			mounts++
			if _, err := os.Stat(source); err != nil {
				t.Errorf("service %s mounts %s: %v", name, source, err)
			}
		}
	}
	if mounts == 0 {
		t.Error("no bind mounts found: the provisioning files are not mounted")
	}
}

// TestDockerfileCopiesEveryPackage keeps the Dockerfile's COPY list in step
// with the packages the two commands import.
func TestDockerfileCopiesEveryPackage(t *testing.T) {
	df, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	out := run(t, "go", "list", "-deps", "../cmd/ingest", "../cmd/api")
	for _, pkg := range strings.Fields(out) {
		rest, ok := strings.CutPrefix(pkg, "github.com/mcplens/mcplens/")
		if !ok {
			continue
		}
		dir, _, _ := strings.Cut(rest, "/")
		if !bytes.Contains(df, []byte(fmt.Sprintf("COPY %s/ %s/\n", dir, dir))) {
			t.Errorf("the commands import %s but the Dockerfile does not COPY %s/ %s/", pkg, dir, dir)
		}
	}
}

// TestPromtool runs promtool on the Prometheus configuration (which also
// checks the rule files it loads) and the rules' unit tests.
func TestPromtool(t *testing.T) {
	run(t, "promtool", "check", "config", "prometheus/prometheus.yml")
	run(t, "promtool", "check", "rules", "prometheus/mcplens.rules.yml")
	cmd := exec.Command(tool(t, "promtool"), "test", "rules", "mcplens.rules.test.yml")
	cmd.Dir = "prometheus"
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
}

type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Record      string            `yaml:"record"`
			Expr        string            `yaml:"expr"`
			For         string            `yaml:"for"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

func readRules(t *testing.T) (ruleFile, []byte) {
	t.Helper()
	b, err := os.ReadFile("prometheus/mcplens.rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	var rf ruleFile
	if err := yaml.UnmarshalStrict(b, &rf); err != nil {
		t.Fatal(err)
	}
	return rf, b
}

var panelLinkRe = regexp.MustCompile(`^/d/([\w-]+)\?viewPanel=(\d+)`)

// TestPrometheusRulesLinks checks that every alert has routing labels, a
// summary, a description, a runbook section in docs/alerts.md and a link to
// a panel that exists in the generated dashboards; and that the alerts
// shared with the Grafana rules carry the same names and severities.
func TestPrometheusRulesLinks(t *testing.T) {
	rf, _ := readRules(t)
	ds, err := dashboards.Build()
	if err != nil {
		t.Fatal(err)
	}
	panels := map[string]bool{}
	for _, d := range ds {
		for _, p := range d.Panels {
			if p.Panel != nil && p.Panel.Id != nil {
				panels[fmt.Sprintf("%s/%d", *d.Uid, *p.Panel.Id)] = true
			}
		}
	}
	runbook, err := os.ReadFile("../docs/alerts.md")
	if err != nil {
		t.Fatal(err)
	}
	grafana := map[string]dashboards.AlertRule{}
	for _, r := range dashboards.AlertRules() {
		grafana[r.Title] = r
	}
	alerts := 0
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			alerts++
			if r.Labels["severity"] == "" || r.Labels["service"] != "mcplens" {
				t.Errorf("%s: labels %v lack service and severity for routing", r.Alert, r.Labels)
			}
			for _, k := range []string{"summary", "description", "runbook_url", "dashboard_panel"} {
				if r.Annotations[k] == "" {
					t.Errorf("%s: annotation %s missing", r.Alert, k)
				}
			}
			if !strings.HasSuffix(r.Annotations["runbook_url"], "#"+strings.ToLower(r.Alert)) || !bytes.Contains(runbook, []byte("\n## "+r.Alert+"\n")) {
				t.Errorf("%s: runbook_url %s has no section \"## %s\" in docs/alerts.md", r.Alert, r.Annotations["runbook_url"], r.Alert)
			}
			m := panelLinkRe.FindStringSubmatch(r.Annotations["dashboard_panel"])
			if m == nil || !panels[m[1]+"/"+m[2]] {
				t.Errorf("%s: dashboard_panel %q is no generated panel", r.Alert, r.Annotations["dashboard_panel"])
			}
			if gr, ok := grafana[r.Alert]; ok && gr.Severity != r.Labels["severity"] {
				t.Errorf("%s: severity %s here, %s in the Grafana rule", r.Alert, r.Labels["severity"], gr.Severity)
			}
		}
	}
	for name := range grafana {
		found := false
		for _, g := range rf.Groups {
			for _, r := range g.Rules {
				found = found || r.Alert == name
			}
		}
		if !found {
			t.Errorf("Grafana rule %s has no Prometheus counterpart", name)
		}
	}
	if alerts == 0 {
		t.Fatal("no alerts in the rule file")
	}
}

// liveFixture makes four alerts fire from the api's gauges: tool silent has
// 12 failures sent as successes in the last hour (MCPHiddenFailures), tool
// fetch 5 retry chains of a retryable category that never recover
// (MCPRetryableNeverRecovers), tool flaky 2 INTERNAL failures in 20 calls
// (MCPToolFaultRate), tool hasty 20 rate-limited failures with a retry-after
// hint of 30 s, each called again 10 s later (MCPRetryAfterIgnored).
func liveFixture(now time.Time) []pipeline.Call {
	var out []pipeline.Call
	n := 0
	add := func(ago time.Duration, session, tool string, cat classify.Category, hidden bool) {
		n++
		ts := now.Add(-ago)
		c := pipeline.Call{
			Time: ts, TimeMs: ts.UnixMilli(), DurationMs: 25, Tenant: "acme", Server: "kb", Tool: tool,
			SessionID: session, SessionKey: session, RequestID: fmt.Sprint(n), CallID: uint64(n),
			Source: "capture", ArgsJSON: "{}", ArgsHash: 1, ArgKeys: []string{}, ArgValues: []string{},
			HasResponse: 1, ContentBlocks: 1, Category: string(cat), DeclaredRetryable: classify.RetryUnknown,
			ExpectedRetryable: cat.ExpectedRetryable(), ClassSource: classify.SourceDefault, TaxonomyVersion: "test",
			IngestedMs: now.UnixMilli(),
		}
		if cat.Failure() {
			c.IsFailure, c.IsError = 1, 1
		}
		if hidden {
			c.IsError, c.Misflagged = 0, 1
		}
		out = append(out, c)
	}
	for i := 0; i < 12; i++ {
		add(time.Duration(i+1)*3*time.Minute, fmt.Sprintf("h%d", i), "silent", classify.Internal, true)
	}
	for i := 0; i < 20; i++ {
		cat := classify.OK
		if i < 2 {
			cat = classify.Internal
		}
		add(time.Duration(i+1)*2*time.Minute, fmt.Sprintf("k%d", i), "flaky", cat, false)
	}
	for i := 0; i < 20; i++ {
		at := time.Duration(i+1) * 2 * time.Minute
		add(at, fmt.Sprintf("r%d", i), "hasty", classify.RateLimited, false)
		out[len(out)-1].RetryAfterMs = 30_000
		add(at-10*time.Second, fmt.Sprintf("r%d", i), "hasty", classify.OK, false)
	}
	for i := 0; i < 5; i++ {
		s := fmt.Sprintf("f%d", i)
		add(time.Duration(10+i)*time.Minute, s, "fetch", classify.UpstreamTimeout, false)
		add(time.Duration(10+i)*time.Minute-10*time.Second, s, "fetch", classify.UpstreamTimeout, false)
	}
	return out
}

// TestFaultCategoriesAreTheTaxonomys checks that MCPToolFaultRate's
// recording rule counts exactly the categories the taxonomy expects a retry
// to clear (classify.Category.ExpectedRetryable), as the Grafana rule's
// scenario checks its SQL (dashboards/scenarios_test.go).
func TestFaultCategoriesAreTheTaxonomys(t *testing.T) {
	rf, _ := readRules(t)
	var expr string
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if r.Record == "mcplens:tool_fault_calls:window" {
				expr = r.Expr
			}
		}
	}
	m := regexp.MustCompile(`category=~"([A-Z_|]+)"`).FindStringSubmatch(expr)
	if m == nil {
		t.Fatalf("mcplens:tool_fault_calls:window: no category matcher in %q", expr)
	}
	got := strings.Split(m[1], "|")
	var want []string
	for _, c := range classify.Categories {
		if c.ExpectedRetryable() == classify.RetryYes {
			want = append(want, string(c))
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("fault categories %v, the taxonomy's retryable ones %v", got, want)
	}
}

// freePort returns a loopback address for the test's Prometheus, outside
// the kernel's ephemeral range (chtest.FreePorts).
func freePort(t *testing.T) string {
	t.Helper()
	ports, err := chtest.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))
}

// TestLivePrometheusFiresOnGauges runs the real chain end to end: fixture
// calls in ClickHouse 18.16, the api's gauge exporter serving /metrics on a
// loopback port, and a real Prometheus (Debian's) scraping it every second
// with mcplens.rules.yml, its `for` durations set to 0 s so that the test
// takes seconds. It waits (at most 45 s) for MCPHiddenFailures,
// MCPRetryableNeverRecovers, MCPToolFaultRate and MCPRetryAfterIgnored to
// fire for the fixture's tools.
func TestLivePrometheusFiresOnGauges(t *testing.T) {
	promBin := tool(t, "prometheus")
	e := chtest.Engines(t)[0]
	now := time.Now().UTC().Truncate(time.Second)
	e.Insert(t, liveFixture(now))

	reg := prometheus.NewRegistry()
	x := gauges.New(e.DB, reg, slog.New(slog.NewTextHandler(io.Discard, nil)), gauges.Config{Every: time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { x.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })

	dir := t.TempDir()
	_, rules := readRules(t)
	rules = regexp.MustCompile(`(?m)^(\s+for:) \S+$`).ReplaceAll(rules, []byte("$1 0s"))
	if err := os.WriteFile(filepath.Join(dir, "mcplens.rules.yml"), rules, 0o644); err != nil {
		t.Fatal(err)
	}
	conf := fmt.Sprintf("global: {scrape_interval: 1s, evaluation_interval: 1s}\nrule_files: [mcplens.rules.yml]\nscrape_configs:\n  - job_name: mcplens-api\n    static_configs: [{targets: [%q]}]\n", l.Addr().String())
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freePort(t)
	data := filepath.Join(dir, "data")
	cmd := exec.Command(promBin, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+data, "--web.listen-address="+addr)
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})

	want := map[string]string{"MCPHiddenFailures": "silent", "MCPRetryableNeverRecovers": "fetch", "MCPToolFaultRate": "flaky", "MCPRetryAfterIgnored": "hasty"}
	deadline := time.Now().Add(45 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		time.Sleep(time.Second)
		firing, body, err := firingAlerts("http://" + addr)
		if err != nil {
			last = err.Error()
			continue
		}
		last = body
		if ours, err := storagePath("http://" + addr); err != nil || ours != data {
			t.Fatalf("the Prometheus at %s is not the one this test started (storage %q, %v)", addr, ours, err)
		}
		ok := true
		for alert, toolName := range want {
			ok = ok && firing[alert+"/"+toolName]
		}
		if ok {
			return
		}
	}
	t.Fatalf("alerts %v not firing after 45 s; last /api/v1/alerts: %s\nprometheus log:\n%s", want, last, logs.String())
}

func firingAlerts(base string) (map[string]bool, string, error) {
	resp, err := http.Get(base + "/api/v1/alerts")
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, "", err
	}
	var r struct {
		Data struct {
			Alerts []struct {
				Labels map[string]string `json:"labels"`
				State  string            `json:"state"`
			} `json:"alerts"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, string(body), err
	}
	out := map[string]bool{}
	for _, a := range r.Data.Alerts {
		if a.State == "firing" {
			out[a.Labels["alertname"]+"/"+a.Labels["tool"]] = true
		}
	}
	return out, string(body), nil
}

func storagePath(base string) (string, error) {
	resp, err := http.Get(base + "/api/v1/status/flags")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var r struct {
		Data map[string]string `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return "", err
	}
	return r.Data["storage.tsdb.path"], nil
}
