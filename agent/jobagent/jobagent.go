// Package jobagent is the agent's life cycle for one Slurm job on one node:
// `start` (from the SPANK job prolog) takes the job's lock so that exactly
// one agent watches it, samples until the job ends, and finalizes; `stop`
// (from the job epilog) asks the running agent to finish, or — when the
// agent died — finalizes the job from its last checkpoint so the job
// document still gets a final state and says what is missing.
package jobagent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"time"

	"github.com/jobsight/jobsight/agent/collector"
	"github.com/jobsight/jobsight/agent/config"
	"github.com/jobsight/jobsight/agent/emissions"
	"github.com/jobsight/jobsight/agent/energy"
	"github.com/jobsight/jobsight/agent/monitor"
	"github.com/jobsight/jobsight/internal/analysis"
	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/internal/slurm"
)

// Version is the agent's version, set at build time (make agent: the git
// description). A plain `go build` falls back to the VCS revision Go
// stamps into the binary; only a build without either says "dev".
var Version = "dev"

func init() {
	if Version != "dev" {
		return
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return
	}
	var rev, dirty string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "-dirty"
			}
		}
	}
	if len(rev) >= 12 {
		Version = rev[:12] + dirty
	}
}

// Outputs is where documents and series go (deliver.Outputs in production).
type Outputs interface {
	monitor.Sink
	// PutJob writes the job document.
	PutJob(ctx context.Context, job jobmodel.Job) error
	// CreateJob writes a job's first document, where the store can tell
	// that another job holds its id, and returns the id it stored it under.
	CreateJob(ctx context.Context, job jobmodel.Job) (string, error)
	// NodeDocs returns the node documents of a job, as stored.
	NodeDocs(ctx context.Context, jobDocID string) ([]jobmodel.Node, error)
	// ResolveDocID returns the document id for a job whose plain id is base:
	// base itself, or a reuse id when an older job holds base.
	ResolveDocID(ctx context.Context, base string, submit, start time.Time) string
	// Replay sends whatever waits in the spool.
	Replay(ctx context.Context)
	// PutResult writes a job's analysis to the results index.
	PutResult(ctx context.Context, r jobmodel.Result) error
	// Pending is how many items wait in the node's spool.
	Pending() int
}

// Slurm looks a job up in Slurm. The returned document has the job's
// identity, metadata, request, state and times set.
type Slurm interface {
	Lookup(ctx context.Context, cluster string, jobID uint64, uid uint32) (jobmodel.Job, error)
}

// Sources builds the job's collectors, waiting for its cgroup to appear.
type Sources func(ctx context.Context, target collector.Target) (collector.Collector, error)

// Agent runs the life cycle.
type Agent struct {
	Config  config.Config
	Outputs Outputs
	Slurm   Slurm
	Sources Sources
	Health  *monitor.Health
	Log     *slog.Logger
	Now     func() time.Time
	// GPU is the node's GPU backend and the job's GPU list.
	GPU GPUs
	// Energy reads the node's energy (nil: energy.enabled is off);
	// Emissions turns it into CO2e (nil: no emissions.zone).
	Energy    *energy.Meter
	Emissions *emissions.Estimator
	// EndPoll overrides DefaultEndPoll.
	EndPoll time.Duration
	// FinalPoll is the first wait between final-state lookups (default
	// 1 s; doubled after each, up to 30 s).
	FinalPoll time.Duration
	// LingerPoll is the first wait between spool replays after the job
	// (default 5 s; doubled after each, up to 30 s).
	LingerPoll time.Duration
	// CPUAtMain is the process's CPU time when main began (exec and
	// runtime start-up); the resource-use log line splits the agent's cost
	// by phase from it.
	CPUAtMain time.Duration

	cpuAtWatch, cpuAtFinalize time.Duration
	// sched and snd are the node agent's timer and sender (serve); nil
	// when a job is watched on its own (Start in tests and tools).
	sched *monitor.Scheduler
	snd   *monitor.Sender
}

func (a *Agent) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

// Start watches job jobID on this node until it ends (ctx is cancelled by
// the job's stop, or the job's cgroup vanishes), then finalizes it. If
// another watch of the job runs already, Start returns at once.
func (a *Agent) Start(ctx context.Context, jobID uint64, uid uint32) error {
	return a.StartJob(ctx, Request{Op: "start", JobID: jobID, UID: uid, GPUs: a.GPU.JobList, GPUsGiven: a.GPU.JobListGiven})
}

