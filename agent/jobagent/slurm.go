package jobagent

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"math"
	"os/exec"
	"os/user"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jobsight/jobsight/agent/monitor"
	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/internal/slurm"
)

// SlurmLookup asks Slurm about jobs, through `squeue --json` (every field
// a JSON value of its own: nothing a job name holds can pass for another
// field), and turns the answer into a job document with metadata,
// request, state and times (no usage yet). One squeue call answers for
// every job of the node that asks within Window: jobs starting or ending
// together (an array, a node filling up) cost slurmctld one call, not one
// each. The call's environment names the jobs it is for
// (JOBSIGHT_LOOKUP_JOBS), for operators and tests counting calls.
type SlurmLookup struct {
	Options      slurm.Options
	StoreJobName bool
	// Window is how long a lookup waits for others to share its call
	// (default 100 ms).
	Window time.Duration
	// Log, when set, gets one line per field of Slurm's answer that could
	// not be read, naming it and the Slurm release (once per field and
	// release for the process).
	Log *slog.Logger
	// Phases, when set, counts the CPU of reading squeue's answers
	// (squeue's own is the agent's children's).
	Phases *monitor.Phases

	warned    sync.Map // "<field>|<source>" → true
	mu        sync.Mutex
	pending   map[uint64][]chan lookupAnswer
	scheduled bool
}

type lookupAnswer struct {
	info *slurm.Job
	err  error
}

// Lookup implements Slurm. uid, when not 0, is the job's uid as the SPANK
// plugin got it from slurmd; it is trusted over Slurm's answer.
func (l *SlurmLookup) Lookup(ctx context.Context, cluster string, jobID uint64, uid uint32) (jobmodel.Job, error) {
	if jobID == 0 || jobID > math.MaxUint32 {
		return jobmodel.Job{}, fmt.Errorf("job id %d: not a Slurm job id", jobID)
	}
	ch := make(chan lookupAnswer, 1)
	l.mu.Lock()
	if l.pending == nil {
		l.pending = map[uint64][]chan lookupAnswer{}
	}
	l.pending[jobID] = append(l.pending[jobID], ch)
	if !l.scheduled {
		l.scheduled = true
		// #nosec G118 -- the call answers every lookup of the window, not
		// this caller's alone, so no caller's context may cancel it; the
		// squeue run is bounded by Options.Timeout (slurm.timeout).
		go l.call()
	}
	l.mu.Unlock()
	select {
	case a := <-ch:
		if a.err != nil {
			return jobmodel.Job{}, a.err
		}
		return FromSlurm(cluster, a.info, uid, l.StoreJobName)
	case <-ctx.Done():
		return jobmodel.Job{}, ctx.Err()
	}
}

// call gathers the lookups of one window and answers them from one squeue
// call. Lookups that come while it runs wait for the next call: this one
// may have begun before their job existed.
func (l *SlurmLookup) call() {
	time.Sleep(cmp.Or(l.Window, 100*time.Millisecond))
	l.mu.Lock()
	batch := l.pending
	l.pending, l.scheduled = nil, false
	l.mu.Unlock()
	ids := make([]string, 0, len(batch))
	for id := range batch {
		ids = append(ids, strconv.FormatUint(id, 10))
	}
	sort.Strings(ids)
	opts := l.Options
	opts.Env = append(slices.Clip(opts.Env), "JOBSIGHT_LOOKUP_JOBS="+strings.Join(ids, ","))
	span := l.Phases.Begin()
	jobs, err := slurm.LookupAll(context.Background(), opts, ids...)
	l.Phases.End(monitor.PhaseSlurm, span)
	for id, chs := range batch {
		a := lookupAnswer{err: err}
		if err == nil {
			// #nosec G115 -- Lookup queues only ids in 1..math.MaxUint32.
			if a.info = jobs[uint32(id)]; a.info == nil {
				a.err = fmt.Errorf("squeue --json holds no job %d: %w", id, slurm.ErrJobNotFound)
			} else {
				l.warnMissing(a.info)
			}
		}
		for _, ch := range chs {
			ch <- a
		}
	}
}

// warnMissing logs, once per field and Slurm release, a field of Slurm's
// record that could not be read: the documents name it in missing_metrics,
// the log says which Slurm wrote it, so an admin learns that this agent
// needs an update for that release.
func (l *SlurmLookup) warnMissing(j *slurm.Job) {
	if l.Log == nil {
		return
	}
	for _, f := range j.Missing {
		if _, seen := l.warned.LoadOrStore(f+"|"+j.Source, true); seen {
			continue
		}
		l.Log.Warn("a field of Slurm's job record could not be read; documents name it in missing_metrics",
			"field", f, "slurm", j.Source, "job_id", j.JobID, "missing_metric", "slurm_"+strings.ReplaceAll(f, ".", "_"))
	}
}

