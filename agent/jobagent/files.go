package jobagent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jobsight/jobsight/agent/monitor"
	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/internal/privdir"
)

// files are one job's state files on this node, under state_dir/jobs:
// a lock held while the job is watched (exactly one watch per job per
// node), its checkpoint, and markers for "stop was asked" and "done".
type files struct {
	base string
}

// jobFiles are the files of job jobID on node: named
// "<cluster>_<jobid>@<node>", so that several slurmd on one host (test
// clusters, or Slurm's multiple-slurmd mode) keep apart.
func jobFiles(stateDir, cluster, node string, jobID uint64) files {
	dir := filepath.Join(stateDir, "jobs")
	return files{base: filepath.Join(dir, fmt.Sprintf("%s_%d@%s", cluster, jobID, node))}
}

func (f files) lock() string       { return f.base + ".lock" }
func (f files) checkpoint() string { return f.base + ".checkpoint.json" }
func (f files) stopped() string    { return f.base + ".stop" }
func (f files) done() string       { return f.base + ".done" }

// checkpointTwin and checkpointThird are the checkpoint's in-place
// slots, which a running watch writes in turn (checkpointWriter); the
// checkpoint itself is only ever replaced whole and synced to disk.
func (f files) checkpointTwin() string  { return f.base + ".checkpoint.2.json" }
func (f files) checkpointThird() string { return f.base + ".checkpoint.3.json" }

// inPlaceSlots are checkpointWriter's slots, in the order it writes them.
func (f files) inPlaceSlots() [2]string { return [2]string{f.checkpointTwin(), f.checkpointThird()} }

// tryLock takes the job's lock without waiting. ok is false when another
// watch holds it (in this process or another). The lock is released when
// the process exits, so a killed agent never blocks its successor.
func (f files) tryLock() (release func(), ok bool, err error) {
	if err := ensureStateDirs(filepath.Dir(filepath.Dir(f.base))); err != nil {
		return nil, false, err
	}
	return tryFlock(f.lock())
}

// Checkpoint is what a successor needs to finalize a job whose agent died.
type Checkpoint struct {
	Job   jobmodel.Job       `json:"job"`
	Node  jobmodel.Node      `json:"node"`
	State *monitor.NodeState `json:"state"`
	// Leader is whether this node assembles the job document.
	Leader bool `json:"leader"`
	// GPUs is the job's SLURM_JOB_GPUS (GPUsGiven: it was set), kept so
	// that a resumed watch attributes the same GPUs.
	GPUs      string `json:"gpus,omitempty"`
	GPUsGiven bool   `json:"gpus_given,omitempty"`
	// SLUID is the job's SLUID (the start request's, else squeue's), kept
	// so that a resumed watch finds a cgroup v2 directory named by it.
	SLUID string `json:"sluid,omitempty"`
	// Nodes is the start request's node list (SLURM_JOB_NODELIST), kept
	// so that a restarted agent's new watch of the job knows it too.
	Nodes string `json:"nodes,omitempty"`
	// Seq numbers the saves of the checkpoint, so that of its two slots
	// the newer is read (checkpointWriter).
	Seq uint64 `json:"seq,omitempty"`
	// Finalized is set when the job's final documents were made but not
	// all of them are safe (neither stored nor spooled: the spool's disk
	// full). The checkpoint, then their last copy, is kept, and whoever
	// finds it writes them again as they were (same agent state and end)
	// instead of resuming the job or finalizing it as lost.
	Finalized *Finalized `json:"finalized,omitempty"`
	// HandedOver is when the agent that wrote this checkpoint handed the
	// job over to a new agent (an upgrade): the job was running then, and
	// a resume within two intervals is no gap.
	HandedOver *jobmodel.Time `json:"handed_over,omitempty"`
}

// Finalized is how a job was finalized on this node.
type Finalized struct {
	AgentState string        `json:"agent_state"`
	End        jobmodel.Time `json:"end"`
}

