package jobagent

import (
	"os"
	"testing"
	"time"

	"github.com/jobsight/jobsight/agent/monitor"
	"github.com/jobsight/jobsight/internal/jobmodel"
)

// A running watch's checkpoint is written in place, in turn to its two
// in-place slots: a load reads the newest whole save, and a save the agent died
// in the middle of (a slot cut short, or a shorter text over a longer
// one) costs only that save: the other slot is read.
func TestCheckpointSlotsSurviveATornWrite(t *testing.T) {
	dir := t.TempDir()
	if err := ensureStateDirs(dir); err != nil {
		t.Fatal(err)
	}
	f := jobFiles(dir, "c", "n1", 9)
	job := jobmodel.Job{DocID: "c:9", Cluster: "c", JobID: "9"}
	ck := &Checkpoint{Job: job, Node: nodeTemplate(job, "n1"), State: monitor.NewNodeState(time.Unix(0, 0), time.Second, 0), Leader: true}
	if err := f.saveCheckpoint(ck); err != nil { // the watch's start
		t.Fatal(err)
	}
	w := newCheckpointWriter(f, time.Now)
	defer w.close()
	count := func() int {
		t.Helper()
		got, err := f.loadCheckpoint()
		if err != nil {
			t.Fatal(err)
		}
		return int(got.State.Count)
	}
	for i := 1; i <= 5; i++ {
		ck.State.Count = int64(i)
		if err := w.save(ck); err != nil {
			t.Fatal(err)
		}
		if got := count(); got != i {
			t.Fatalf("after save %d the checkpoint reads count %d", i, got)
		}
	}
	// Save 5 went to the twin (start: the checkpoint, then twin, third,
	// twin, third, twin). Cut it short: save 4 is read.
	b, _ := os.ReadFile(f.checkpointTwin())
	if err := os.WriteFile(f.checkpointTwin(), b[:len(b)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	if got := count(); got != 4 {
		t.Fatalf("with the newest slot cut short the checkpoint reads count %d, want the earlier save's 4", got)
	}
	// A later save over it is read again.
	ck.State.Count = 6
	_ = w.save(ck) // to the third slot
	ck.State.Count = 7
	_ = w.save(ck) // to the twin
	if got := count(); got != 7 {
		t.Fatalf("count %d, want 7", got)
	}
	// A shorter text written over a longer one, the agent dying before it
	// cut the file: the trailing bytes make it unreadable, the other is read.
	first, _ := os.ReadFile(f.checkpointThird())
	if err := os.WriteFile(f.checkpointTwin(), append(first[:len(first)-1], []byte(`}, "tail": 1}`)...), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := count(); got != 6 {
		t.Fatalf("with trailing text in the newest slot the checkpoint reads count %d, want 6", got)
	}
	// The watch ends: done removes the checkpoint and both slots.
	f.markDone(time.Unix(0, 0))
	for _, p := range []string{f.checkpoint(), f.checkpointTwin(), f.checkpointThird()} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s is still there after the job was finalized", p)
		}
	}
}

// A twin left by another job (its checkpoint kept after finalizing, or a
// crash between removing the two slots, then the id reused) never
// outranks the new job's checkpoint, however high its save number: the
// new job's first save removes it, and a twin of another job is not read.
func TestStaleCheckpointTwinIsNotRead(t *testing.T) {
	dir := t.TempDir()
	if err := ensureStateDirs(dir); err != nil {
		t.Fatal(err)
	}
	f := jobFiles(dir, "c", "n1", 9)
	newCk := func(docID string, count int64) *Checkpoint {
		job := jobmodel.Job{DocID: docID, Cluster: "c", JobID: "9"}
		ck := &Checkpoint{Job: job, Node: nodeTemplate(job, "n1"), State: monitor.NewNodeState(time.Unix(0, 0), time.Second, 0)}
		ck.State.Count = count
		return ck
	}
	// The earlier job: many in-place saves, its twin well ahead.
	old := newCk("c:9@100", 50)
	if err := f.saveCheckpoint(old); err != nil {
		t.Fatal(err)
	}
	w := newCheckpointWriter(f, time.Now)
	for i := 0; i < 9; i++ {
		_ = w.save(old)
	}
	w.close()
	twin, _ := os.ReadFile(f.checkpointTwin())

	// The id is reused: the new job's start removes the twin.
	if err := f.saveCheckpoint(newCk("c:9@200", 1)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(f.checkpointTwin()); !os.IsNotExist(err) {
		t.Fatalf("the earlier job's twin is still there after the new job's checkpoint: %v", err)
	}
	// A twin of the earlier job back (a crash between the two removals):
	// not read, whatever its save number.
	if err := os.WriteFile(f.checkpointTwin(), twin, 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := f.loadCheckpoint()
	if err != nil {
		t.Fatal(err)
	}
	if got.Job.DocID != "c:9@200" || got.State.Count != 1 {
		t.Fatalf("loaded %s with %d samples, want the new job c:9@200's checkpoint", got.Job.DocID, got.State.Count)
	}
}

// A node's power loss: neither in-place slot is synced, so both may come
// back torn or empty. The checkpoint itself is replaced whole and synced
// once DurableCheckpointEvery has passed, and is read then: the job
// loses at most that much of its samples, never its state.
func TestDurableCheckpointOutlivesBothTornSlots(t *testing.T) {
	dir := t.TempDir()
	if err := ensureStateDirs(dir); err != nil {
		t.Fatal(err)
	}
	f := jobFiles(dir, "c", "n1", 11)
	job := jobmodel.Job{DocID: "c:11", Cluster: "c", JobID: "11"}
	ck := &Checkpoint{Job: job, Node: nodeTemplate(job, "n1"), State: monitor.NewNodeState(time.Unix(0, 0), time.Second, 0), Leader: true}
	if err := f.saveCheckpoint(ck); err != nil { // the watch's start
		t.Fatal(err)
	}
	now := time.Unix(1000, 0)
	w := newCheckpointWriter(f, func() time.Time { return now })
	defer w.close()
	durableCount := func() int64 {
		t.Helper()
		c, err := f.readCheckpoint(f.checkpoint())
		if err != nil {
			t.Fatal(err)
		}
		return c.State.Count
	}
	// A save every 5 s (the flush) for 100 s.
	for i := int64(1); i <= 20; i++ {
		now = now.Add(5 * time.Second)
		ck.State.Count = i
		if err := w.save(ck); err != nil {
			t.Fatal(err)
		}
		// Saves 1-11 go in place; save 12, 60 s after the start, replaces
		// the checkpoint; saves 13-20 go in place again.
		want := int64(0)
		if i >= 12 {
			want = 12
		}
		if got := durableCount(); got != want {
			t.Fatalf("after save %d (%v since the start) the durable checkpoint holds save %d, want %d", i, time.Duration(i)*5*time.Second, got, want)
		}
	}
	if got, err := f.loadCheckpoint(); err != nil || got.State.Count != 20 {
		t.Fatalf("the newest save is not read: %+v, %v", got, err)
	}
	// The power goes: one slot comes back empty, the other torn.
	if err := os.WriteFile(f.checkpointTwin(), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(f.checkpointThird())
	if err := os.WriteFile(f.checkpointThird(), b[:len(b)/3], 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := f.loadCheckpoint()
	if err != nil || got.State.Count != 12 || got.Job.DocID != "c:11" {
		t.Fatalf("after both slots tore the checkpoint reads %+v, %v; want the durable save 12", got, err)
	}
	if _, err := os.Stat(f.checkpoint() + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("the durable save left its temporary file: %v", err)
	}
}
