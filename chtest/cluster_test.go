package chtest

import (
	"os"
	"path/filepath"
	"testing"
)

// TestFindFrom pins how the DDL watchdog reads a node's error log: from
// where it stopped, a whole line at a time (a line being written is read
// once it ends), once per matching line, and from the start again when the
// log is shorter than where it stopped (cut or rotated).
func TestFindFrom(t *testing.T) {
	path := filepath.Join(t.TempDir(), "error.log")
	write := func(s string, appendTo bool) {
		t.Helper()
		flag := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
		if appendTo {
			flag = os.O_WRONLY | os.O_CREATE | os.O_APPEND
		}
		f, err := os.OpenFile(path, flag, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(s); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	var off int64
	look := func(want string) {
		t.Helper()
		line, next, err := findFrom(path, off, ddlWorkerStopped)
		if err != nil {
			t.Fatal(err)
		}
		if line != want {
			t.Fatalf("from %d: %q, want %q", off, line, want)
		}
		off = next
	}
	stopped := "<Error> DDLWorker: Unexpected ZooKeeper error: Node exists. Terminating."
	write("<Error> Application: other\n"+stopped[:20], false)
	look("") // no whole matching line yet
	write(stopped[20:]+"\n<Error> more\n", true)
	look(stopped) // the line, once it ended
	look("")      // not twice
	write(stopped+"\n", true)
	look(stopped) // a second stop of the restarted worker
	write("short\n", false)
	look("") // rotated: read from the start
	write(stopped+"\n", true)
	look(stopped)
	if _, _, err := findFrom(filepath.Join(t.TempDir(), "missing.log"), 0, ddlWorkerStopped); err == nil {
		t.Fatal("a missing log is no error")
	}
}
