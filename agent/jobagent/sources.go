package jobagent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/jobsight/jobsight/agent/collector"
)

// settle is how long to wait for the rest of a job's cgroup controllers
// once the first has appeared.
const settle = 3 * time.Second

// CgroupSources builds a job's collectors from its cgroups, waiting up to
// wait for them to appear: the prolog starts the agent before Slurm creates
// the job's cgroups, and Slurm creates them one controller at a time.
func CgroupSources(cfg collector.Config, wait time.Duration) Sources {
	return func(ctx context.Context, target collector.Target) (collector.Collector, error) {
		deadline := time.Now().Add(wait)
		var firstSeen time.Time
		for {
			set, err := collector.New(cfg, target)
			if err == nil {
				return set, nil
			}
			if errors.Is(err, collector.ErrIncomplete) {
				if firstSeen.IsZero() {
					firstSeen = time.Now()
				} else if time.Since(firstSeen) > settle {
					return collector.NewIncomplete(cfg, target)
				}
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