// saveCheckpoint writes the checkpoint durably (a new file, synced, renamed
// over the old, and the directory synced): at a watch's start, at a
// handover and at its end. While it runs, a checkpointWriter writes it at
// every flush.
//
// The in-place slots are removed once the checkpoint is in place: what
// they held is older (the same watch's earlier in-place saves) or another
// job's (an id reused while a finalized job's checkpoint stayed), whose
// save number could otherwise outrank this one.
func (f files) saveCheckpoint(c *Checkpoint) error {
	if err := f.writeCheckpoint(c); err != nil {
		return err
	}
	for _, p := range f.inPlaceSlots() {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("removing %s: %w", p, err)
		}
	}
	return nil
}

// writeCheckpoint numbers the save and replaces the checkpoint itself
// durably; the in-place slots stay as they are.
func (f files) writeCheckpoint(c *Checkpoint) error {
	c.Seq++
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	return writeDurable(f.checkpoint(), b)
}

// loadCheckpoint reads the checkpoint: of the durable checkpoint and its
// two in-place slots, the newest one that reads whole. A slot a crash left
// torn (cut short, or longer text left behind) does not parse, and
// another is read; after a power loss, when neither in-place slot may
// have reached the disk, the durable checkpoint is read (at most
// DurableCheckpointEvery old).
func (f files) loadCheckpoint() (*Checkpoint, error) {
	best, err := f.readCheckpoint(f.checkpoint())
	if errors.Is(err, os.ErrNotExist) {
		return nil, err // no checkpoint: the in-place slots never stand alone
	}
	docID := ""
	if best != nil {
		docID = best.Job.DocID
	}
	for _, p := range f.inPlaceSlots() {
		c, err2 := f.readCheckpoint(p)
		switch {
		case err2 != nil:
		case docID != "" && c.Job.DocID != docID:
			// Another job's (a crash between removing the slots, and the
			// id reused): never read in place of this one's.
		case best == nil || c.Seq > best.Seq:
			best, err = c, nil
			docID = c.Job.DocID
		}
	}
	if best == nil {
		return nil, err
	}
	return best, nil
}

func (f files) readCheckpoint(path string) (*Checkpoint, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c Checkpoint
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	if c.State == nil {
		return nil, fmt.Errorf("checkpoint %s: no state", path)
	}
	return &c, nil
}

// removeCheckpoint removes the checkpoint and its slots.
func (f files) removeCheckpoint() {
	_ = os.Remove(f.checkpoint())
	for _, p := range f.inPlaceSlots() {
		_ = os.Remove(p)
	}
}

// DurableCheckpointEvery is how often a running watch's checkpoint is
// written durably (checkpointWriter): a node's power loss costs a job at
// most this much of its samples.
const DurableCheckpointEvery = time.Minute

// checkpointWriter writes a watched job's checkpoint at every flush. Most
// saves go in place, without creating a file, into two slots kept open
// and overwritten in turn, so that one always holds a whole earlier save
// however the agent dies while it writes the other, and loadCheckpoint
// reads the newer whole one. A new file renamed over the old one each
// time cost 30 times more (an inode made and freed, and the journal's
// work, 156 µs against 5 µs a save on ext4).
//
// Neither slot is synced, so after a power loss both may be torn or
// empty: once DurableCheckpointEvery has passed since the last durable
// save, the save replaces the checkpoint itself and syncs it
// (saveCheckpoint's way, its cost in docs/performance.md), which a power
// loss cannot tear.
type checkpointWriter struct {
	f           files
	now         func() time.Time
	lastDurable time.Time
	every       time.Duration
	slots       [2]*os.File
	next        int
	buf         bytes.Buffer
}

// newCheckpointWriter begins the in-place saves of a watch whose
// checkpoint was just written durably (saveCheckpoint, at its start).
func newCheckpointWriter(f files, now func() time.Time) *checkpointWriter {
	return &checkpointWriter{f: f, now: now, lastDurable: now(), every: DurableCheckpointEvery}
}

func (w *checkpointWriter) save(c *Checkpoint) error {
	var durableErr error
	if t := w.now(); t.Sub(w.lastDurable) >= w.every {
		// Tried once a DurableCheckpointEvery: a disk that cannot take it
		// (full, failing) gets the in-place save below instead.
		w.lastDurable = t
		if durableErr = w.f.writeCheckpoint(c); durableErr == nil {
			return nil
		}
	}
	if err := w.saveInPlace(c); err != nil {
		return errors.Join(durableErr, err)
	}
	return durableErr
}

