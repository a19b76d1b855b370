package main

import (
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// logFile is the agent's log file. The node agent lives as long as its node
// has jobs (weeks, on a busy node), so the file must be rotatable: on SIGHUP
// the path is opened again, and a log that logrotate renamed away is
// followed by a new one at the configured path (examples/logrotate.d).
// Writes are serialised with the swap, so no line is split between files.
type logFile struct {
	mu   sync.Mutex
	path string
	f    *os.File
}

// openLogFile opens path for appending: 0600, never through a symbolic link.
func openLogFile(path string) (*logFile, error) {
	f, err := openLogPath(path)
	if err != nil {
		return nil, err
	}
	return &logFile{path: path, f: f}, nil
}

func openLogPath(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND|syscall.O_NOFOLLOW, 0o600)
}

func (l *logFile) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f.Write(p)
}

// Reopen opens the path again and writes there from now on. When the path
// cannot be opened the old file is kept, and the error says why.
func (l *logFile) Reopen() error {
	f, err := openLogPath(l.path)
	if err != nil {
		return fmt.Errorf("reopening the log %s: %w", l.path, err)
	}
	l.mu.Lock()
	old := l.f
	l.f = f
	l.mu.Unlock()
	return old.Close()
}

// reopenOnHangup reopens l on every SIGHUP until the returned stop is
// called; a failure is written to the file still open.
func (l *logFile) reopenOnHangup() (stop func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-ch:
				if err := l.Reopen(); err != nil {
					fmt.Fprintf(l, "level=ERROR msg=%q\n", err.Error())
				}
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(ch)
		close(done)
	}
}

// Close closes the file.
func (l *logFile) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f.Close()
}
