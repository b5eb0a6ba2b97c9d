package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestListenPprofRefusesNonLoopback(t *testing.T) {
	for _, tc := range []struct{ addr, want string }{
		{":6060", "is not a loopback address"},
		{"0.0.0.0:6060", "is not a loopback address"},
		{"10.0.0.1:6060", "is not a loopback address"},
		{"localhost", "missing port"},
	} {
		srv, lis, err := listenPprof(tc.addr)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("listenPprof(%q) = %v, want an error containing %q", tc.addr, err, tc.want)
		}
		if srv != nil || lis != nil {
			t.Errorf("listenPprof(%q) opened a listener with an error", tc.addr)
		}
	}
	if srv, lis, err := listenPprof(""); srv != nil || lis != nil || err != nil {
		t.Errorf("listenPprof(\"\") = %v, %v, %v, want nothing", srv, lis, err)
	}
}

func TestListenPprofServesProfiles(t *testing.T) {
	srv, lis, err := listenPprof("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(lis)
	defer srv.Close()
	for path, want := range map[string]string{
		"/debug/pprof/":                  "goroutine",
		"/debug/pprof/heap?debug=1":      "heap profile",
		"/debug/pprof/goroutine?debug=1": "goroutine profile",
		"/debug/pprof/cmdline":           "ingest",
	} {
		resp, err := http.Get("http://" + lis.Addr().String() + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
			t.Errorf("GET %s = %d, body without %q: %.200s", path, resp.StatusCode, want, body)
		}
	}
}
