package jobagent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jobsight/jobsight/internal/slurm"
)

// Lookups of several jobs at once share one squeue call; a lookup that
// comes after a call began gets a call of its own.
func TestLookupsShareOneControllerCall(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	log := filepath.Join(dir, "calls")
	fixture, err := filepath.Abs("../../internal/slurm/testdata/squeue-22.05-running.json")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "squeue")
	script := "#!/bin/sh\necho \"$JOBSIGHT_LOOKUP_JOBS\" >> " + log + "\ncat " + fixture + "\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	l := &SlurmLookup{Options: slurm.Options{Squeue: bin}, Window: 200 * time.Millisecond}
	ids := []uint64{754236, 754238, 754237, 999}
	var wg sync.WaitGroup
	errs := make([]error, len(ids))
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = l.Lookup(context.Background(), "c", id, 0)
		}()
	}
	wg.Wait()
	for i, err := range errs[:3] {
		if err != nil {
			t.Errorf("job %d: %v", ids[i], err)
		}
	}
	if !errors.Is(errs[3], slurm.ErrJobNotFound) {
		t.Errorf("unknown job: %v, want ErrJobNotFound", errs[3])
	}
	if _, err := l.Lookup(context.Background(), "c", 754236, 0); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(log)
	calls := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(calls) != 2 || calls[0] != "754236,754237,754238,999" || calls[1] != "754236" {
		t.Errorf("squeue calls %q, want one for the four concurrent lookups and one for the later one", calls)
	}
}