// StartJob is Start for a launch's request. A checkpoint of the same job
// (an earlier agent died while watching it) is resumed: its samples are
// kept and the time without any is recorded as a gap.
func (a *Agent) StartJob(ctx context.Context, req Request) error {
	jobID, uid := req.JobID, req.UID
	f := jobFiles(a.Config.StateDir, a.Config.Cluster, a.Config.Node, jobID)
	release, ok, err := f.tryLock()
	if err != nil {
		return err
	}
	if !ok {
		a.Log.Info("another agent already watches this job", "job_id", jobID)
		return nil
	}
	defer release()
	started := a.now()
	// ctx ends the watch (the job's stop); looking the job up and
	// writing its documents must not end with it.
	lctx := context.WithoutCancel(ctx)

	job := a.lookup(lctx, jobID, uid)
	if f.isDone(timeOf(job.SubmitTime)) {
		a.Log.Info("job already finalized on this node", "job_id", jobID)
		return nil
	}
	// Slurm reuses ids (after a state reset, or when they wrap): what an
	// older job of this id left here is finished as that job's, never
	// taken for this one's.
	if err := a.finishOlder(lctx, f, job); err != nil {
		return err
	}
	ck, resumed := a.resumable(f, job)
	if resumed {
		if terminal(job.State) || ctx.Err() != nil || f.stopAsked(timeOf(job.StartTime)) {
			a.Log.Warn("the job ended while no agent watched it; finalizing from its checkpoint", "job_id", jobID, "samples", ck.State.Count)
			return a.finalize(context.Background(), ck, jobmodel.AgentLost, f)
		}
		ck.State.NoteGap(started)
		a.Log.Warn("resuming a job after an agent restart", "job_id", jobID, "samples", ck.State.Count,
			"gap_seconds", started.Sub(ck.State.LastSample).Seconds())
	} else {
		job.DocID = a.Outputs.ResolveDocID(lctx, job.DocID, timeOf(job.SubmitTime), started)
		leader := isLeader(job, a.Config.Node)
		if leader {
			running := job
			running.UpdatedAt = jobmodel.At(started)
			id, err := a.Outputs.CreateJob(lctx, running)
			if err != nil {
				a.Log.Warn("writing running job document; spooled", "err", err)
			}
			job.DocID = id
		}
		state := monitor.NewNodeState(started, a.Config.Interval, a.Config.ActiveThresholdCores)
		ck = &Checkpoint{Job: job, Node: nodeTemplate(job, a.Config.Node), State: state, Leader: leader,
			GPUs: req.GPUs, GPUsGiven: req.GPUsGiven}
	}
	if a.sched == nil { // the job's own process: its cost split by phase
		a.cpuAtWatch = ReadSelfUsage().CPU
	}
	_ = f.saveCheckpoint(ck)

	if f.stopAsked(timeOf(ck.Job.StartTime)) {
		a.Log.Info("job ended before the agent started; finalizing", "job_id", jobID)
	} else {
		a.watch(ctx, jobID, cmp.Or(uidOf(ck.Job), uid), ck, f)
	}
	return a.finalize(context.Background(), ck, jobmodel.AgentFinished, f)
}

// resumable returns this job's own checkpoint, left by an agent that died
// while watching it (same submit time), or false.
func (a *Agent) resumable(f files, job jobmodel.Job) (*Checkpoint, bool) {
	ck, err := f.loadCheckpoint()
	if err != nil || ck.State.Count == 0 {
		return nil, false
	}
	older, mine := timeOf(ck.Job.SubmitTime), timeOf(job.SubmitTime)
	if !older.IsZero() && !mine.IsZero() && !older.Equal(mine) {
		return nil, false
	}
	return ck, true
}

