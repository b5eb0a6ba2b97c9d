// Package binproc starts the built mcplens binaries for the end-to-end and
// cluster tests: each on a free loopback port, with a log that is safe to
// read while the process writes it, and healthy (/healthz answers 200)
// before the test goes on.
package binproc

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcplens/mcplens/chtest"
)

// Proc is a started binary: its command, its stdout and stderr, and the
// loopback address it serves HTTP on.
type Proc struct {
	Cmd  *exec.Cmd
	Log  *Log
	Addr string
}

// Log is a process's stdout and stderr, safe to read while it writes them.
type Log struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *Log) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns what the process wrote so far.
func (l *Log) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// ErrPortTaken is a process that could not bind the address FreeAddr gave
// it: between FreeAddr's pick and the bind, another process may take the
// port.
var ErrPortTaken = errors.New("its listen address was taken before it bound it")

// FreeAddr returns a loopback address whose port was free a moment ago,
// outside the kernel's ephemeral range (chtest.FreePorts).
func FreeAddr(t testing.TB) string {
	t.Helper()
	ports, err := chtest.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))
}

// Start runs argv(addr), a binary told to listen on addr, a free loopback
// address, and waits up to timeout until it answers /healthz there. A port
// taken before the bind is picked again, up to five times; any other
// failure to become healthy fails t with the process's log. t's cleanup
// kills the process if it still runs, and logs the end of its output as
// name's if t failed.
func Start(t testing.TB, name string, timeout time.Duration, argv func(addr string) []string) *Proc {
	t.Helper()
	for attempt := 1; ; attempt++ {
		addr := FreeAddr(t)
		args := argv(addr)
		p := &Proc{Log: &Log{}, Addr: addr}
		p.Cmd = exec.Command(args[0], args[1:]...)
		p.Cmd.Stdout, p.Cmd.Stderr = p.Log, p.Log
		if err := p.Cmd.Start(); err != nil {
			t.Fatal(err)
		}
		err := p.healthy(timeout)
		if err == nil {
			t.Cleanup(func() {
				if p.Cmd.ProcessState == nil {
					_ = p.Cmd.Process.Kill()
					_ = p.Cmd.Wait()
				}
				if t.Failed() {
					t.Logf("%s %s log:\n%s", name, addr, Tail(p.Log.String(), 6000))
				}
			})
			return p
		}
		_ = p.Cmd.Process.Kill()
		_ = p.Cmd.Wait()
		if errors.Is(err, ErrPortTaken) && attempt < 5 {
			t.Logf("%s on %s: %v; starting it again on another port", name, addr, err)
			continue
		}
		t.Fatalf("%s did not become healthy on %s: %v\n%s", name, addr, err, p.Log)
	}
}

// healthy polls p's /healthz until it answers 200, the process reports
// that its address is taken (ErrPortTaken), or timeout passes.
func (p *Proc) healthy(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		resp, err := http.Get("http://" + p.Addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("/healthz: %s", resp.Status)
		}
		if strings.Contains(p.Log.String(), "address already in use") {
			return ErrPortTaken
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Tail returns the last n bytes of s, marked as cut when it is longer.
func Tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
