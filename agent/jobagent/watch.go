package jobagent

// The job watch: one Slurm job on this node, from the job prolog's `start`
// to its final documents. `start` takes the job's lock so that exactly one
// watch runs per job and node, samples until the job ends (its stop, or
// its cgroup vanishes) and finalizes; `stop` (the job epilog's) ends the
// watch, or — when the agent died, or none ever started — finalizes the
// job from its last checkpoint, so that the job document still gets a
// final state and says what is missing.
//
// A watch runs under a host (watchHost): the node agent (node.go), whose
// one timer samples every job, or a process of its own (ownProcess, at the
// end of this file: Agent.Start, StartJob and Stop, for tests and tools).

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync/atomic"
	"time"

	"github.com/jobsight/jobsight/agent/collector"
	"github.com/jobsight/jobsight/agent/monitor"
	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/internal/slurm"
)

// A watchHost is what a job watch runs in; what it does is the one thing
// that differs between a job watched by the node agent and one watched by
// a process of its own.
type watchHost interface {
	// drive samples mon until ctx ends or the job is gone, and says why
	// it stopped; what mon produced has been delivered or spooled.
	drive(ctx context.Context, mon *monitor.Monitor) monitor.StopReason
	// watching and finalizing mark where the watch is: set up, about to
	// sample; about to write final documents.
	watching()
	finalizing()
	// finished follows a job's final documents.
	finished(ctx context.Context, ck *Checkpoint, agentState string)
}

// jobWatch is one job's life cycle on this node: its files (lock,
// checkpoint, markers), its sampling and its documents.
type jobWatch struct {
	a     *Agent
	host  watchHost
	jobID uint64
	f     files
	// nodes is the job's allocation as slurmd named it to the prolog or
	// epilog (the request's SLURM_JOB_NODELIST); nil when not given.
	nodes []string
	// claim, when not nil, brings the answer of the job's claim on the
	// store (its document id, its running document written), which the
	// watch did not wait for: the store was slow (newCheckpoint).
	claim chan claimAnswer
}

// claimAnswer is what Outputs.ClaimDocID answered.
type claimAnswer struct {
	id  string
	err error
}

func newJobWatch(a *Agent, host watchHost, req Request) *jobWatch {
	w := &jobWatch{a: a, host: host, jobID: req.JobID, f: a.jobFiles(req.JobID)}
	if req.Nodes != "" {
		nodes, err := slurm.ExpandHostlist(req.Nodes)
		if err != nil || len(nodes) == 0 {
			a.Log.Warn("ignoring the request's node list; Slurm's answer names the job's nodes", "job_id", req.JobID,
				"nodes", fmt.Sprintf("%.80q", req.Nodes), "err", err)
		} else {
			w.nodes = nodes
		}
	}
	return w
}

