// Package jobagent holds the agent's life cycles, each in one type and
// file:
//
//   - the node agent (node.go, nodeAgent): one process per node, started
//     by the first `jobsight-agent start|stop` that finds none (Launch),
//     watches every job of the node on one timer and exits once none is
//     left;
//   - the job watch (watch.go, jobWatch): one Slurm job on this node from
//     its start to its final documents — its lock, checkpoint and markers,
//     its sampling, its node and job documents — and a stop that finalizes
//     a job no agent watched from its last checkpoint. It runs in the node
//     agent, or in a process of its own (Start, StartJob and Stop: tests
//     and tools);
//   - the standalone run (run.go, standaloneRun): `jobsight-agent run`
//     measures one command on a machine without Slurm.
//
// Agent, here, is what they all share: the config, the outputs, Slurm,
// the collectors, GPUs and energy.
package jobagent

import (
	"context"
	"errors"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/jobsight/jobsight/agent/collector"
	"github.com/jobsight/jobsight/agent/config"
	"github.com/jobsight/jobsight/agent/emissions"
	"github.com/jobsight/jobsight/agent/energy"
	"github.com/jobsight/jobsight/agent/monitor"
	"github.com/jobsight/jobsight/internal/analysis"
	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/internal/spool"
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
	// ClaimDocID returns the id a job is stored under: its plain id
	// (job.DocID), or its reuse id when an older job holds that (Slurm
	// reuses ids); the one decision on a reused id, made by the outputs
	// against what the store holds. since is when this job's watch began,
	// which tells when submit times are unknown. With create (the job's
	// first node) it also writes the job's running document, and the error
	// is that write's.
	ClaimDocID(ctx context.Context, job jobmodel.Job, since time.Time, create bool) (string, error)
	// NodeDocs returns the node documents of a job, as stored.
	NodeDocs(ctx context.Context, jobDocID string) ([]jobmodel.Node, error)
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

// Agent is what every life cycle shares: what to watch with and where its
// results go. Its entry points are Launch (the node agent), Start,
// StartJob and Stop (one job watched by a process of its own), and Run
// (a standalone command).
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
	// ClaimWait overrides DefaultClaimWait.
	ClaimWait time.Duration
	// LookupWait overrides DefaultLookupWait; LookupPatience
	// DefaultLookupPatience.
	LookupWait, LookupPatience time.Duration
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
	// Successor is set when the node agent handed its jobs over (an
	// upgrade): the executable the process must exec now, with Resume's
	// command, to resume them.
	Successor string

	// unsaved are the jobs (by state file) whose final documents this
	// process could neither store nor spool: Health.FinalUnsaved.
	unsavedMu sync.Mutex
	unsaved   map[string]bool
}

// noteUnsaved records whether the final documents of the job whose state
// files are key are safe, and sets the health gauge to how many are not.
func (a *Agent) noteUnsaved(key string, unsaved bool) {
	a.unsavedMu.Lock()
	defer a.unsavedMu.Unlock()
	if a.unsaved == nil {
		a.unsaved = map[string]bool{}
	}
	if unsaved {
		a.unsaved[key] = true
	} else {
		delete(a.unsaved, key)
	}
	if a.Health != nil {
		a.Health.FinalUnsaved.Set(float64(len(a.unsaved)))
	}
}

func (a *Agent) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

// jobFiles are the state files of job jobID on this node.
func (a *Agent) jobFiles(jobID uint64) files {
	return jobFiles(a.Config.StateDir, a.Config.Cluster, a.Config.Node, jobID)
}

// writeFinal runs the post-job analysis on a final job document (once: a
// second call writes the same analysis again), stores it in the document,
// and writes the document and its results-index entry (spooled when the
// store does not take them). safe is false when either is neither stored
// nor spooled.
func (a *Agent) writeFinal(ctx context.Context, job *jobmodel.Job) (safe bool) {
	at := a.now()
	job.Totals = jobmodel.TotalsOf(job)
	if job.Analysis == nil {
		an := analysis.AnalyzeJob(*job, at, a.Config.Analysis)
		job.Analysis = &an
		a.Log.Info("job analysed", "doc_id", job.DocID, "class", an.Class, "causes", len(an.Causes),
			"analysis_seconds", a.now().Sub(at).Seconds())
	}
	safe = a.saved("final job document", a.Outputs.PutJob(ctx, *job))
	return a.saved("analysis result", a.Outputs.PutResult(ctx, jobmodel.NewResult(*job, *job.Analysis, *jobmodel.At(at)))) && safe
}

// saved logs a write's error and reports whether what it wrote is safe:
// stored, or kept in the spool (the error wraps spool.ErrSpooled). Any
// other error — the spool's disk full, the output file not written —
// means it is nowhere yet.
func (a *Agent) saved(what string, err error) bool {
	switch {
	case err == nil:
		return true
	case errors.Is(err, spool.ErrSpooled):
		a.Log.Warn("writing "+what+": the store did not take it; spooled", "err", err)
		return true
	}
	a.Log.Error("writing "+what+": neither stored nor spooled", "err", err)
	return false
}

// nodeTemplate is the node document's identity and metadata.
func nodeTemplate(job jobmodel.Job, node string) jobmodel.Node {
	return jobmodel.Node{
		DocID: jobmodel.NodeDocID(job.DocID, node), JobDocID: job.DocID,
		SchemaVersion: jobmodel.SchemaVersion, Source: job.Source, Cluster: job.Cluster,
		JobID: job.JobID, SlurmJobID: job.SlurmJobID, SLUID: job.SLUID, Node: node, User: job.User, UID: job.UID,
		SubmitTime: job.SubmitTime, AgentVersion: Version, AgentState: jobmodel.AgentRunning,
	}
}

// Labels are the labels of a job's series: cluster, job_id, node, and run
// (jobmodel.RunOf: the submit time, so that a reused job id's series stay
// apart) when the submit time is known.
func Labels(cluster, jobKey, node string, submit *jobmodel.Time) []monitor.Label {
	ls := []monitor.Label{{Name: "cluster", Value: cluster}, {Name: "job_id", Value: jobKey}, {Name: "node", Value: node}}
	if run := jobmodel.RunOf(submit); run != "" {
		ls = append(ls, monitor.Label{Name: jobmodel.RunLabel, Value: run})
	}
	return ls
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
