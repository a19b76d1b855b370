package slurm

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"sync/atomic"
	"time"
)

// DefaultTimeout bounds a Slurm command when Options.Timeout is zero.
const DefaultTimeout = 10 * time.Second

// Client runs Slurm's client commands, the only place this module starts
// them: each call is bounded by Timeout, gets Env added to the process
// environment, and is counted, so a product's load on slurmctld can be
// shown (Calls). The agent reads jobs through it (LookupAll), the
// cluster-state collector polls nodes and jobs. Safe for concurrent use.
type Client struct {
	Options

	calls atomic.Uint64
}

// Calls is how many Slurm commands this client has started.
func (c *Client) Calls() uint64 { return c.calls.Load() }

// Nodes runs `sinfo --json`: every node with its state, flags, CPUs,
// memory and gres (one call; sinfo asks the controller for nodes and
// partitions). DecodeSinfo reads the answer.
func (c *Client) Nodes(ctx context.Context) ([]byte, error) {
	return c.run(ctx, cmp.Or(c.Sinfo, "sinfo"), "--json", "-N")
}

// Jobs runs `squeue --json`: the jobs the controller holds in squeue's
// default states (pending and running). DecodeSqueue reads the answer.
func (c *Client) Jobs(ctx context.Context) ([]byte, error) {
	return c.run(ctx, cmp.Or(c.Squeue, "squeue"), "--json")
}

// AllJobs runs `squeue --json --states=all`: every job the controller
// still holds, finished ones included (for MinJobAge). With ids it adds
// --jobs=<ids>: from Slurm 23.02 on the controller then answers for those
// jobs only (a single-job RPC for one id); 22.05 ignores --jobs with
// --json and answers with every job, which the reader picks from.
func (c *Client) AllJobs(ctx context.Context, ids ...string) ([]byte, error) {
	args := []string{"--json", "--states=all"}
	if len(ids) > 0 {
		args = append(args, "--jobs="+strings.Join(ids, ","))
	}
	return c.run(ctx, cmp.Or(c.Squeue, "squeue"), args...)
}

// run runs one command and returns its output; an error names the command
// and carries what it printed on stderr.
func (c *Client) run(ctx context.Context, bin string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, cmp.Or(c.Timeout, DefaultTimeout))
	defer cancel()
	c.calls.Add(1)
	cmd := exec.CommandContext(ctx, bin, args...)
	if len(c.Env) > 0 {
		cmd.Env = append(cmd.Environ(), c.Env...)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w: %s", bin, strings.Join(args, " "), err, clip(strings.TrimSpace(stderr.String())))
	}
	return out, nil
}
