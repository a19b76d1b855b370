package collector

import (
	"testing"
	"time"
)

// benchCollect measures one sampling pass of a 64-process job on a fixture
// tree: every cgroup file and /proc file re-read with pread.
func benchCollect(b *testing.B, dir string, v Version) {
	set, e := newFixtureSet(b, dir, v)
	var s Sample
	now := time.Unix(1700000000, 0)
	s.Reset(now)
	if err := set.Collect(&s); err != nil {
		b.Fatal(err)
	}
	if s.Processes != e.Processes || s.Missing&^v1Lacks != 0 {
		b.Fatalf("fixture pass: processes %d missing %q", s.Processes, s.Missing)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		s.Reset(now)
		if err := set.Collect(&s); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCollectV1_64procs(b *testing.B) { benchCollect(b, fixtureV1, VersionV1) }

func BenchmarkCollectV2_64procs(b *testing.B) { benchCollect(b, fixtureV2, VersionV2) }

// BenchmarkCollectV2NoIOPids_64procs is v2 without the io and pids
// controllers, so I/O and threads come from /proc/<pid>/{io,stat}.
func BenchmarkCollectV2NoIOPids_64procs(b *testing.B) {
	dir := copyTree(b, fixtureV2)
	removeV2IOAndPids(b, dir)
	benchCollect(b, dir, VersionV2)
}

// BenchmarkCollectV1_64procs_noneOpen is BenchmarkCollectV1_64procs with
// no process's files kept open (MaxOpenProcesses < 0): the cost of the
// processes beyond a job's cap, each file opened, read and closed.
func BenchmarkCollectV1_64procs_noneOpen(b *testing.B) {
	e := loadExpected(b, fixtureV1)
	cfg := fixtureConfig(fixtureV1, VersionV1)
	cfg.MaxOpenProcesses = -1
	set, err := New(cfg, e.target())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { set.Close() })
	var s Sample
	now := time.Unix(1700000000, 0)
	b.ReportAllocs()
	for b.Loop() {
		s.Reset(now)
		if err := set.Collect(&s); err != nil {
			b.Fatal(err)
		}
	}
	if s.Processes != e.Processes || s.Missing&^v1Lacks != 0 {
		b.Fatalf("fixture pass: processes %d missing %q", s.Processes, s.Missing)
	}
}