// start watches the job until it ends (ctx is cancelled by the job's
// stop, or the job's cgroup vanishes), then finalizes it. If another
// watch of the job runs already, start returns at once. A checkpoint of
// the same job (an earlier agent died while watching it) is resumed: its
// samples are kept and the time without any is recorded as a gap.
func (w *jobWatch) start(ctx context.Context, req Request) error {
	a := w.a
	release, ok, err := w.f.tryLock()
	if err != nil {
		return err
	}
	if !ok {
		a.Log.Info("another agent already watches this job", "job_id", w.jobID)
		return nil
	}
	defer release()
	started := a.now()
	// ctx ends the watch (the job's stop); looking the job up and
	// writing its documents must not end with it.
	lctx := context.WithoutCancel(ctx)

	var job jobmodel.Job
	var early *earlyWatch // sampling the job before Slurm said which it is
	if ho := w.handedOver(req); ho != nil {
		// A job its last agent handed over a moment ago (an upgrade):
		// running then, and Slurm is not asked again for every job of
		// every node being upgraded at once.
		job = ho.Job
	} else {
		job, early = w.identify(ctx, lctx, req)
	}
	// The job's SLUID: the prolog's SLURM_JOB_SLUID, else squeue's (one
	// that is not a SLUID is passed over, with a warning).
	job.SLUID = w.sluid(req.SLUID, "", job.SLUID)
	if w.f.isDone(timeOf(job.SubmitTime)) {
		early.abandon()
		a.Log.Info("job already finalized on this node", "job_id", w.jobID)
		return nil
	}
	ck := w.leftBehind(lctx, job)
	if ck != nil && ck.Finalized != nil {
		early.abandon()
		a.Log.Warn("the job's final documents were not safe when they were made; writing them again", "job_id", w.jobID)
		return w.finalize(context.Background(), ck, ck.Finalized.AgentState)
	}
	var ckSLUID string // an earlier agent's, kept if its checkpoint is begun anew
	if ck != nil {
		ckSLUID = ck.SLUID
	}
	if ck != nil && ck.State.Count > 0 {
		// An earlier agent's samples of the job: they go on from its
		// checkpoint, not from this agent's first seconds.
		early.abandon()
		early = nil
		if terminal(job.State) || stopped(ctx) || w.f.stopAsked(timeOf(job.StartTime)) {
			if ck.handedOverRecently(started) {
				a.Log.Info("the job ended during a handover; finalizing from its checkpoint", "job_id", w.jobID, "samples", ck.State.Count)
				return w.finalize(context.Background(), ck, jobmodel.AgentFinished)
			}
			a.Log.Warn("the job ended while no agent watched it; finalizing from its checkpoint", "job_id", w.jobID, "samples", ck.State.Count)
			return w.finalize(context.Background(), ck, jobmodel.AgentLost)
		}
		gap := started.Sub(ck.State.LastSample)
		if ck.HandedOver != nil && gap <= 2*a.Config.Interval {
			// An upgrade's handover: the samples go on within two
			// intervals, as if one agent had taken them.
			a.Log.Info("resuming a job handed over by the previous agent", "job_id", w.jobID, "samples", ck.State.Count, "gap_seconds", gap.Seconds())
		} else {
			ck.State.NoteGap(started)
			a.Log.Warn("resuming a job after an agent restart", "job_id", w.jobID, "samples", ck.State.Count, "gap_seconds", gap.Seconds())
		}
		ck.HandedOver = nil
	} else {
		ck = w.newCheckpoint(lctx, job, started, true)
		ck.GPUs, ck.GPUsGiven, ck.Nodes = req.GPUs, req.GPUsGiven, req.Nodes
	}
	// A checkpoint left behind is this job's (leftBehind): its SLUID, if
	// any, is the job's, and stands in where neither the prolog nor squeue
	// gave one.
	ck.SLUID = w.sluid(job.SLUID, ckSLUID, "")
	handedOver := false
	if early != nil {
		// Its first checkpoint comes with the monitor's first flush.
		handedOver = w.continueEarly(ck, early)
	} else {
		w.host.watching()
		_ = w.f.saveCheckpoint(ck)
		if w.f.stopAsked(timeOf(ck.Job.StartTime)) {
			a.Log.Info("job ended before the agent started; finalizing", "job_id", w.jobID)
		} else {
			handedOver = w.watch(ctx, cmp.Or(uidOf(ck.Job), req.UID), ck)
		}
	}
	w.settleClaim(ck)
	if handedOver && !w.f.stopAsked(timeOf(ck.Job.StartTime)) {
		// The job goes on under the new agent: its checkpoint, written
		// durably, holds every sample so far, and no final documents are
		// made here.
		ck.HandedOver = jobmodel.At(a.now())
		if err := w.f.saveCheckpoint(ck); err != nil {
			a.Log.Error("handover: the job's checkpoint was not written; finalizing it here", "job_id", w.jobID, "err", err)
			return w.finalize(context.Background(), ck, jobmodel.AgentFinished)
		}
		a.Log.Info("job handed over", "job_id", w.jobID, "samples", ck.State.Count)
		return nil
	}
	return w.finalize(context.Background(), ck, jobmodel.AgentFinished)
}

// handingOver: ctx ended because the node agent hands its jobs over to a
// new agent (an upgrade), not because the job stopped.
func handingOver(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), monitor.ErrHandover)
}

// stopped: ctx ended because the job's stop came (or a signal ended the
// agent), not because of a handover.
func stopped(ctx context.Context) bool { return ctx.Err() != nil && !handingOver(ctx) }

// handedOver is the checkpoint of a job the previous agent handed over,
// for the successor's resumed request; nil otherwise.
func (w *jobWatch) handedOver(req Request) *Checkpoint {
	if !req.resumed {
		return nil
	}
	ck, err := w.f.loadCheckpoint()
	if err != nil || !ck.handedOverRecently(w.a.now()) || ck.Finalized != nil || ck.Job.DocID == "" {
		return nil
	}
	return ck
}

// HandoverFresh bounds how long after its handover a checkpoint is taken
// for a running job without asking Slurm (the successor starts within
// seconds; an exec that failed, or a node that went down mid-handover,
// leaves one older, and Slurm is asked then).
const HandoverFresh = time.Minute

// handedOverRecently: the checkpoint's agent handed the job over less
// than HandoverFresh before now.
func (c *Checkpoint) handedOverRecently(now time.Time) bool {
	return c.HandedOver != nil && now.Sub(c.HandedOver.Time) < HandoverFresh && !now.Before(c.HandedOver.Time.Add(-time.Minute))
}

