package clusterstate

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"sync/atomic"
	"time"
)

// Slurm runs the two controller calls of a poll. Calls counts every
// command started, so the collector's load on slurmctld is visible in
// jobsight_clusterstate_slurm_calls_total.
type Slurm struct {
	Sinfo, Squeue string        // commands; "sinfo" and "squeue" when empty
	Env           []string      // extra environment (SLURM_CONF=...)
	Timeout       time.Duration // per call; 20s when zero

	calls atomic.Uint64
}

// Calls is how many Slurm commands this Slurm has started.
func (s *Slurm) Calls() uint64 { return s.calls.Load() }

// Nodes runs `sinfo --json`: every node with its state, flags, CPUs,
// memory and gres (one call; sinfo asks the controller for nodes and
// partitions).
func (s *Slurm) Nodes(ctx context.Context) ([]byte, error) {
	return s.run(ctx, orDefault(s.Sinfo, "sinfo"), "--json")
}

// Jobs runs `squeue --json`: the jobs the controller holds (pending and
// running; the default states).
func (s *Slurm) Jobs(ctx context.Context) ([]byte, error) {
	return s.run(ctx, orDefault(s.Squeue, "squeue"), "--json")
}

func (s *Slurm) run(ctx context.Context, bin string, args ...string) ([]byte, error) {
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = 20 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	s.calls.Add(1)
	cmd := exec.CommandContext(ctx, bin, args...)
	if len(s.Env) > 0 {
		cmd.Env = append(cmd.Environ(), s.Env...)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w: %s", bin, strings.Join(args, " "), err, clip(strings.TrimSpace(stderr.String())))
	}
	return out, nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