// FromSlurm maps scontrol's view of a job onto a job document.
func FromSlurm(cluster string, info *slurm.Job, uid uint32, storeName bool) (jobmodel.Job, error) {
	id := jobmodel.Identity{Cluster: cluster, JobID: uint64(info.JobID)}
	if info.ArrayJobID != 0 {
		task, err := strconv.ParseUint(info.ArrayTaskID, 10, 32)
		if err != nil {
			return jobmodel.Job{}, fmt.Errorf("job %d: array task id %q is not a single task", info.JobID, info.ArrayTaskID)
		}
		id.ArrayJobID, id.ArrayTaskID = uint64(info.ArrayJobID), task
	} else if info.HetJobID != 0 {
		if info.HetJobOffset < 0 { // the squeue reader writes 0 for a negative offset; any other reader may not
			return jobmodel.Job{}, fmt.Errorf("job %d: het job offset %d is negative", info.JobID, info.HetJobOffset)
		}
		id.HetJobID, id.HetJobOffset = uint64(info.HetJobID), uint64(info.HetJobOffset)
	}
	if err := id.Validate(); err != nil {
		return jobmodel.Job{}, err
	}
	job := jobmodel.Job{
		DocID: id.DocID(), SchemaVersion: jobmodel.SchemaVersion, Source: jobmodel.SourceSlurm,
		Cluster: cluster, JobID: id.Key(), SlurmJobID: uint64(info.JobID), SLUID: info.SLUID,
		User: info.UserName, Account: info.Account, Partition: info.Partition, QOS: info.QOS,
		Nodes: info.NodeList, NodeCount: info.NumNodes, State: info.JobState, Reason: nonNone(info.Reason),
		SubmitTime: jobmodel.At(info.SubmitTime), StartTime: jobmodel.At(info.StartTime),
		AgentVersion: Version,
	}
	if id.ArrayJobID != 0 {
		job.ArrayJobID, job.ArrayTaskID = jobmodel.Ptr(id.ArrayJobID), jobmodel.Ptr(id.ArrayTaskID)
	}
	if id.HetJobID != 0 {
		job.HetJobID, job.HetJobOffset = jobmodel.Ptr(id.HetJobID), jobmodel.Ptr(id.HetJobOffset)
	}
	if storeName {
		job.Name = info.JobName
	}
	// A field Slurm's answer held in a shape the reader does not know is
	// absent from the document, and named: "slurm_time_limit".
	for _, f := range info.Missing {
		job.MissingMetrics = append(job.MissingMetrics, "slurm_"+strings.ReplaceAll(f, ".", "_"))
	}
	// The squeue reader leaves UID and GID -1 unless Slurm's answer held
	// an id in 0..2^32-2; the upper bounds here keep that true of any
	// other reader too.
	if info.UID >= 0 && info.UID <= math.MaxUint32 {
		job.UID = jobmodel.Ptr(uint32(info.UID))
	}
	if info.GID >= 0 && info.GID <= math.MaxUint32 {
		job.GID = jobmodel.Ptr(uint32(info.GID))
	}
	if uid != 0 && (job.UID == nil || *job.UID != uid) {
		// Slurm's answer lacks the uid or disagrees with slurmd's: trust
		// slurmd's uid and the local passwd database for the name.
		job.UID, job.GID, job.User = jobmodel.Ptr(uid), nil, ""
		if u, err := user.LookupId(strconv.FormatUint(uint64(uid), 10)); err == nil {
			job.User = u.Username
		}
	}
	if terminal(info.JobState) {
		job.EndTime = jobmodel.At(info.EndTime)
		job.ExitCode, job.ExitSignal = jobmodel.Ptr(info.ExitCode), jobmodel.Ptr(info.ExitSignal)
	}
	if !info.TimeLimitUnlimited && info.TimeLimitSeconds > 0 {
		job.TimeLimitSeconds = jobmodel.Ptr(info.TimeLimitSeconds)
	}
	r := &job.Requested
	r.CPUs = positive(int64(max(info.TRES.CPUs, info.NumCPUs)))
	r.MemoryBytes = positive(info.TRES.MemoryBytes)
	r.MemoryPerNodeBytes = positive(info.MinMemoryNodeBytes)
	r.GPUs = positive(int64(info.TRES.GPUs))
	r.Nodes = positive(int64(max(info.TRES.Nodes, info.NumNodes)))
	r.Tasks = positive(int64(info.NumTasks))
	for name, n := range info.TRES.GRES {
		r.Gres = append(r.Gres, name+":"+strconv.FormatInt(n, 10))
	}
	sort.Strings(r.Gres)
	r.TRES = tresString(info.TRES)
	return job, nil
}

// tresString renders the allocated TRES in Slurm's notation.
func tresString(t slurm.TRES) string {
	var parts []string
	add := func(k string, v int64) {
		if v > 0 {
			parts = append(parts, k+"="+strconv.FormatInt(v, 10))
		}
	}
	add("cpu", int64(t.CPUs))
	add("mem", t.MemoryBytes)
	add("node", int64(t.Nodes))
	add("billing", int64(t.Billing))
	names := make([]string, 0, len(t.GRES))
	for k := range t.GRES {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		add("gres/"+k, t.GRES[k])
	}
	return strings.Join(parts, ",")
}

func positive(v int64) *int64 {
	if v <= 0 {
		return nil
	}
	return &v
}

func nonNone(s string) string {
	if s == "None" {
		return ""
	}
	return s
}

// ClusterName asks Slurm for its ClusterName.
func ClusterName(ctx context.Context, opts slurm.Options) (string, error) {
	cmd := exec.CommandContext(ctx, orDefault(opts.Scontrol, "scontrol"), "show", "config")
	cmd.Env = append(cmd.Environ(), opts.Env...)
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("scontrol show config: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if ok && strings.TrimSpace(k) == "ClusterName" {
			return strings.TrimSpace(v), nil
		}
	}
	return "", fmt.Errorf("scontrol show config: no ClusterName")
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