// stop finalizes the job when no watch of it runs here (its agent crashed
// or was killed, or none ever started), from its last checkpoint, marking
// this node's data as lost after that point. While a watch runs, the stop
// marker it leaves tells that watch, and stop returns an error.
func (w *jobWatch) stop(ctx context.Context) error {
	a := w.a
	if err := ensureStateDirs(a.Config.StateDir); err != nil {
		return err
	}
	w.f.recordStop()
	release, ok, err := w.f.tryLock()
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("job %d is being watched here; its watch ends on its own stop", w.jobID)
	}
	defer release()
	// Which job Slurm means now: a checkpoint here may be an earlier
	// job's with this id (Slurm reuses ids, and slurmd skips the prolog of
	// a reused id it still remembers, so no agent ever started for this
	// one). One controller call, on this no-agent path only.
	job := w.lookup(ctx, 0, nil)
	ck := w.leftBehind(ctx, job)
	if ck == nil {
		if w.f.isDone(timeOf(job.SubmitTime)) {
			// Finalized already (its agent ended by itself): the marker
			// must not outlive this stop, or a later job reusing the id
			// would be taken as ended before it began.
			_ = os.Remove(w.f.stopped())
			return nil
		}
		ck = w.newCheckpoint(ctx, job, a.now(), false)
	}
	if ck.handedOverRecently(a.now()) {
		// It ended while its agent handed it over (an upgrade): watched to
		// seconds before its end, not lost.
		a.Log.Info("the job ended during a handover; finalizing from its checkpoint", "job_id", w.jobID, "samples", ck.State.Count)
		return w.finalize(ctx, ck, jobmodel.AgentFinished)
	}
	a.Log.Warn("no running agent for the job; finalizing from its checkpoint", "job_id", w.jobID, "samples", ck.State.Count)
	return w.finalize(ctx, ck, jobmodel.AgentLost)
}

// lookup asks Slurm about the job, retrying briefly; without an answer the
// job document carries only what the agent knows and names slurm_metadata
// as missing. job.SLUID is the job's SLUID where Slurm gave one
// (unchecked).
func (w *jobWatch) lookup(ctx context.Context, uid uint32, keepTrying func() bool) (job jobmodel.Job) {
	a := w.a
	var err error
	giveUp := a.now().Add(cmp.Or(a.LookupPatience, DefaultLookupPatience))
	for try := 0; ; try++ {
		job, err = a.Slurm.Lookup(ctx, a.Config.Cluster, w.jobID, uid)
		if err == nil {
			job.Source = jobmodel.SourceSlurm
			if job.State == "" || !terminal(job.State) {
				job.State = jobmodel.StateRunning
			}
			w.allocated(&job, true)
			return job
		}
		// Three tries a second apart; then, for a job sampled without its
		// metadata (keepTrying), after 10, 20 and 40 s, up to the
		// patience, even once the job has ended: a slurmctld too busy to
		// answer for a minute must not cost the job its identity (an
		// array task's id) for good, and every node asking every few
		// seconds would keep it busy.
		if try >= 2 && (keepTrying == nil || !keepTrying() || !a.now().Before(giveUp) || errors.Is(err, slurm.ErrJobNotFound)) {
			break
		}
		pause := time.Second
		if try >= 2 {
			pause = min(10*time.Second<<min(try-2, 6), giveUp.Sub(a.now()))
		}
		select {
		case <-ctx.Done():
		case <-time.After(pause):
		}
		if ctx.Err() != nil {
			break
		}
	}
	a.Log.Warn("no job metadata from Slurm", "job_id", w.jobID, "err", err)
	id := jobmodel.Identity{Cluster: a.Config.Cluster, JobID: w.jobID}
	job = jobmodel.Job{
		DocID: id.DocID(), SchemaVersion: jobmodel.SchemaVersion, Source: jobmodel.SourceSlurm,
		Cluster: id.Cluster, JobID: id.Key(), SlurmJobID: w.jobID, State: jobmodel.StateRunning,
		Nodes: []string{a.Config.Node}, NodeCount: 1, AgentVersion: Version,
		MissingMetrics: []string{"slurm_metadata"},
	}
	if uid != 0 {
		job.UID = jobmodel.Ptr(uid)
	}
	w.allocated(&job, false)
	return job
}

