package slurm

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A site's wrapper around squeue that hangs in a child (here sleep, which
// keeps the wrapper's output open after the wrapper is killed) ends at the
// client's timeout, with an error that names the command, not when the
// child exits 60 s later.
func TestKilledWrapperDoesNotHoldTheCall(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "squeue")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\nsleep 60\necho '{}'\n"), 0o755); err != nil { // #nosec G306 -- a test executable
		t.Fatal(err)
	}
	c := &Client{Options: Options{Squeue: bin, Timeout: 300 * time.Millisecond}}
	done := make(chan error, 1)
	go func() {
		_, err := c.AllJobs(context.Background(), "7")
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "no answer within 300ms") || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("a squeue killed at its timeout: %v, want an error saying so", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the call waited for the killed wrapper's child (60 s), not its timeout (300 ms)")
	}
}
