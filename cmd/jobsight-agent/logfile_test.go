package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jobsight/jobsight/agent/config"
)

// TestLogReopensOnHangup: logrotate renames the agent's log away and sends
// SIGHUP (examples/logrotate.d/jobsight); the long-lived node agent then
// writes to a new file at the configured path, 0600, instead of to the
// renamed one for ever, and is not killed by the signal.
func TestLogReopensOnHangup(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "log", "agent.log")
	log, closeLog := logger(config.Config{LogFile: path, LogLevel: "info"}, "start", io.Discard)
	log.Info("before rotation")
	rotated := path + ".1"
	if err := os.Rename(path, rotated); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no new log file 5 s after SIGHUP")
		}
	}
	log.Info("after rotation")
	closeLog()

	old, _ := os.ReadFile(rotated)
	cur, _ := os.ReadFile(path)
	if !strings.Contains(string(old), "before rotation") || strings.Contains(string(old), "after rotation") {
		t.Errorf("rotated log: %q", old)
	}
	if !strings.Contains(string(cur), "after rotation") || strings.Contains(string(cur), "before rotation") {
		t.Errorf("new log: %q", cur)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("new log: %v %v, want mode 0600", st.Mode(), err)
	}
}

// A path that cannot be opened again keeps the old file.
func TestLogReopenFailureKeepsTheOldFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "agent.log")
	l, err := openLogFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "elsewhere"), path); err != nil {
		t.Fatal(err)
	}
	if err := l.Reopen(); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("reopening through a symbolic link: %v, want an error naming %s", err, path)
	}
	if _, err := l.Write([]byte("still written\n")); err != nil {
		t.Errorf("write after a failed reopen: %v", err)
	}
}