// allocated sets the job's nodes to slurmd's list where the request gave
// one and it holds every node of Slurm's answer (answered) — it does for
// the allocation, while Slurm's answer for a completing job lists only the
// nodes still completing — or where Slurm gave no answer, in which case
// this node alone would be taken for the job's nodes (and for its first
// one). A list that misses a node of Slurm's answer is a job step's: a
// prolog run at a job's first step on a node (no PrologFlags=Alloc) gets
// that step's nodes; Slurm's list stands then.
func (w *jobWatch) allocated(job *jobmodel.Job, answered bool) {
	if len(w.nodes) == 0 {
		return
	}
	if answered && slices.ContainsFunc(job.Nodes, func(n string) bool { return !slices.Contains(w.nodes, n) }) {
		return
	}
	job.Nodes, job.NodeCount = slices.Clone(w.nodes), len(w.nodes)
}

// allocation is the job's node list at its end: the list it started with
// (slurmd's, or Slurm's while the job ran), in its order, and any node
// only the final answer names. Slurm's answer for a COMPLETING job —
// terminal state, flag COMPLETING — names only the nodes that have not yet
// finished their epilog (squeue(1), %N), so the final answer alone can
// drop the nodes that ended first.
func allocation(start, final []string) []string {
	out := slices.Clone(start)
	for _, n := range final {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// sluid picks the SLUID the job's cgroup is looked for by: the start
// request's (SLURM_JOB_SLUID from the prolog), else the checkpoint's (an
// earlier agent's), else Slurm's answer (squeue's step_id.sluid). One that
// is not a SLUID is passed over with a warning: it would name a path.
func (w *jobWatch) sluid(request, checkpoint, squeue string) string {
	for _, c := range []struct{ from, sluid string }{{"start request", request}, {"checkpoint", checkpoint}, {"squeue", squeue}} {
		switch {
		case c.sluid == "":
		case collector.ValidSLUID(c.sluid):
			return c.sluid
		default:
			w.a.Log.Warn("ignoring a SLUID that is not one", "job_id", w.jobID, "from", c.from, "sluid", fmt.Sprintf("%.40q", c.sluid))
		}
	}
	return ""
}

// leftBehind returns this job's checkpoint, left by an earlier agent that
// died while watching it, or nil. Slurm reuses ids: a checkpoint of an
// older job with this id (another submit time), whose agent died and
// whose stop never came, is finalized as that job's, lost — its documents
// get what its agent sampled and no longer say RUNNING — and nothing of it
// is this job's. An unreadable checkpoint is removed.
func (w *jobWatch) leftBehind(ctx context.Context, job jobmodel.Job) *Checkpoint {
	ck, err := w.f.loadCheckpoint()
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			w.a.Log.Warn("unreadable checkpoint of an earlier agent; removing it", "err", err)
			w.f.removeCheckpoint()
		}
		return nil
	}
	if sameJob(ck.Job, job) {
		return ck // this job's own (a restarted agent), or unknowable
	}
	w.a.Log.Warn("an earlier job with this id left a checkpoint and no final documents; finalizing it as lost",
		"job_id", job.SlurmJobID, "earlier_submit", timeOf(ck.Job.SubmitTime), "submit", timeOf(job.SubmitTime), "earlier_doc_id", ck.Job.DocID)
	if ck.Job.EndTime == nil && !ck.State.LastSample.IsZero() {
		// Slurm no longer knows it: it ended, at the latest, when its
		// agent last saw it.
		ck.Job.EndTime = jobmodel.At(ck.State.LastSample)
	}
	w.finalDocs(ctx, ck, jobmodel.AgentLost)
	return nil
}

// newCheckpoint begins the checkpoint of a job this node has none of, at
// at. The outputs decide the id its documents go under (a reused Slurm id
// gets a new one); with writeRunning, the job's first node also writes its
// running job document.
func (w *jobWatch) newCheckpoint(ctx context.Context, job jobmodel.Job, at time.Time, writeRunning bool) *Checkpoint {
	a := w.a
	leader := isLeader(job, a.Config.Node)
	running := job
	running.UpdatedAt = jobmodel.At(at)
	answer := make(chan claimAnswer, 1)
	go func() {
		id, err := a.Outputs.ClaimDocID(ctx, running, at, writeRunning && leader)
		answer <- claimAnswer{id, err}
	}()
	// A job's first sample waits for the claim at most ClaimWait: a slow
	// store (a request taking seconds, a new agent's index checks) kept
	// jobs from being sampled for their first minute (see the findings in
	// agent/collector/README.md). The claim is never given up: it goes on,
	// and the job's final documents wait for it (settleClaim), so its
	// running document cannot land after the final one. Until then the
	// job's documents carry its plain id, which every write resolves
	// again (a reused id gets its reuse id then).
	var wait <-chan time.Time
	if writeRunning {
		wait = time.After(cmp.Or(a.ClaimWait, DefaultClaimWait))
	}
	select {
	case c := <-answer:
		job.DocID = w.claimed(c)
	case <-wait:
		a.Log.Info("the store is slow to answer: sampling begins before the job's document is claimed", "job_id", w.jobID,
			"waited", cmp.Or(a.ClaimWait, DefaultClaimWait))
		w.claim = answer
	}
	return &Checkpoint{Job: job, Node: nodeTemplate(job, a.Config.Node), Leader: leader,
		State: monitor.NewNodeState(at, a.Config.Interval, a.Config.ActiveThresholdCores)}
}

