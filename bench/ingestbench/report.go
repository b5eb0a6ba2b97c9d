package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"
)

// report collects the runs and prints them as Markdown.
type report struct {
	cfg    *config
	data   *dataset
	ch     *clickhouse
	runs   []result
	memory []result
	load   string // load average when the runs started
}

// median returns the run of scenario with the median elapsed time.
func (r *report) median(scenario string) result {
	var rs []result
	for _, x := range r.runs {
		if x.scenario == scenario {
			rs = append(rs, x)
		}
	}
	if len(rs) == 0 {
		return result{}
	}
	slices.SortFunc(rs, func(a, b result) int { return int(a.elapsed - b.elapsed) })
	return rs[len(rs)/2]
}

func (r *report) scenarios() []string {
	var out []string
	for _, x := range r.runs {
		if !slices.Contains(out, x.scenario) {
			out = append(out, x.scenario)
		}
	}
	return out
}

func (r *report) write(w io.Writer) {
	host, _ := os.Hostname()
	fmt.Fprintf(w, "## Ingest end to end (%s)\n\n", time.Now().UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(w, "Machine %s: %d CPUs, %s; load average before: %s. ClickHouse %s on %s, same machine.\n",
		host, runtime.NumCPU(), memTotal(), r.load, r.ch.version, r.ch.addr)
	fmt.Fprintf(w, "%d calls (%d capture lines, %.0f B/line NDJSON, %.0f B/row JSONEachRow) in bodies of %d; %d posters; median of %d runs.\n\n",
		r.data.calls, r.data.lines, float64(r.data.ndjson)/float64(r.data.lines), float64(r.data.rowBytes)/float64(r.data.calls),
		r.cfg.perBody, r.cfg.posters, r.cfg.runs)
	json, native := r.median(nameJSON), r.median(nameNative)
	fmt.Fprintln(w, "| scenario | calls/s | accepted calls/s | payload MB/s | sent MB | × JSONEachRow | × Native | server CPU µs/call | ingest CPU µs/call | of which the collector | 503s | ingest peak RSS MB | rows/insert | fsync ms | runs (s) |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
	for _, s := range r.scenarios() {
		m := r.median(s)
		var times []string
		for _, x := range r.runs {
			if x.scenario == s {
				times = append(times, fmt.Sprintf("%.2f", x.elapsed.Seconds()))
			}
		}
		mt := m.metrics
		fmt.Fprintf(w, "| %s | %.0f | %s | %.1f | %.1f | %.2f | %.2f | %.1f | %s | %s | %s | %s | %s | %s | %s |\n",
			s, m.rate(), orDash(m.posted > 0, fmt.Sprintf("%.0f", float64(m.calls)/m.posted.Seconds())), mb(m.raw)/m.elapsed.Seconds(), mb(m.wire), m.rate()/json.rate(), m.rate()/native.rate(),
			perCall(m.serverCPU, m.calls), orDash(m.ingestCPU > 0, fmt.Sprintf("%.1f", perCall(m.ingestCPU, m.calls))),
			orDash(mt.gcSecs > 0, fmt.Sprintf("%.1f", 1e6*mt.gcSecs/float64(max(m.calls, 1)))),
			orDash(m.ingestCPU > 0, fmt.Sprint(m.pushBack)), orDash(m.peakRSS > 0, fmt.Sprintf("%.0f", mb(m.peakRSS))),
			orDash(mt.inserts > 0, fmt.Sprintf("%.0f", mt.insertedSum/max(mt.inserts, 1))),
			orDash(mt.fsyncs > 0, fmt.Sprintf("%.1f", 1000*mt.fsyncSecs/max(mt.fsyncs, 1))),
			strings.Join(times, " "))
	}
	fmt.Fprintln(w)
	r.writePairs(w)
	for _, s := range r.scenarios() {
		var twice []string
		n := 0
		for _, x := range r.runs {
			if x.scenario == s {
				twice = append(twice, fmt.Sprint(x.twice))
				n += x.twice
			}
		}
		if n > 0 {
			fmt.Fprintf(w, "%s: calls stored as two rows, the span pairer having forgotten the first side before the second came (per run): %s.\n\n", s, strings.Join(twice, " "))
		}
	}
	fmt.Fprintln(w, "Ingest memory (NDJSON, or ndjson+tools where named; one run each, a fresh ingest process):")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| run | calls/s | 503s | calls spilled to the spool | peak RSS MB (VmHWM) |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|")
	for _, m := range r.memory {
		fmt.Fprintf(w, "| %s | %.0f | %d | %.0f | %.0f |\n", m.scenario, m.rate(), m.pushBack, m.metrics.spilled, mb(m.peakRSS))
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Load average after: %s. calls/s is from the first request until every call is queryable; accepted calls/s until the last request was answered (the rest is the last batch waiting for -flush-every and its INSERT). CPU µs/call is the process's user+system time over the run divided by the calls, and the collector's share the Go runtime's estimate of its garbage collector's CPU (go_cpu_classes_gc_total_cpu_seconds_total; a dash for builds without it); for clickhouse-client the client's own CPU was %s.\n",
		loadAvg(), clientCPU(json, native))
}

// writePairs compares, run by run, the scenarios that differ only in their
// build: the ingest binary (bin= in -variants, or -ingest-bin) and the
// statements run on the schema (sql=): each build of a group against the
// group's first, as the ratio of ingest CPU per call, of the server's CPU
// per call and of calls/s in the same round of runs. The rounds run the scenarios in
// turn, so a pair shares most of the machine's drift; the spread of the
// ratios is what a before/after can claim.
func (r *report) writePairs(w io.Writer) {
	type at struct {
		group, bin string
		run        int
	}
	var groups []string
	bins := map[string][]string{}
	byRun := map[at]result{}
	for _, x := range r.runs {
		if x.group == "" {
			continue
		}
		if !slices.Contains(groups, x.group) {
			groups = append(groups, x.group)
		}
		if !slices.Contains(bins[x.group], x.bin) {
			bins[x.group] = append(bins[x.group], x.bin)
		}
		k := at{x.group, x.bin, x.run}
		if _, ok := byRun[k]; !ok {
			byRun[k] = x
		}
	}
	header := false
	for _, g := range groups {
		base := bins[g][0] // every group has a bin: it came from a run
		for _, bin := range bins[g][1:] {
			var cpu, server, rate []float64
			for run := 1; run <= r.cfg.runs; run++ {
				a, okA := byRun[at{g, base, run}]
				b, okB := byRun[at{g, bin, run}]
				if !okA || !okB {
					continue
				}
				perCallRatio := func(dst *[]float64, ofA, ofB time.Duration) {
					if ofA > 0 && ofB > 0 { // 0: not measured
						*dst = append(*dst, perCall(ofB, b.calls)/perCall(ofA, a.calls))
					}
				}
				perCallRatio(&cpu, a.ingestCPU, b.ingestCPU)
				perCallRatio(&server, a.serverCPU, b.serverCPU)
				rate = append(rate, b.rate()/a.rate())
			}
			if len(rate) == 0 {
				continue
			}
			if !header {
				fmt.Fprintln(w, "Builds (ingest binary, sql= file) compared run by run (each against the first of its scenario; below 1 is less CPU, above 1 more calls/s):")
				fmt.Fprintln(w)
				fmt.Fprintln(w, "| scenario | builds | ingest CPU µs/call, ratio per run | median | server CPU µs/call, ratio per run | median | calls/s, ratio per run | median |")
				fmt.Fprintln(w, "|---|---|---|---:|---|---:|---|---:|")
				header = true
			}
			fmt.Fprintf(w, "| %s | %s → %s | %s | %s | %s |\n", g, base, bin, ratioCells(cpu), ratioCells(server), ratioCells(rate))
		}
	}
	if header {
		fmt.Fprintln(w)
	}
}

// ratioCells is two table cells: the ratios of xs and their median, dashes
// for none.
func ratioCells(xs []float64) string {
	return ratios(xs) + " | " + orDash(len(xs) > 0, fmt.Sprintf("%.3f", medianOf(xs)))
}

// ratios formats xs with three decimals, separated by spaces; a dash for
// none.
func ratios(xs []float64) string {
	if len(xs) == 0 {
		return "–"
	}
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprintf("%.3f", x)
	}
	return strings.Join(s, " ")
}

// medianOf returns the median of xs (the mean of the middle two for an even
// count); xs is not changed.
func medianOf(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}

func perCall(d time.Duration, calls int) float64 {
	if calls == 0 {
		return 0
	}
	return float64(d.Microseconds()) / float64(calls)
}

func orDash(ok bool, s string) string {
	if ok {
		return s
	}
	return "–"
}

func clientCPU(json, native result) string {
	return fmt.Sprintf("%.1f µs/call (JSONEachRow) and %.1f µs/call (Native)",
		perCall(json.clientCPU, json.calls), perCall(native.clientCPU, native.calls))
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func memTotal() string {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return "unknown memory"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "MemTotal:"); ok {
			var kb int64
			fmt.Sscan(strings.TrimSpace(v), &kb)
			return fmt.Sprintf("%.1f GB RAM", float64(kb)/1e6*1.024)
		}
	}
	return "unknown memory"
}