// watch samples the job until ctx ends or the job is gone.
func (a *Agent) watch(ctx context.Context, jobID uint64, uid uint32, ck *Checkpoint, f files) {
	target := collector.Target{JobID: jobID, UID: uid, Host: a.Config.Node}
	if a.Energy != nil {
		ck.State.EnableEnergy() // even without a cgroup: energy is then named missing
	}
	src, err := a.Sources(ctx, target)
	if err != nil {
		a.addGPU(nil, target, ck.State, ck.GPUs, ck.GPUsGiven) // a job holding GPUs says they are missing
		if ctx.Err() == nil {
			a.Log.Warn("no cgroup for the job; its usage will be missing", "job_id", jobID, "err", err)
			a.waitForEnd(ctx, ck.Job)
		}
		return
	}
	if set, ok := src.(collector.Set); ok {
		src = a.addGPU(set, target, ck.State, ck.GPUs, ck.GPUsGiven)
	}
	src = a.addEnergy(src, ck.State)
	defer src.Close()
	opts := monitor.Options{
		Interval:        a.Config.Interval,
		FlushInterval:   a.Config.FlushInterval,
		PushInterval:    a.Config.Prometheus.PushInterval,
		ActiveThreshold: a.Config.ActiveThresholdCores,
		Labels:          Labels(ck.Job.Cluster, ck.Job.JobID, a.Config.Node),
		GoneAfter:       max(3*a.Config.Interval, 10*time.Second),
		Checkpoint: func(s *monitor.NodeState, _ jobmodel.Node) error {
			return f.saveCheckpoint(ck)
		},
		Now: a.Now,
	}
	mon := monitor.New(opts, src, a.Outputs, a.Health, ck.Node, ck.State, a.Log)
	var reason monitor.StopReason
	if a.sched != nil {
		reason = a.sched.Watch(ctx, mon)
		a.snd.Flush() // the running node document lands before the final one
	} else {
		reason = mon.Run(ctx)
	}
	a.Log.Info("stopped sampling", "job_id", jobID, "reason", string(reason), "samples", ck.State.Count)
}

// DefaultEndPoll is how often an agent with nothing to sample asks Slurm
// whether its job has ended.
const DefaultEndPoll = 30 * time.Second

// waitForEnd waits, without sampling, until ctx ends (the epilog's stop) or
// Slurm says the job has ended or no longer knows it: processes started
// from a SPANK hook outlive the job, so the agent must end by itself when
// no epilog comes.
func (a *Agent) waitForEnd(ctx context.Context, job jobmodel.Job) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(cmp.Or(a.EndPoll, DefaultEndPoll)):
		}
		got, err := a.Slurm.Lookup(ctx, job.Cluster, job.SlurmJobID, uidOf(job))
		if (err != nil && errors.Is(err, slurm.ErrJobNotFound)) || (err == nil && terminal(got.State)) {
			a.Log.Info("job ended without an epilog stop; finishing", "job_id", job.SlurmJobID)
			return
		}
	}
}

// Stop ends the agent watching jobID: it signals the running agent, or, when
// none runs (it crashed or was killed), finalizes the job from the last
// checkpoint, marking this node's data as lost after that point.
func (a *Agent) Stop(ctx context.Context, jobID uint64) error {
	started := a.now()
	if a.sched == nil {
		defer func() { a.logUsage(a.now().Sub(started), 0) }()
	}
	f := jobFiles(a.Config.StateDir, a.Config.Cluster, a.Config.Node, jobID)
	if err := ensureStateDirs(a.Config.StateDir); err != nil {
		return err
	}
	_ = writeAtomic(f.stopped(), []byte("stop\n"))
	release, ok, err := f.tryLock()
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("job %d is being watched here; its watch ends on its own stop", jobID)
	}
	defer release()
	// Which job Slurm means now: a checkpoint here may be an earlier
	// job's with this id (Slurm reuses ids, and slurmd skips the prolog of
	// a reused id it still remembers, so no agent ever started for this
	// one). One controller call, on this no-agent path only.
	job := a.lookup(ctx, jobID, 0)
	if err := a.finishOlder(ctx, f, job); err != nil {
		return err
	}
	ck, err := f.loadCheckpoint()
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			a.Log.Warn("unreadable checkpoint; finalizing without it", "err", err)
		}
		if f.isDone(timeOf(job.SubmitTime)) {
			// Finalized already (its agent ended by itself): the marker
			// must not outlive this stop, or a later job reusing the id
			// would be taken as ended before it began.
			_ = os.Remove(f.stopped())
			return nil
		}
		job.DocID = a.Outputs.ResolveDocID(ctx, job.DocID, timeOf(job.SubmitTime), a.now())
		ck = &Checkpoint{Job: job, Node: nodeTemplate(job, a.Config.Node), Leader: isLeader(job, a.Config.Node),
			State: monitor.NewNodeState(a.now(), a.Config.Interval, a.Config.ActiveThresholdCores)}
	}
	a.Log.Warn("no running agent for the job; finalizing from its checkpoint", "job_id", jobID, "samples", ck.State.Count)
	return a.finalize(ctx, ck, jobmodel.AgentLost, f)
}

