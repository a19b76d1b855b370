package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/jobsight/jobsight/internal/textfmt"
	"github.com/jobsight/jobsight/test/stack"
)

// slurmLookups measures what one job's metadata lookup costs slurmctld on
// a cluster holding `pending` pending jobs: the answer's size, the time
// squeue takes and the controller RPCs it makes (sdiag), for the call
// every agent made before Slurm 23.02 honoured --jobs with --json (every
// job the controller holds) and for the one it makes now (that job only).
// It starts its own single-node cluster of the release JOBSIGHT_SLURM
// names (or -slurm), with no agent.
func slurmLookups(pending, rounds int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", "jobsight-lookups-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	sl, err := stack.StartSlurm(ctx, filepath.Join(dir, "slurm"), stack.SlurmOptions{GPUs: -1,
		ExtraConf: fmt.Sprintf("MaxJobCount=%d\n", pending+1000)})
	if err != nil {
		return err
	}
	defer sl.Stop()
	fmt.Printf("%s, %d pending jobs, %d rounds per call\n", sl.Install, pending, rounds)
	// The job every lookup asks for: running.
	target, err := sl.Sbatch(ctx, "--output=/dev/null", "-c", "1", "--mem=50M", "--wrap", "sleep 3600")
	if err != nil {
		return err
	}
	if _, err := sl.WaitJobState(ctx, target, "RUNNING"); err != nil {
		return err
	}
	// Pending jobs, held so that none runs: one sbatch each (an array
	// would be one record until its tasks split off). 64 submissions per
	// sbatch process through a small shell loop keeps this minutes, not hours.
	start := time.Now()
	for done := 0; done < pending; {
		n := min(64, pending-done)
		script := fmt.Sprintf("for i in $(seq %d); do sbatch --hold --output=/dev/null --wrap true >/dev/null || exit 1; done", n)
		cmd := sl.Command(ctx, "sh", "-c", script)
		cmd.Path, cmd.Args = "/bin/sh", []string{"sh", "-c", script}
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("submitting pending jobs: %v: %s", err, out)
		}
		done += n
	}
	fmt.Printf("submitted %d held jobs in %s\n", pending, time.Since(start).Round(time.Second))
	for _, c := range []struct {
		name string
		args []string
	}{
		{"every job (squeue --json --states=all)", []string{"--json", "--states=all"}},
		{"that job (squeue --json --states=all --jobs=<id>)", []string{"--json", "--states=all", "--jobs=" + target}},
	} {
		before, err := sl.RPCCounts(ctx)
		if err != nil {
			return err
		}
		var times []time.Duration
		size := 0
		for range rounds {
			t0 := time.Now()
			out, err := sl.Command(ctx, "squeue", c.args...).Output()
			if err != nil {
				return fmt.Errorf("squeue %s: %w", strings.Join(c.args, " "), err)
			}
			times = append(times, time.Since(t0))
			size = len(out)
			if !bytes.Contains(out, []byte(`"job_id": `+target)) && !bytes.Contains(out, []byte(`"number": `+target)) {
				return fmt.Errorf("squeue %s: job %s not in the answer", strings.Join(c.args, " "), target)
			}
		}
		after, err := sl.RPCCounts(ctx)
		if err != nil {
			return err
		}
		slices.Sort(times)
		var rpcs []string
		for k, v := range after {
			if d := v - before[k]; d > 0 && k != "REQUEST_STATS_INFO" {
				rpcs = append(rpcs, fmt.Sprintf("%s %.1f", k, float64(d)/float64(rounds)))
			}
		}
		slices.Sort(rpcs)
		fmt.Printf("%-52s %9s per call, squeue %6.1f / %6.1f / %6.1f ms (min/median/max), RPCs per call: %s\n",
			c.name, textfmt.Bytes(size), ms(times[0]), ms(times[len(times)/2]), ms(times[len(times)-1]), strings.Join(rpcs, ", "))
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