// DefaultClaimWait is how long a job's first sample waits for the store's
// answer to the job's claim (Agent.ClaimWait sets another).
const DefaultClaimWait = 2 * time.Second

// claimed is the id a claim answered, its failure logged.
func (w *jobWatch) claimed(c claimAnswer) string {
	if c.err != nil {
		w.a.Log.Warn("writing running job document; spooled", "job_id", w.jobID, "err", c.err)
	}
	return c.id
}

// settleClaim waits for a claim the watch did not wait for and takes its
// id into the checkpoint: before the job's final documents (the running
// one must be written, or spooled, first) and before a handover (the
// process is replaced).
func (w *jobWatch) settleClaim(ck *Checkpoint) {
	if w.claim == nil {
		return
	}
	id := w.claimed(<-w.claim)
	w.claim = nil
	if id != "" && id != ck.Job.DocID {
		ck.Job.DocID = id
		ck.Node.DocID, ck.Node.JobDocID = jobmodel.NodeDocID(id, ck.Node.Node), id
	}
}

// watch samples the job until ctx ends or the job is gone. handedOver:
// it stopped for a handover, the job still running as far as it saw.
func (w *jobWatch) watch(ctx context.Context, uid uint32, ck *Checkpoint) (handedOver bool) {
	a := w.a
	target := collector.Target{JobID: w.jobID, UID: uid, SLUID: ck.SLUID, Host: a.Config.Node}
	if a.Energy != nil {
		ck.State.EnableEnergy() // even without a cgroup: energy is then named missing
	}
	src, err := w.sources(ctx, target, ck.State, ck.GPUs, ck.GPUsGiven)
	if err != nil {
		a.addGPU(nil, target, ck.State, ck.GPUs, ck.GPUsGiven) // a job holding GPUs says they are missing
		if ctx.Err() == nil {
			a.Log.Warn("no cgroup for the job; its usage will be missing", "job_id", w.jobID, "err", err)
			if w.waitForEnd(ctx, ck.Job) {
				return false
			}
		}
		return handingOver(ctx)
	}
	defer src.Close()
	ckw := newCheckpointWriter(w.f, a.now)
	defer ckw.close()
	opts := w.monitorOptions()
	opts.Labels = Labels(ck.Job.Cluster, ck.Job.JobID, a.Config.Node, ck.Job.SubmitTime)
	opts.Checkpoint = func(*monitor.NodeState, jobmodel.Node) error { return ckw.save(ck) }
	mon := monitor.New(opts, src, a.Outputs, a.Health, ck.Node, ck.State, a.Log)
	reason := w.host.drive(ctx, mon)
	a.Log.Info("stopped sampling", "job_id", w.jobID, "reason", string(reason), "samples", ck.State.Count)
	return reason == monitor.StopHandedOver
}

// sources opens the job's collectors (its cgroup, its GPUs, the node's
// energy), state taking what they need to keep.
func (w *jobWatch) sources(ctx context.Context, target collector.Target, state *monitor.NodeState, gpus string, gpusGiven bool) (collector.Collector, error) {
	a := w.a
	src, err := a.Sources(ctx, target)
	if err != nil {
		return nil, err
	}
	if set, ok := src.(collector.Set); ok {
		src = a.addGPU(set, target, state, gpus, gpusGiven)
	}
	return a.addEnergy(src, state), nil
}

// monitorOptions are a job's monitor options but its labels and
// checkpoint.
func (w *jobWatch) monitorOptions() monitor.Options {
	a := w.a
	return monitor.Options{
		Interval:        a.Config.Interval,
		FlushInterval:   a.Config.FlushInterval,
		PushInterval:    a.Config.Prometheus.PushInterval,
		ActiveThreshold: a.Config.ActiveThresholdCores,
		GoneAfter:       max(3*a.Config.Interval, 10*time.Second),
		Now:             a.Now,
	}
}

// DefaultLookupWait is how long a job's first sample waits for Slurm's
// answer about the job (Agent.LookupWait sets another); then the job is
// sampled while the agent keeps asking, for up to DefaultLookupPatience
// (Agent.LookupPatience), and its series and documents wait for the
// answer.
const (
	DefaultLookupWait     = 2 * time.Second
	DefaultLookupPatience = 2 * time.Minute
)

