package jobagent

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
)

// debug_listen serves the profiling endpoints while the agent runs, and
// no longer once stopped.
func TestServeDebugProfiles(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	stop := serveDebug(addr, slog.New(slog.NewTextHandler(io.Discard, nil)))
	resp, err := http.Get("http://" + addr + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), "goroutine profile") {
		t.Fatalf("GET /debug/pprof/goroutine: %s\n%.300s", resp.Status, b)
	}
	stop()
	if _, err := http.Get("http://" + addr + "/debug/pprof/"); err == nil {
		t.Fatal("the profiling endpoints still answer after stop")
	}
}