// finishOlder finalizes, as lost, a job that had this job's id on this
// node before and whose agent died without a stop (its checkpoint has
// another submit time). Its documents get what its agent sampled and no
// longer say RUNNING; this job starts with nothing of it.
func (a *Agent) finishOlder(ctx context.Context, f files, job jobmodel.Job) error {
	ck, err := f.loadCheckpoint()
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			a.Log.Warn("unreadable checkpoint of an earlier agent; removing it", "err", err)
			_ = os.Remove(f.checkpoint())
		}
		return nil
	}
	older, mine := timeOf(ck.Job.SubmitTime), timeOf(job.SubmitTime)
	if older.IsZero() || mine.IsZero() || older.Equal(mine) {
		return nil // this job's own checkpoint (a restarted agent), or unknowable
	}
	a.Log.Warn("an earlier job with this id left a checkpoint and no final documents; finalizing it as lost",
		"job_id", job.SlurmJobID, "earlier_submit", older, "submit", mine, "earlier_doc_id", ck.Job.DocID)
	if ck.Job.EndTime == nil && !ck.State.LastSample.IsZero() {
		// Slurm no longer knows it: it ended, at the latest, when its
		// agent last saw it.
		ck.Job.EndTime = jobmodel.At(ck.State.LastSample)
	}
	a.finalDocs(ctx, ck, jobmodel.AgentLost, f)
	return nil
}

// finalize writes the final node document and, on the leader node, the
// final job document assembled from all node documents.
func (a *Agent) finalize(ctx context.Context, ck *Checkpoint, agentState string, f files) error {
	a.finalDocs(ctx, ck, agentState, f)
	if a.sched != nil {
		return nil // the node agent delivers the spool and logs its use
	}
	a.linger(ctx)
	if agentState != jobmodel.AgentLost { // stop logs its own use
		a.logUsage(a.now().Sub(ck.State.Started), ck.State.Count)
	}
	return nil
}

// finalDocs writes the final node document and, on the leader node, the
// final job document, and marks the job done on this node.
func (a *Agent) finalDocs(ctx context.Context, ck *Checkpoint, agentState string, f files) {
	if a.sched == nil {
		a.cpuAtFinalize = ReadSelfUsage().CPU
	}
	end := a.now()
	if agentState == jobmodel.AgentLost && !ck.State.LastSample.IsZero() {
		end = ck.State.LastSample
	}
	node := ck.Node
	ck.State.Fill(&node, end)
	a.applyEmissions(ctx, &node.Usage)
	node.AgentState = agentState
	node.Final = true
	node.UpdatedAt = jobmodel.At(a.now())
	if err := a.Outputs.PutNode(ctx, node); err != nil {
		a.Log.Warn("writing final node document; spooled", "err", err)
	}
	if ck.Leader {
		job := a.finalJob(ctx, ck.Job)
		nodes := a.nodeDocs(ctx, job, node)
		jobmodel.Assemble(&job, nodes)
		jobmodel.PeakAtLimitIfOOM(&job, nodes)
		job.Final = true
		job.UpdatedAt = jobmodel.At(a.now())
		a.writeFinal(ctx, &job)
		a.Log.Info("job finalized", "doc_id", job.DocID, "state", job.State, "missing", job.MissingMetrics)
	}
	a.Outputs.Replay(ctx)
	f.markDone(timeOf(ck.Job.SubmitTime))
}

// writeFinal runs the post-job analysis on a final job document, stores it
// in the document, and writes the document and its results-index entry
// (spooled when the store does not take them).
func (a *Agent) writeFinal(ctx context.Context, job *jobmodel.Job) {
	at := a.now()
	an := analysis.AnalyzeJob(*job, at, a.Config.Analysis)
	job.Analysis = &an
	a.Log.Info("job analysed", "doc_id", job.DocID, "class", an.Class, "causes", len(an.Causes),
		"analysis_seconds", a.now().Sub(at).Seconds())
	if err := a.Outputs.PutJob(ctx, *job); err != nil {
		a.Log.Warn("writing final job document; spooled", "err", err)
	}
	if err := a.Outputs.PutResult(ctx, jobmodel.NewResult(*job, an, *jobmodel.At(at))); err != nil {
		a.Log.Warn("writing analysis result; spooled", "err", err)
	}
}