func (w *checkpointWriter) saveInPlace(c *Checkpoint) error {
	c.Seq++
	w.buf.Reset()
	if err := json.NewEncoder(&w.buf).Encode(c); err != nil {
		return err
	}
	slot := w.slots[w.next]
	if slot == nil {
		path := w.f.inPlaceSlots()[w.next]
		var err error
		if slot, err = os.OpenFile(path, os.O_CREATE|os.O_WRONLY|syscall.O_NOFOLLOW, 0o600); err != nil {
			return fmt.Errorf("writing checkpoint: %w", err)
		}
		w.slots[w.next] = slot
	}
	if _, err := slot.WriteAt(w.buf.Bytes(), 0); err != nil {
		return fmt.Errorf("writing checkpoint %s: %w", slot.Name(), err)
	}
	if err := slot.Truncate(int64(w.buf.Len())); err != nil {
		return fmt.Errorf("writing checkpoint %s: %w", slot.Name(), err)
	}
	w.next ^= 1
	return nil
}

// close closes the slots; the checkpoint stays.
func (w *checkpointWriter) close() {
	for i, s := range w.slots {
		if s != nil {
			s.Close()
			w.slots[i] = nil
		}
	}
}

// recordStop records that the job's stop was asked (the epilog came):
// for a watch still setting up or resuming, and for a watch not yet
// started (stopAsked).
func (f files) recordStop() {
	_ = writeAtomic(f.stopped(), []byte("stop\n"))
}

// markDone records that the job (by submit time) was finalized here, so a
// late `start` for it does nothing. A reused job id has another submit time.
func (f files) markDone(submit time.Time) {
	_ = writeAtomic(f.done(), []byte(strconv.FormatInt(submit.Unix(), 10)+"\n"))
	f.removeCheckpoint()
	_ = os.Remove(f.stopped())
}

// isDone reports whether this job was already finalized on this node.
func (f files) isDone(submit time.Time) bool {
	b, err := os.ReadFile(f.done())
	if err != nil {
		return false
	}
	if submit.IsZero() {
		st, err := os.Stat(f.done())
		return err == nil && time.Since(st.ModTime()) < 24*time.Hour
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return err == nil && v == submit.Unix()
}

// stopAsked reports whether a stop for the job whose run began at start
// is recorded (the epilog came before this agent got going). A marker
// older than that run is a leftover of an earlier job with this id: it is
// removed and does not count. Slurm's start time and this node's clock
// may differ by seconds, hence the minute of slack; an unknown start
// accepts a marker of the last ten minutes.
func (f files) stopAsked(start time.Time) bool {
	st, err := os.Stat(f.stopped())
	if err != nil {
		return false
	}
	since := start.Add(-time.Minute)
	if start.IsZero() {
		since = time.Now().Add(-10 * time.Minute)
	}
	if st.ModTime().Before(since) {
		_ = os.Remove(f.stopped())
		return false
	}
	return true
}

// ensureStateDirs makes state_dir and its jobs directory private (0700,
// ours, not a symbolic link): checkpoints name users, accounts and usage.
func ensureStateDirs(stateDir string) error {
	for _, d := range []string{stateDir, filepath.Join(stateDir, "jobs")} {
		if err := privdir.Ensure(d); err != nil {
			return fmt.Errorf("state_dir: %w", err)
		}
	}
	return nil
}

// writeDurable is writeAtomic made to survive a power loss: the new file
// is synced before it is renamed over the old, and the directory after.
func writeDurable(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return fmt.Errorf("syncing %s: %w", filepath.Dir(path), err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("syncing %s: %w", filepath.Dir(path), err)
	}
	return nil
}

func writeAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// cleanOld removes markers of jobs finalized more than a week ago.
func cleanOld(stateDir string) {
	old, _ := filepath.Glob(filepath.Join(stateDir, "jobs", "*.done"))
	for _, p := range old {
		if st, err := os.Stat(p); err == nil && time.Since(st.ModTime()) > 7*24*time.Hour {
			_ = os.Remove(p)
			_ = os.Remove(strings.TrimSuffix(p, ".done") + ".lock")
		}
	}
}
