package jobagent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/jobsight/jobsight/agent/collector"
)

// CgroupSources builds a job's collectors from its cgroups, waiting up to
// wait for them to appear: the prolog starts the agent before Slurm creates
// the job's cgroup.
func CgroupSources(cfg collector.Config, wait time.Duration) Sources {
	return func(ctx context.Context, target collector.Target) (collector.Collector, error) {
		deadline := time.Now().Add(wait)
		for {
			set, err := collector.New(cfg, target)
			if err == nil {
				return set, nil
			}
			if !errors.Is(err, os.ErrNotExist) || time.Now().After(deadline) {
				return nil, fmt.Errorf("collectors for job %d: %w", target.JobID, err)
			}
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(250 * time.Millisecond):
			}
		}
	}
}