// linger keeps delivering what waits in the spool for up to spool.linger
// after the job's final documents (retrying after 5, 10, 20, 30, 30 … s),
// so they arrive when a store comes back even if no other job ever
// starts on this node; what is still there after that waits for the next
// agent.
func (a *Agent) linger(ctx context.Context) {
	if a.Config.Spool.Linger <= 0 || a.Outputs.Pending() == 0 {
		return
	}
	deadline := a.now().Add(a.Config.Spool.Linger)
	wait := cmp.Or(a.LingerPoll, 5*time.Second)
	a.Log.Info("delivering what waits in the spool before exiting", "items", a.Outputs.Pending(), "for_at_most", a.Config.Spool.Linger)
	for a.Outputs.Pending() > 0 && a.now().Before(deadline) && ctx.Err() == nil {
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		a.Outputs.Replay(ctx)
		wait = min(2*wait, 30*time.Second)
	}
	if n := a.Outputs.Pending(); n > 0 {
		a.Log.Warn("exiting with items still in the spool; the next agent on the node delivers them", "items", n)
	}
}

// logUsage logs what this agent process used, for operators and for
// cmd/jobsight-bench, which adds up every agent process of a job.
func (a *Agent) logUsage(wall time.Duration, samples int64) {
	self := ReadSelfUsage()
	args := []any{"cpu_seconds", self.CPU.Seconds(), "child_cpu_seconds", self.ChildCPU.Seconds(),
		"wall_seconds", wall.Seconds(), "core_percent", self.CorePercent(wall), "max_rss_bytes", self.MaxRSSBytes,
		"anon_rss_bytes", self.AnonRSSBytes, "file_rss_bytes", self.FileRSSBytes, "samples", samples}
	if a.CPUAtMain > 0 && a.cpuAtWatch > 0 && a.cpuAtFinalize > 0 {
		args = append(args, "cpu_startup_seconds", a.CPUAtMain.Seconds(), "cpu_setup_seconds", (a.cpuAtWatch - a.CPUAtMain).Seconds(),
			"cpu_watch_seconds", (a.cpuAtFinalize - a.cpuAtWatch).Seconds(), "cpu_finalize_seconds", (self.CPU - a.cpuAtFinalize).Seconds())
	}
	a.Log.Info("agent resource use", args...)
}

// finalJob waits (up to slurm.final_state_wait) for Slurm to report the
// job's final state, keeping the start-time metadata where the final lookup
// has less. It asks again after 1, 2, 4 … 30 s: a job is usually final by
// the first or second call, and a large job's many ends must not hammer
// slurmctld.
func (a *Agent) finalJob(ctx context.Context, job jobmodel.Job) jobmodel.Job {
	deadline := a.now().Add(a.Config.Slurm.FinalStateWait)
	wait := cmp.Or(a.FinalPoll, time.Second)
	for {
		got, err := a.Slurm.Lookup(ctx, job.Cluster, job.SlurmJobID, uidOf(job))
		if err == nil && !sameSubmit(got, job) {
			// Slurm's job of this id is another (a reused id): this
			// one it no longer knows.
			err = fmt.Errorf("job %d now names a job submitted at %s: %w", job.SlurmJobID, timeOf(got.SubmitTime), slurm.ErrJobNotFound)
		}
		if err == nil && terminal(got.State) {
			got.DocID, got.Source = job.DocID, job.Source
			got.MissingMetrics = job.MissingMetrics
			return got
		}
		hopeless := errors.Is(err, slurm.ErrAmbiguous) || errors.Is(err, slurm.ErrJobNotFound)
		if hopeless || a.now().After(deadline) || ctx.Err() != nil {
			if err != nil {
				a.Log.Warn("no final state from Slurm", "err", err)
			}
			job.State = jobmodel.StateUnknown
			if job.EndTime == nil {
				job.EndTime = jobmodel.At(a.now())
			}
			return job
		}
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
		wait = min(2*wait, 30*time.Second)
	}
}

// sameSubmit reports whether two views of a job id are the same job: their
// submit times agree, or one is unknown.
func sameSubmit(a, b jobmodel.Job) bool {
	x, y := timeOf(a.SubmitTime), timeOf(b.SubmitTime)
	return x.IsZero() || y.IsZero() || x.Equal(y)
}