// earlyWatch is a job sampled before Slurm said which job it is: its
// monitor held (monitor.Hold) on the node's timer.
type earlyWatch struct {
	mon  *monitor.Monitor
	src  collector.Collector
	stop context.CancelCauseFunc
	done chan monitor.StopReason
	// none: there is no early sampling (the job's cgroup could not be
	// opened). Until then the lookup goes on asking Slurm for the job's
	// identity, not only three times, unless the agent hands its jobs
	// over.
	none atomic.Bool
}

// errAbandoned ends an early watch whose samples are not wanted (the job
// was finalized already, or an earlier agent's checkpoint goes on).
var errAbandoned = errors.New("early sampling abandoned")

// identify asks Slurm which job this is. When the answer takes longer than
// LookupWait (slurmctld busy, or down), sampling begins meanwhile: a job
// of seconds otherwise ended before its first sample. The answer, or
// after LookupPatience the job as the agent alone knows it, is returned
// with the early watch (nil when the answer came in time, or the job's
// cgroup could not be opened).
func (w *jobWatch) identify(ctx, lctx context.Context, req Request) (jobmodel.Job, *earlyWatch) {
	a := w.a
	e := &earlyWatch{done: make(chan monitor.StopReason, 1)}
	answer := make(chan jobmodel.Job, 1)
	go func() { answer <- w.lookup(lctx, req.UID, func() bool { return !e.none.Load() && !handingOver(ctx) }) }()
	wait := cmp.Or(a.LookupWait, DefaultLookupWait)
	select {
	case job := <-answer:
		return job, nil
	case <-time.After(wait):
	}
	target := collector.Target{JobID: w.jobID, UID: req.UID, SLUID: w.sluid(req.SLUID, "", ""), Host: a.Config.Node}
	state := monitor.NewNodeState(a.now(), a.Config.Interval, a.Config.ActiveThresholdCores)
	if a.Energy != nil {
		state.EnableEnergy()
	}
	src, err := w.sources(ctx, target, state, req.GPUs, req.GPUsGiven)
	if err != nil {
		e.none.Store(true)
		a.Log.Debug("Slurm is slow to answer and the job's cgroup cannot be opened yet: sampling waits for Slurm", "job_id", w.jobID, "err", err)
		return <-answer, nil // watch() tries the cgroup again, and says so
	}
	a.Log.Info("Slurm is slow to answer: sampling begins before the job's metadata", "job_id", w.jobID, "waited", wait)
	e.src = src
	e.mon = monitor.New(w.monitorOptions(), src, a.Outputs, a.Health, jobmodel.Node{}, state, a.Log)
	e.mon.Hold()
	var ectx context.Context
	ectx, e.stop = context.WithCancelCause(ctx)
	w.host.watching()
	go func() { e.done <- w.host.drive(ectx, e.mon) }()
	return <-answer, e
}

// abandon ends an early watch and drops what it sampled.
func (e *earlyWatch) abandon() {
	if e == nil {
		return
	}
	e.stop(errAbandoned)
	<-e.done
	e.src.Close()
}

// continueEarly names the early watch's monitor with the job's identity
// and checkpoint, and waits for its end (as watch does). A job that ended
// before Slurm answered keeps its figures (the state) and its series (sent
// late, under the name Slurm gave).
func (w *jobWatch) continueEarly(ck *Checkpoint, e *earlyWatch) (handedOver bool) {
	a := w.a
	ckw := newCheckpointWriter(w.f, a.now)
	defer ckw.close()
	ck.State = e.mon.State // the monitor's until its watch ends
	e.mon.Name(monitor.Identity{
		Labels:     Labels(ck.Job.Cluster, ck.Job.JobID, a.Config.Node, ck.Job.SubmitTime),
		Doc:        ck.Node,
		Checkpoint: func(*monitor.NodeState, jobmodel.Node) error { return ckw.save(ck) },
	})
	reason := <-e.done
	e.src.Close()
	if e.mon.Late() {
		a.Log.Info("the job's watch ended before Slurm answered: its series went out once it had",
			"job_id", w.jobID, "samples", ck.State.Count)
	}
	a.Log.Info("stopped sampling", "job_id", w.jobID, "reason", string(reason), "samples", ck.State.Count)
	return reason == monitor.StopHandedOver
}

// DefaultEndPoll is how often an agent with nothing to sample asks Slurm
// whether its job has ended.
const DefaultEndPoll = 30 * time.Second

