package jobagent

import (
	"strings"
	"testing"

	"github.com/jobsight/jobsight/internal/slurm"
)

// FromSlurm takes a slurm.Job from any reader: a uid or gid outside
// uint32 is unknown (it wrapped before: uid 2^32 became root's 0), and a
// negative het job offset is refused by name (it wrapped to 2^64-1).
func TestFromSlurmOutOfRangeIDs(t *testing.T) {
	t.Parallel()
	job, err := FromSlurm("c1", &slurm.Job{JobID: 7, UID: 1 << 32, GID: 1<<32 + 5, JobState: "RUNNING"}, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	if job.UID != nil || job.GID != nil {
		t.Errorf("uid %v gid %v from Slurm's 2^32 and 2^32+5, want both unknown", deref(job.UID), deref(job.GID))
	}
	// slurmd's uid wins over an out-of-range one.
	if job, err = FromSlurm("c1", &slurm.Job{JobID: 7, UID: 1 << 32, GID: -1, JobState: "RUNNING"}, 1000, false); err != nil {
		t.Fatal(err)
	} else if job.UID == nil || *job.UID != 1000 {
		t.Errorf("uid %v, want slurmd's 1000", deref(job.UID))
	}
	_, err = FromSlurm("c1", &slurm.Job{JobID: 8, HetJobID: 8, HetJobOffset: -1, UID: -1, GID: -1, JobState: "RUNNING"}, 0, false)
	if err == nil || !strings.Contains(err.Error(), "het job offset -1") {
		t.Errorf("negative het job offset: err %v, want one naming it", err)
	}
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}
