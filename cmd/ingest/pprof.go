package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/mcplens/mcplens/auth"
)

// listenPprof opens the Go profiler's listener (-pprof-listen) and returns a
// server for it, or nil when addr is empty. The profiles expose the process's
// memory and take CPU, and the listener has no authentication, so only a
// loopback address is accepted.
func listenPprof(addr string) (*http.Server, net.Listener, error) {
	if addr == "" {
		return nil, nil, nil
	}
	if loop, err := auth.IsLoopback(addr); err != nil {
		return nil, nil, fmt.Errorf("-pprof-listen %q: %w", addr, err)
	} else if !loop {
		return nil, nil, fmt.Errorf("-pprof-listen %s is not a loopback address: the profiler has no authentication", addr)
	}
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("pprof listen %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}, lis, nil
}