// waitForEnd waits, without sampling, until ctx ends (the epilog's stop) or
// Slurm says the job has ended or no longer knows it: processes started
// from a SPANK hook outlive the job, so the agent must end by itself when
// no epilog comes.
func (w *jobWatch) waitForEnd(ctx context.Context, job jobmodel.Job) (ended bool) {
	a := w.a
	for {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(cmp.Or(a.EndPoll, DefaultEndPoll)):
		}
		got, err := a.Slurm.Lookup(ctx, job.Cluster, job.SlurmJobID, uidOf(job))
		if (err != nil && errors.Is(err, slurm.ErrJobNotFound)) || (err == nil && terminal(got.State)) {
			a.Log.Info("job ended without an epilog stop; finishing", "job_id", job.SlurmJobID)
			return true
		}
	}
}

// finalize writes the job's final documents and hands over to the host.
func (w *jobWatch) finalize(ctx context.Context, ck *Checkpoint, agentState string) error {
	w.finalDocs(ctx, ck, agentState)
	w.host.finished(ctx, ck, agentState)
	return nil
}

// finalDocs writes the final node document and, on the leader node, the
// final job document assembled from all node documents, and marks the job
// done on this node — once they are safe: stored, or kept in the spool.
// Until then the checkpoint is their last copy: it is kept (marked
// Finalized), the health series count the job as unsaved, and the writes
// are tried again with back-off for up to spool.linger; after that the
// checkpoint stays for the node's next agent, which writes them again.
func (w *jobWatch) finalDocs(ctx context.Context, ck *Checkpoint, agentState string) {
	a := w.a
	w.settleClaim(ck)
	w.host.finalizing()
	end := a.now()
	if agentState == jobmodel.AgentLost && !ck.State.LastSample.IsZero() {
		end = ck.State.LastSample
	}
	if f := ck.Finalized; f != nil { // made before, not safe then: as they were
		agentState, end = f.AgentState, f.End.Time
	}
	node := ck.Node
	ck.State.Fill(&node, end)
	a.applyEmissions(ctx, &node.Usage)
	node.AgentState = agentState
	node.Final = true
	var job jobmodel.Job
	if ck.Leader {
		job = w.finalJob(ctx, ck.Job)
		nodes := w.nodeDocs(ctx, job, node)
		jobmodel.Assemble(&job, nodes)
		jobmodel.PeakAtLimitIfOOM(&job, nodes)
		job.Final = true
	}
	giveUp := a.now().Add(a.Config.Spool.Linger)
	wait := cmp.Or(a.LingerPoll, 5*time.Second)
	unsaved := false // counted in the health series, the checkpoint kept
	for {
		node.UpdatedAt = jobmodel.At(a.now())
		safe := a.saved("final node document", a.Outputs.PutNode(ctx, node))
		if ck.Leader {
			job.UpdatedAt = jobmodel.At(a.now())
			safe = a.writeFinal(ctx, &job) && safe
		}
		a.Outputs.Replay(ctx)
		if safe {
			break
		}
		if !unsaved {
			unsaved = true
			a.noteUnsaved(w.f.base, true)
			ck.Finalized = &Finalized{AgentState: agentState, End: *jobmodel.At(end)}
			if err := w.f.saveCheckpoint(ck); err != nil {
				a.Log.Error("the job's final documents are neither stored nor spooled, and its checkpoint cannot be saved either", "job_id", w.jobID, "err", err)
			}
		}
		if ctx.Err() != nil || !a.now().Before(giveUp) {
			a.Log.Error("the job's final documents are still neither stored nor spooled; its checkpoint stays, for the node's next agent to write them", "job_id", w.jobID, "checkpoint", w.f.checkpoint())
			return
		}
		a.Log.Warn("the job's final documents are neither stored nor spooled; keeping its checkpoint and trying again", "job_id", w.jobID, "in", wait)
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
		wait = min(2*wait, 30*time.Second)
	}
	a.noteUnsaved(w.f.base, false)
	if ck.Leader {
		a.Log.Info("job finalized", "doc_id", job.DocID, "state", job.State, "missing", job.MissingMetrics)
	}
	w.f.markDone(timeOf(ck.Job.SubmitTime))
}

