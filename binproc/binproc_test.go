package binproc_test

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/mcplens/mcplens/binproc"
)

// The test binary is its own child process: with BINPROC_CHILD set it
// serves /healthz on the address of its last argument, as the mcplens
// binaries do, and exits with the listen error when it cannot bind it.
func TestMain(m *testing.M) {
	if os.Getenv("BINPROC_CHILD") == "1" {
		os.Exit(child(os.Args[len(os.Args)-1]))
	}
	os.Exit(m.Run())
}

func child(addr string) int {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "listen:", err)
		return 1
	}
	http.HandleFunc("/healthz", func(http.ResponseWriter, *http.Request) {})
	_ = http.Serve(l, nil)
	return 0
}

// TestStartPicksAnotherPort: a binary whose listen address another socket
// holds exits with "address already in use"; Start starts it again on
// another port instead of waiting for it until its timeout.
func TestStartPicksAnotherPort(t *testing.T) {
	t.Setenv("BINPROC_CHILD", "1")
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	var tried []string
	start := time.Now()
	p := binproc.Start(t, "child", 30*time.Second, func(addr string) []string {
		if len(tried) == 0 {
			addr = taken.Addr().String()
		}
		tried = append(tried, addr)
		return []string{os.Args[0], addr}
	})
	if len(tried) != 2 || tried[1] != p.Addr || time.Since(start) > 20*time.Second {
		t.Fatalf("started on %v in %s, healthy on %s; want the taken address, then another one, well before the timeout",
			tried, time.Since(start).Round(time.Millisecond), p.Addr)
	}
	resp, err := http.Get("http://" + p.Addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

func TestTail(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"abc", 3, "abc"},
		{"abcdef", 3, "…def"},
		{"", 0, ""},
	} {
		if got := binproc.Tail(tc.s, tc.n); got != tc.want {
			t.Errorf("Tail(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}
