package collector

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// BenchmarkCollectLiveJob samples a running Slurm job on this node through
// the real kernel files (cgroups, /proc), which cost more than the fixture
// files the other benchmarks read: the kernel computes them on each read.
// Give the job as JOBSIGHT_BENCH_JOB=<job id>:<uid>, e.g. from
// `go run ./cmd/jobsight-stack up` and `sbatch --wrap 'for i in $(seq 16); do sleep 300 & done; wait'`.
func BenchmarkCollectLiveJob(b *testing.B) {
	spec := os.Getenv("JOBSIGHT_BENCH_JOB")
	if spec == "" {
		b.Skip("set JOBSIGHT_BENCH_JOB=<job id>:<uid> to sample a live Slurm job")
	}
	id, uid, _ := strings.Cut(spec, ":")
	jobID, err := strconv.ParseUint(id, 10, 64)
	if err != nil {
		b.Fatalf("JOBSIGHT_BENCH_JOB=%q: %v", spec, err)
	}
	u, _ := strconv.ParseUint(uid, 10, 32)
	host, _ := os.Hostname()
	host, _, _ = strings.Cut(host, ".")
	set, err := New(Config{}, Target{JobID: jobID, UID: uint32(u), Host: host})
	if err != nil {
		b.Fatal(err)
	}
	defer set.Close()
	var s Sample
	for _, c := range set {
		b.Logf("collector %s", c.Name())
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.Reset(s.Time)
		if err := set.Collect(&s); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.Logf("processes %d threads %d missing %s", s.Processes, s.Threads, s.Missing)
}
