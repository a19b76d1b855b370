package slurm

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"
	"time"
)

// DefaultTimeout bounds a Slurm command when Options.Timeout is zero.
const DefaultTimeout = 10 * time.Second

// WaitDelay is how long a command killed at its timeout, or one that
// exited, may leave its output open (children of a wrapper script) before
// the call returns without them.
const WaitDelay = time.Second

// MaxAnswer bounds what one command may print: squeue --json for 100,000
// jobs on 26.05 is under 1 GiB; more is not an answer to read (and would
// be held in memory whole).
const MaxAnswer = 1 << 30

// errTooLarge is a command's answer beyond MaxAnswer.
var errTooLarge = errors.New("answer larger than 1 GiB: not read")

// capped is stdout that refuses more than MaxAnswer bytes.
type capped struct{ bytes.Buffer }

func (c *capped) Write(p []byte) (int, error) {
	if c.Len()+len(p) > MaxAnswer {
		return 0, errTooLarge
	}
	return c.Buffer.Write(p)
}

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

// Jobs runs the narrow squeue the cluster-state collector reads
// (DecodeSqueueText): `squeue --noheader --all -O <PollFormat>`, the jobs
// in squeue's default states (pending, running, suspended, completing).
// It is one REQUEST_JOB_INFO without the detail flag, plus the
// REQUEST_PARTITION_INFO squeue makes to print any text answer.
func (c *Client) Jobs(ctx context.Context) ([]byte, error) {
	return c.runEnv(ctx, PollEnv, cmp.Or(c.Squeue, "squeue"), "--noheader", "--all", "-O", PollFormat())
}

// JobsJSON runs `squeue --json`: the same jobs with every field the data
// parser writes (DecodeSqueue). Kept to compare with Jobs (the
// collector's figures in docs/performance.md).
func (c *Client) JobsJSON(ctx context.Context) ([]byte, error) {
	return c.runEnv(ctx, []string{"SLURM_BITSTR_LEN=0"}, cmp.Or(c.Squeue, "squeue"), "--json")
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
	return c.runEnv(ctx, nil, bin, args...)
}

// userEnvPrefixes are the environment variables that change what Slurm's
// commands print (SQUEUE_FORMAT, SQUEUE_STATES, SQUEUE_ARRAY, SINFO_SORT,
// SLURM_TIME_FORMAT, ...): never inherited, so an answer is the same
// whoever starts the process.
var userEnvPrefixes = []string{"SQUEUE_", "SINFO_", "SLURM_TIME_FORMAT=", "SLURM_BITSTR_LEN="}

// runEnv is run with env added after the inherited environment, less the
// variables that change the commands' output.
func (c *Client) runEnv(ctx context.Context, env []string, bin string, args ...string) ([]byte, error) {
	timeout := cmp.Or(c.Timeout, DefaultTimeout)
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c.calls.Add(1)
	cmd := exec.CommandContext(ctx, bin, args...)
	// A command killed at the timeout may leave children holding its
	// output open (a site's wrapper script around squeue): the call ends
	// WaitDelay later, not when they do.
	cmd.WaitDelay = WaitDelay
	cmd.Env = cmd.Environ()
	cmd.Env = slices.DeleteFunc(cmd.Env, func(kv string) bool {
		return slices.ContainsFunc(userEnvPrefixes, func(p string) bool { return strings.HasPrefix(kv, p) })
	})
	cmd.Env = append(append(cmd.Env, env...), c.Env...)
	var stderr bytes.Buffer
	var stdout capped
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if errors.Is(err, errTooLarge) || stdout.Len() >= MaxAnswer {
		return nil, fmt.Errorf("%s %s: %w", bin, strings.Join(args, " "), errTooLarge)
	}
	out := stdout.Bytes()
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) && parent.Err() == nil {
		return nil, fmt.Errorf("%s %s: no answer within %s (slurm.timeout), killed: %w", bin, strings.Join(args, " "), timeout, ctx.Err())
	}
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w: %s", bin, strings.Join(args, " "), err, clip(strings.TrimSpace(stderr.String())))
	}
	return out, nil
}