// nodeDocs gathers the final node documents of every node of the job,
// waiting up to slurm.final_state_wait for the other nodes' agents. This
// node's own document is taken from memory (the store may be down).
func (a *Agent) nodeDocs(ctx context.Context, job jobmodel.Job, own jobmodel.Node) []jobmodel.Node {
	if len(job.Nodes) <= 1 {
		return []jobmodel.Node{own}
	}
	deadline := a.now().Add(a.Config.Slurm.FinalStateWait)
	for {
		stored, err := a.Outputs.NodeDocs(ctx, job.DocID)
		byNode := map[string]jobmodel.Node{}
		for _, n := range stored {
			byNode[n.Node] = n
		}
		byNode[own.Node] = own
		complete := true
		for _, name := range job.Nodes {
			if n, ok := byNode[name]; !ok || !n.Final {
				complete = false
			}
		}
		if complete || err != nil || a.now().After(deadline) || ctx.Err() != nil {
			out := make([]jobmodel.Node, 0, len(byNode))
			for _, n := range byNode {
				out = append(out, n)
			}
			return out
		}
		select {
		case <-ctx.Done():
		case <-time.After(2 * time.Second):
		}
	}
}

// lookup asks Slurm about the job, retrying briefly; without an answer the
// job document carries only what the agent knows and names slurm_metadata
// as missing.
func (a *Agent) lookup(ctx context.Context, jobID uint64, uid uint32) jobmodel.Job {
	var err error
	for try := 0; try < 3; try++ {
		var job jobmodel.Job
		if job, err = a.Slurm.Lookup(ctx, a.Config.Cluster, jobID, uid); err == nil {
			job.Source = jobmodel.SourceSlurm
			if job.State == "" || !terminal(job.State) {
				job.State = jobmodel.StateRunning
			}
			return job
		}
		select {
		case <-ctx.Done():
			try = 3
		case <-time.After(time.Second):
		}
	}
	a.Log.Warn("no job metadata from Slurm", "job_id", jobID, "err", err)
	id := jobmodel.Identity{Cluster: a.Config.Cluster, JobID: jobID}
	job := jobmodel.Job{
		DocID: id.DocID(), SchemaVersion: jobmodel.SchemaVersion, Source: jobmodel.SourceSlurm,
		Cluster: id.Cluster, JobID: id.Key(), SlurmJobID: jobID, State: jobmodel.StateRunning,
		Nodes: []string{a.Config.Node}, NodeCount: 1, AgentVersion: Version,
		MissingMetrics: []string{"slurm_metadata"},
	}
	if uid != 0 {
		job.UID = jobmodel.Ptr(uid)
	}
	return job
}

// nodeTemplate is the node document's identity and metadata.
func nodeTemplate(job jobmodel.Job, node string) jobmodel.Node {
	return jobmodel.Node{
		DocID: jobmodel.NodeDocID(job.DocID, node), JobDocID: job.DocID,
		SchemaVersion: jobmodel.SchemaVersion, Source: job.Source, Cluster: job.Cluster,
		JobID: job.JobID, SlurmJobID: job.SlurmJobID, Node: node, User: job.User, UID: job.UID,
		SubmitTime: job.SubmitTime, AgentVersion: Version, AgentState: jobmodel.AgentRunning,
	}
}

// Labels are the labels of a job's series: cluster, job_id, node.
func Labels(cluster, jobKey, node string) []monitor.Label {
	return []monitor.Label{{Name: "cluster", Value: cluster}, {Name: "job_id", Value: jobKey}, {Name: "node", Value: node}}
}

// isLeader: the first node of the job assembles the job document.
func isLeader(job jobmodel.Job, node string) bool {
	return len(job.Nodes) == 0 || job.Nodes[0] == node
}

func terminal(state string) bool {
	switch state {
	case "", jobmodel.StateRunning, "PENDING", "CONFIGURING", "COMPLETING", "SUSPENDED", "REQUEUED", "RESIZING", "SIGNALING", "STAGE_OUT":
		return false
	}
	return true
}

func uidOf(job jobmodel.Job) uint32 {
	if job.UID == nil {
		return 0
	}
	return *job.UID
}

func timeOf(t *jobmodel.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.Time
}