// finalJob waits (up to slurm.final_state_wait) for Slurm to report the
// job's final state, keeping the start-time metadata where the final lookup
// has less. It asks again after 1, 2, 4 … 30 s: a job is usually final by
// the first or second call, and a large job's many ends must not hammer
// slurmctld.
func (w *jobWatch) finalJob(ctx context.Context, job jobmodel.Job) jobmodel.Job {
	a := w.a
	deadline := a.now().Add(a.Config.Slurm.FinalStateWait)
	wait := cmp.Or(a.FinalPoll, time.Second)
	for {
		got, err := a.Slurm.Lookup(ctx, job.Cluster, job.SlurmJobID, uidOf(job))
		if err == nil && !sameJob(got, job) {
			// Slurm's job of this id is another (a reused id): this
			// one it no longer knows.
			err = fmt.Errorf("job %d now names a job submitted at %s: %w", job.SlurmJobID, timeOf(got.SubmitTime), slurm.ErrJobNotFound)
		}
		if err == nil && terminal(got.State) {
			got.DocID, got.Source = job.DocID, job.Source
			got.MissingMetrics = job.MissingMetrics
			if nodes := allocation(job.Nodes, got.Nodes); len(nodes) > 0 {
				got.Nodes, got.NodeCount = nodes, max(len(nodes), got.NodeCount)
			}
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

// nodeDocs gathers the final node documents of every node of the job,
// waiting up to slurm.final_state_wait for the other nodes' agents. This
// node's own document is taken from memory (the store may be down).
func (w *jobWatch) nodeDocs(ctx context.Context, job jobmodel.Job, own jobmodel.Node) []jobmodel.Node {
	a := w.a
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

// sameJob reports whether two views of a job id are the same job: their
// SLUIDs agree where both have one (Slurm 26.05 on), else their submit
// times agree, or one is unknown. Slurm reuses ids: a checkpoint left on
// this node, or Slurm's answer for the id, may be another job's.
func sameJob(a, b jobmodel.Job) bool {
	if a.SLUID != "" && b.SLUID != "" {
		return a.SLUID == b.SLUID
	}
	x, y := timeOf(a.SubmitTime), timeOf(b.SubmitTime)
	return x.IsZero() || y.IsZero() || x.Equal(y)
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

// A job watched by a process of its own, without a node agent (tests and
// tools; every `jobsight-agent start|stop` goes through Launch).

// Start watches job jobID on this node in this process until it ends (ctx
// is cancelled by the job's stop, or the job's cgroup vanishes), then
// finalizes it. If another watch of the job runs already, Start returns
// at once.
func (a *Agent) Start(ctx context.Context, jobID uint64, uid uint32) error {
	return a.StartJob(ctx, Request{Op: "start", JobID: jobID, UID: uid, GPUs: a.GPU.JobList, GPUsGiven: a.GPU.JobListGiven})
}

// StartJob is Start for a launch's request. A checkpoint of the same job
// (an earlier agent died while watching it) is resumed: its samples are
// kept and the time without any is recorded as a gap.
func (a *Agent) StartJob(ctx context.Context, req Request) error {
	return newJobWatch(a, &ownProcess{a: a}, req).start(ctx, req)
}

// Stop ends the watch of jobID: a running watch is told by the stop marker
// (and ends on its own stop), and when none runs (it crashed or was
// killed) the job is finalized from the last checkpoint, this node's data
// marked as lost after that point.
func (a *Agent) Stop(ctx context.Context, jobID uint64) error {
	started := a.now()
	p := &ownProcess{a: a}
	defer func() { p.logUsage(a.now().Sub(started), 0) }()
	return newJobWatch(a, p, Request{Op: "stop", JobID: jobID}).stop(ctx)
}

// ownProcess hosts one job watch in a process of its own: the watch
// samples on its own ticker and sends through its own sender, the process
// keeps delivering the spool after the job's final documents (linger),
// and its cost is the job's, split by phase in its resource-use log line.
type ownProcess struct {
	a                         *Agent
	cpuAtWatch, cpuAtFinalize time.Duration
}

func (p *ownProcess) drive(ctx context.Context, mon *monitor.Monitor) monitor.StopReason {
	return mon.Run(ctx)
}

func (p *ownProcess) watching()   { p.cpuAtWatch = ReadSelfUsage().CPU }
func (p *ownProcess) finalizing() { p.cpuAtFinalize = ReadSelfUsage().CPU }

func (p *ownProcess) finished(ctx context.Context, ck *Checkpoint, agentState string) {
	p.linger(ctx)
	if agentState != jobmodel.AgentLost { // stop logs its own use
		p.logUsage(p.a.now().Sub(ck.State.Started), ck.State.Count)
	}
}

func (p *ownProcess) logUsage(wall time.Duration, samples int64) {
	p.a.logUsage(wall, samples, p.cpuAtWatch, p.cpuAtFinalize)
}

// linger keeps delivering what waits in the spool for up to spool.linger
// after the job's final documents (retrying after 5, 10, 20, 30, 30 … s),
// so they arrive when a store comes back even if no other job ever
// starts on this node; what is still there after that waits for the next
// agent.
func (p *ownProcess) linger(ctx context.Context) {
	a := p.a
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
