package clustertest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/mcplens/mcplens/binproc"
	"github.com/mcplens/mcplens/traffic"
)

// proc is a started ingest or api binary with its log.
type proc = binproc.Proc

// start runs bin/name with args on a free loopback port and waits for
// /healthz. An ingest serves no gRPC and runs no retention job (the
// fixtures have fixed dates).
func start(t testing.TB, name string, args ...string) *proc {
	t.Helper()
	return binproc.Start(t, name, 60*time.Second, func(addr string) []string {
		argv := []string{"-listen", addr}
		if name == "ingest" {
			argv = []string{"serve", "-listen", addr, "-grpc-listen", "", "-retention-every", "0"}
		}
		return append(append([]string{filepath.Join(bin, name)}, argv...), args...)
	})
}

// kill sends p SIGKILL: no shutdown, no final flush.
func kill(t testing.TB, p *proc) {
	t.Helper()
	if err := p.Cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = p.Cmd.Wait()
}

// trafficStart is where the generated traffic begins; the API window
// covers it.
var trafficStart = time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)

// bodies returns generated capture traffic as NDJSON bodies of perBody
// lines each.
func bodies(t testing.TB, seed int64, sessions, perBody int) [][]byte {
	t.Helper()
	var out [][]byte
	var b bytes.Buffer
	n := 0
	err := traffic.Generate(traffic.Config{Seed: seed, Sessions: sessions, Start: trafficStart, Duration: 4 * time.Hour}, func(line []byte) error {
		b.Write(line)
		if len(line) == 0 || line[len(line)-1] != '\n' {
			b.WriteByte('\n')
		}
		if n++; n%perBody == 0 {
			out = append(out, bytes.Clone(b.Bytes()))
			b.Reset()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if b.Len() > 0 {
		out = append(out, bytes.Clone(b.Bytes()))
	}
	return out
}

// balancer is the client side of a load balancer in front of ingest
// instances: it posts a body to the next instance in turn and, when the
// post is not acknowledged (a transport error, or an answer other than
// 2xx), to the next one, until one acknowledges it. Replays this causes
// are harmless: calls are keyed by identity.
type balancer struct {
	mu       sync.Mutex
	addrs    []string
	next     int
	retries  atomic.Int64 // posts sent again after an unacknowledged one
	accepted atomic.Int64 // lines acknowledged as accepted
}

func (b *balancer) pick() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	a := b.addrs[b.next%len(b.addrs)]
	b.next++
	return a
}

// remove takes an instance out of rotation (its health check failed).
func (b *balancer) remove(addr string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.addrs = slices.DeleteFunc(b.addrs, func(a string) bool { return a == addr })
}

// add puts an instance into rotation.
func (b *balancer) add(addr string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.addrs = append(b.addrs, addr)
}

// post sends body until an instance acknowledges it and returns that
// instance.
func (b *balancer) post(t testing.TB, body []byte) string {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		addr := b.pick()
		accepted, err := postOnce(addr, bytes.NewReader(body))
		if err == nil {
			b.accepted.Add(accepted)
			return addr
		}
		if time.Now().After(deadline) {
			t.Errorf("no ingest instance acknowledged a body within 2m; last: %s: %v", addr, err)
			return ""
		}
		b.retries.Add(1)
		time.Sleep(20 * time.Millisecond)
	}
}

// postOnce posts one NDJSON body and returns the accepted lines of a 2xx
// answer, or an error.
func postOnce(addr string, body io.Reader) (int64, error) {
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/calls", body)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/x-ndjson")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var res struct {
		Accepted int64  `json:"accepted"`
		Error    string `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&res); err != nil {
		return 0, fmt.Errorf("%s: %w", resp.Status, err)
	}
	if resp.StatusCode/100 != 2 {
		return 0, fmt.Errorf("%s: %s", resp.Status, res.Error)
	}
	return res.Accepted, nil
}

// stream posts bodies through a balancer from workers goroutines in the
// background, each waiting pace after each post, and records which
// instance acknowledged each body.
type stream struct {
	done  chan struct{}
	acked atomic.Int64
	by    []string // instance that acknowledged bodies[i]
}

func postStream(t testing.TB, b *balancer, bodies [][]byte, workers int, pace time.Duration) *stream {
	s := &stream{done: make(chan struct{}), by: make([]string, len(bodies))}
	var wg sync.WaitGroup
	var next atomic.Int64
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(bodies) {
					return
				}
				s.by[i] = b.post(t, bodies[i])
				s.acked.Add(1)
				time.Sleep(pace)
			}
		}()
	}
	go func() { wg.Wait(); close(s.done) }()
	return s
}

// waitAcked returns once n bodies are acknowledged, or all of them.
func (s *stream) waitAcked(n int) {
	for s.acked.Load() < int64(n) {
		select {
		case <-s.done:
			return
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func (s *stream) wait() { <-s.done }

// reference ingests bodies once each into the single server with `ingest
// replay` and serves them with an api in single-node mode: the answers the
// cluster must give.
func reference(t testing.TB, database string, bodies [][]byte) *proc {
	t.Helper()
	file := filepath.Join(t.TempDir(), "traffic.ndjson")
	if err := os.WriteFile(file, bytes.Join(bodies, nil), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(filepath.Join(bin, "ingest"), "replay", "-clickhouse-addr", single.Addr,
		"-clickhouse-database", database, file).CombinedOutput()
	if err != nil {
		t.Fatalf("ingest replay into the single server: %v\n%s", err, out)
	}
	return start(t, "api", "-clickhouse-addr", single.Addr, "-clickhouse-database", database)
}

// endpoints are the analytics compared between the cluster's api and the
// single server's.
var endpoints = []string{
	"/api/v1/overview", "/api/v1/failure-rates", "/api/v1/failure-rates?step=10m", "/api/v1/empty-results",
	"/api/v1/invalid-argument-spikes", "/api/v1/retry-outcomes", "/api/v1/recalls", "/api/v1/misclassifications",
	"/api/v1/retry-outcomes?tenant=acme&retry_window=5s", "/api/v1/invalid-argument-spikes?step=10m&min_calls=2",
}

// apiWindow covers the generated traffic.
var apiWindow = "from=" + trafficStart.Format(time.RFC3339) + "&to=" + trafficStart.Add(5*time.Hour).Format(time.RFC3339)

func getJSON(t *testing.T, addr, path string) string {
	t.Helper()
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	resp, err := http.Get("http://" + addr + path + sep + apiWindow)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s from %s: %s %s", path, addr, resp.Status, b)
	}
	return string(b)
}

// processEndpoints answer from what each ingest process learnt on its own
// (tool definitions in force when a call was validated, sightings written
// at most once per interval and process), so two instances and one replay
// need not agree: the cluster must answer them, with rows when the single
// server has rows.
var processEndpoints = []string{"/api/v1/tools", "/api/v1/schema-violations", "/api/v1/unknown-tools"}

// compareAPIs requires every endpoint to answer the same on both apis, and
// the process-dependent ones to answer on the cluster.
func compareAPIs(t *testing.T, clusterAPI, singleAPI *proc) {
	t.Helper()
	rows := func(body string) int {
		var res struct {
			Rows []json.RawMessage `json:"rows"`
		}
		if err := json.Unmarshal([]byte(body), &res); err != nil {
			t.Fatalf("%v: %s", err, binproc.Tail(body, 500))
		}
		return len(res.Rows)
	}
	for _, ep := range processEndpoints {
		got, want := rows(getJSON(t, clusterAPI.Addr, ep)), rows(getJSON(t, singleAPI.Addr, ep))
		if want > 0 && got == 0 {
			t.Errorf("GET %s: no rows on the cluster, %d on the single server", ep, want)
		}
	}
	for _, ep := range endpoints {
		got, want := getJSON(t, clusterAPI.Addr, ep), getJSON(t, singleAPI.Addr, ep)
		if got != want {
			t.Errorf("GET %s: the cluster and the single server differ\n got %s\nwant %s", ep, binproc.Tail(got, 1500), binproc.Tail(want, 1500))
		}
	}
	// The calls, but for when each was ingested: the cluster's ingest and
	// the replay into the single server are two ingests.
	calls := func(addr, ep string) (string, int) {
		var res struct {
			Rows []map[string]any `json:"rows"`
		}
		if err := json.Unmarshal([]byte(getJSON(t, addr, ep)), &res); err != nil {
			t.Fatal(err)
		}
		for _, r := range res.Rows {
			delete(r, "ingested")
		}
		b, _ := json.Marshal(res.Rows)
		return string(b), len(res.Rows)
	}
	for _, ep := range callsEndpoints {
		got, n := calls(clusterAPI.Addr, ep)
		want, _ := calls(singleAPI.Addr, ep)
		if got != want || n == 0 {
			t.Errorf("GET %s: %d rows; the cluster and the single server differ or list nothing\n got %s\nwant %s", ep, n, binproc.Tail(got, 1500), binproc.Tail(want, 1500))
		}
	}
}

// callsEndpoints list calls, compared without their ingest times.
var callsEndpoints = []string{
	"/api/v1/calls?limit=1000", "/api/v1/calls?failed=true&limit=300", "/api/v1/calls?category=INVALID_ARGUMENT&limit=5",
	"/api/v1/calls?tenant=acme&arg_key=department&limit=20",
}

// callIDs returns the call ids of calls, read with FINAL, sorted: a call
// counted twice appears twice, a lost one not at all.
func callIDs(t testing.TB, conn driver.Conn) []uint64 {
	t.Helper()
	// 18.16 fails FINAL over several parts without the version column
	// ("Cannot find column ingested_ms in source stream"), so it is read too.
	var rows []struct {
		ID      uint64 `ch:"call_id"`
		Version int64  `ch:"ingested_ms"`
	}
	if err := conn.Select(context.Background(), &rows, "SELECT call_id, ingested_ms FROM calls FINAL"); err != nil {
		t.Fatal(err)
	}
	out := make([]uint64, len(rows))
	for i, r := range rows {
		out[i] = r.ID
	}
	slices.Sort(out)
	return out
}

// waitForCalls polls until calls holds n calls (FINAL) or fails after
// timeout: ingest inserts asynchronously after acknowledging.
func waitForCalls(t testing.TB, conn driver.Conn, n int, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		got := len(callIDs(t, conn))
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("calls holds %d calls after %s, want %d", got, timeout, n)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// checkExactlyOnce compares the cluster's calls, call id by call id, with
// the single server's, which ingested every line once.
func checkExactlyOnce(t *testing.T, clustered, one driver.Conn) {
	t.Helper()
	got, want := callIDs(t, clustered), callIDs(t, one)
	if slices.Equal(got, want) {
		return
	}
	counts := map[uint64]int{}
	for _, id := range want {
		counts[id]++
	}
	for _, id := range got {
		counts[id]--
	}
	lost, extra := 0, 0
	for _, n := range counts {
		switch {
		case n > 0:
			lost += n
		case n < 0:
			extra -= n
		}
	}
	t.Errorf("the cluster holds %d calls, the single server %d: %d lost, %d counted more than once", len(got), len(want), lost, extra)
}

// metricSum adds up the samples of one metric on a process's /metrics.
func metricSum(t *testing.T, addr, name string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, line := range strings.Split(string(b), "\n") {
		if line == name || strings.HasPrefix(line, name+"{") || strings.HasPrefix(line, name+" ") {
			var v float64
			if _, err := fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &v); err == nil {
				sum += v
			}
		}
	}
	return sum
}

// ingestArgs are the cluster-mode connection flags of an ingest or api
// whose address list starts at node first.
func ingestArgs(database string, first int) []string {
	addrs := cluster.Addrs()
	addrs = append(addrs[first:], addrs[:first]...)
	return []string{"-clickhouse-addr", strings.Join(addrs, ","), "-clickhouse-cluster", clusterName, "-clickhouse-database", database}
}

// TestIngestInstanceKilledMidStream runs two ingest instances behind a
// client-side balancer and kills one with SIGKILL while a post to it is in
// flight and while it holds acknowledged calls not yet inserted. The client
// retries the unacknowledged post on the other instance and also resends
// the last bodies the killed one acknowledged (answers it treats as lost);
// a replacement started on the killed instance's spool inserts what that
// one had acknowledged. Every call must be counted exactly once, and the
// api must answer as on a single server that got every line once.
func TestIngestInstanceKilledMidStream(t *testing.T) {
	clustered, one := databases(t)
	db := clustered.cfg.Database
	all := bodies(t, 11, 1200, 100)
	want := reference(t, db, all)
	spoolA := t.TempDir()
	// A inserts only every 30 s: when it dies, what it acknowledged is in
	// its spool and nowhere else.
	a := start(t, "ingest", append(ingestArgs(db, 0), "-spool-dir", spoolA, "-flush-every", "30s", "-batch-size", "100000", "-queue-capacity", "200000")...)
	b := start(t, "ingest", append(ingestArgs(db, 3), "-spool-dir", t.TempDir(), "-flush-every", "200ms")...)
	lb := &balancer{addrs: []string{a.Addr, b.Addr}}

	// A post in flight: half of a body is sent when A dies.
	inflight, rest := all[0], all[1:]
	pr, pw := io.Pipe()
	errc := make(chan error, 1)
	go func() { _, err := postOnce(a.Addr, pr); errc <- err }()
	if _, err := pw.Write(inflight[:len(inflight)/2]); err != nil {
		t.Fatal(err)
	}
	st := postStream(t, lb, rest, 4, 10*time.Millisecond)
	st.waitAcked(len(rest) / 2)
	kill(t, a) // mid-stream: the workers' posts to A fail and go to B
	pw.Close()
	if err := <-errc; err == nil {
		t.Fatal("the post in flight to the killed instance was acknowledged")
	}
	time.Sleep(200 * time.Millisecond) // until the balancer's health check notices
	lb.remove(a.Addr)
	lb.retries.Add(1)
	lb.post(t, inflight)
	st.wait()
	// The last bodies A acknowledged: the client resends them as if their
	// answers had been lost.
	var ackedByA [][]byte
	for i := len(rest) - 1; i >= 0 && len(ackedByA) < 3; i-- {
		if st.by[i] == a.Addr {
			ackedByA = append(ackedByA, rest[i])
		}
	}
	for _, body := range ackedByA {
		lb.post(t, body)
	}

	// A's replacement gets A's spool (its volume) and inserts what A
	// acknowledged; it joins the rotation.
	a2 := start(t, "ingest", append(ingestArgs(db, 1), "-spool-dir", spoolA, "-flush-every", "200ms")...)
	lb.add(a2.Addr)
	t.Logf("%d lines accepted, %d posts retried on another instance, %d acknowledged bodies resent", lb.accepted.Load(), lb.retries.Load(), len(ackedByA))
	if len(ackedByA) == 0 || lb.retries.Load() < 2 {
		t.Fatalf("%d bodies acknowledged by the killed instance, %d posts retried: the kill came too late to test anything", len(ackedByA), lb.retries.Load())
	}

	wantIDs := callIDs(t, one.conn)
	waitForCalls(t, clustered.conn, len(wantIDs), 2*time.Minute)
	syncReplicas(t, db)
	t.Logf("%d calls, %d rows before FINAL (replays not merged yet)", len(wantIDs), localCount(t, clustered.conn, "calls"))
	checkExactlyOnce(t, clustered.conn, one.conn)
	api := start(t, "api", ingestArgs(db, 2)...)
	compareAPIs(t, api, want)
}

// TestReplicaLossDuringIngest kills one replica of shard 1 (the first
// address of one ingest instance) while two ingest instances take a stream
// of calls, keeps posting, restarts the replica on its data directory and
// posts the rest. Every accepted call must be counted exactly once, both
// replicas of each shard must end with the same rows, and the api must
// answer as on a single server that got every line once.
func TestReplicaLossDuringIngest(t *testing.T) {
	clustered, one := databases(t)
	db := clustered.cfg.Database
	all := bodies(t, 12, 1200, 100)
	want := reference(t, db, all)
	a := start(t, "ingest", append(ingestArgs(db, 0), "-spool-dir", t.TempDir(), "-flush-every", "200ms")...)
	b := start(t, "ingest", append(ingestArgs(db, 3), "-spool-dir", t.TempDir(), "-flush-every", "200ms")...)
	lb := &balancer{addrs: []string{a.Addr, b.Addr}}

	// Paced so that the stream lasts about 16 s: a fifth before the
	// replica dies, half while it is down, the rest after it is back.
	st := postStream(t, lb, all, 2, 300*time.Millisecond)
	st.waitAcked(len(all) / 5)
	victim := cluster.Nodes[0][0]
	peer := nodeConn(t, 0, 1, db)
	victim.Stop()
	down := time.Now()
	acked, peerRows := st.acked.Load(), localCount(t, peer, "calls_local")
	// Inserts go on without it past its ZooKeeper session timeout (6 s):
	// ZooKeeper declares it gone, as after any real crash, and the peer
	// takes new rows.
	waitReplicaGone(t, peer)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		n := localCount(t, peer, "calls_local")
		if n > peerRows {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("shard 1's other replica got no rows while %s was down (%d before, %d after)", victim.Addr, peerRows, n)
			break
		}
	}
	if err := victim.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Logf("replica %s down for %s while %d bodies were acknowledged", victim.Addr, time.Since(down).Round(time.Millisecond), st.acked.Load()-acked)
	st.wait()
	t.Logf("%d lines accepted; inserts the ingest instances retried: %v and %v",
		lb.accepted.Load(), metricSum(t, a.Addr, "mcplens_ingest_insert_errors_total"), metricSum(t, b.Addr, "mcplens_ingest_insert_errors_total"))

	wantIDs := callIDs(t, one.conn)
	waitForCalls(t, clustered.conn, len(wantIDs), 2*time.Minute)
	syncReplicas(t, db)
	t.Logf("%d calls, %d rows before FINAL", len(wantIDs), localCount(t, clustered.conn, "calls"))
	checkExactlyOnce(t, clustered.conn, one.conn)
	checkPlacement(t, db, len(wantIDs))
	api := start(t, "api", ingestArgs(db, 0)...)
	compareAPIs(t, api, want)
}
