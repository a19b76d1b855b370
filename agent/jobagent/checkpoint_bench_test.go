package jobagent

import (
	"testing"
	"time"

	"github.com/jobsight/jobsight/agent/collector"
	"github.com/jobsight/jobsight/agent/monitor"
	"github.com/jobsight/jobsight/internal/jobmodel"
)

// BenchmarkCheckpoint is one job's checkpoint of an hour's samples,
// encoded and written into a state directory: atomically (a new file
// renamed over the old, at a watch's start and end) and in place into the
// two kept-open slots (at every flush of a running watch).
func BenchmarkCheckpoint(b *testing.B) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	st := monitor.NewNodeState(start, time.Second, 0.05)
	for i := 0; i < 3600; i++ {
		s := collector.Sample{Time: start.Add(time.Duration(i) * time.Second), CPUUsageNanos: uint64(i) * 7e8,
			MemoryUsedBytes: uint64(1+i%97) << 20, MemoryRSSBytes: uint64(1+i%89) << 20, MemoryLimitBytes: 4 << 30,
			CPUsAllocated: 2, Processes: 3, Threads: 6, IOReadBytes: uint64(i) << 10, IOWriteBytes: uint64(i) << 11}
		st.Add(&s)
	}
	job := jobmodel.Job{DocID: "c1:4242", Cluster: "c1", JobID: "4242", User: "alice", Partition: "batch", Nodes: []string{"n001"}}
	ck := &Checkpoint{Job: job, Node: nodeTemplate(job, "n001"), State: st, Leader: true}
	dir := b.TempDir()
	if err := ensureStateDirs(dir); err != nil {
		b.Fatal(err)
	}
	f := jobFiles(dir, "c1", "n001", 4242)
	b.Run("atomic", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := f.saveCheckpoint(ck); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("in-place", func(b *testing.B) {
		w := newCheckpointWriter(f)
		defer w.close()
		b.ReportAllocs()
		for b.Loop() {
			if err := w.save(ck); err != nil {
				b.Fatal(err)
			}
		}
	})
	if got, err := f.loadCheckpoint(); err != nil || got.State.Count != 3600 {
		b.Fatalf("the checkpoint does not read back: %v", err)
	}
}
