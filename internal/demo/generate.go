package demo

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"time"
	_ "time/tzdata" // the site's time zone, also where the system has no zoneinfo

	"github.com/jobsight/jobsight/internal/analysis"
	"github.com/jobsight/jobsight/internal/jobmodel"
)

// Source is the source field of every generated document
// (jobmodel.SourceGenerated), and AgentVersion their agent_version.
const (
	Source       = jobmodel.SourceGenerated
	AgentVersion = "generated"
)

// Config says what to generate.
type Config struct {
	// Seed makes the output reproducible: the same Config gives the same
	// documents.
	Seed uint64
	// End is the end of the history: finished jobs end before it, running
	// jobs run at it.
	End time.Time
	// Span is how far back submissions reach: finished jobs are
	// submitted in [End-Span, End).
	Span time.Duration
	// Jobs is the number of finished jobs (exactly).
	Jobs int
	// Running is the number of running jobs (Generator.Running).
	Running int
	// Clusters are one or two cluster names (default "demo").
	Clusters []string
	// Location is the site's time zone, which the daily and weekly cycles
	// of submissions follow (default Europe/Berlin).
	Location *time.Location
	// FirstJobID is the first Slurm job id of each cluster (default
	// 1,000,000).
	FirstJobID uint64
	// Compact leaves the analysis causes' lesson texts and links out of
	// the documents (the same configured text in thousands of documents;
	// no panel reads them): documents about a third smaller, for seeding
	// a million.
	Compact bool
}

// PerDay returns the number of finished jobs for a rate per day over span.
func PerDay(rate float64, span time.Duration) int {
	return int(math.Round(rate * span.Hours() / 24))
}

// Generator produces the documents of a Config in submission order, in
// batches (Next), so that a million jobs never sit in memory at once.
type Generator struct {
	cfg  Config
	site *Site
	r    *rand.Rand
	acfg analysis.Config
	// hourCum is the cumulative submission weight of each hour of the
	// span; hour is the next hour to fill, emitted the jobs handed out.
	hourCum []float64
	hour    int
	emitted int
	pending []jobmodel.Job
	nextID  map[string]uint64
}

// New checks cfg and returns its generator.
func New(cfg Config) (*Generator, error) {
	if len(cfg.Clusters) == 0 {
		cfg.Clusters = []string{"demo"}
	}
	if len(cfg.Clusters) > 2 {
		return nil, fmt.Errorf("demo: %d clusters: the generated site has one or two", len(cfg.Clusters))
	}
	for _, c := range cfg.Clusters {
		if err := (jobmodel.Identity{Cluster: c, JobID: 1}).Validate(); err != nil {
			return nil, fmt.Errorf("demo: %w", err)
		}
	}
	if len(cfg.Clusters) == 2 && cfg.Clusters[0] == cfg.Clusters[1] {
		return nil, errors.New("demo: the two clusters have the same name")
	}
	switch {
	case cfg.End.IsZero():
		return nil, errors.New("demo: no end time")
	case cfg.Jobs < 0 || cfg.Running < 0:
		return nil, errors.New("demo: negative number of jobs")
	case cfg.Jobs > 0 && cfg.Span < time.Hour:
		return nil, fmt.Errorf("demo: span %s: at least an hour", cfg.Span)
	}
	if cfg.Location == nil {
		loc, err := time.LoadLocation("Europe/Berlin")
		if err != nil {
			return nil, fmt.Errorf("demo: the site's time zone: %w", err)
		}
		cfg.Location = loc
	}
	if cfg.FirstJobID == 0 {
		cfg.FirstJobID = 1_000_000
	}
	cfg.End = cfg.End.Truncate(time.Second)
	r := rand.New(rand.NewPCG(cfg.Seed, 0x64656d6f)) // #nosec G404 -- generated demo data, reproducible from the seed on purpose
	g := &Generator{cfg: cfg, r: r, acfg: analysis.Default(), nextID: map[string]uint64{}}
	g.site = newSite(cfg.Clusters, r)
	g.site.Location = cfg.Location
	for _, c := range cfg.Clusters {
		g.nextID[c] = cfg.FirstJobID
	}
	hours := int(cfg.Span / time.Hour)
	g.hourCum = make([]float64, hours)
	var cum float64
	first := cfg.End.Add(-time.Duration(hours) * time.Hour)
	for h := range hours {
		cum += SubmitWeight(first.Add(time.Duration(h)*time.Hour + 30*time.Minute).In(cfg.Location))
		g.hourCum[h] = cum
	}
	return g, nil
}

// Site returns the generated site (clusters, partitions, users).
func (g *Generator) Site() *Site { return g.site }

// Config returns the configuration with its defaults filled in.
func (g *Generator) Config() Config { return g.cfg }

// SubmitWeight is the relative rate of submissions at a local time: high on
// weekday working hours (a dip at lunch), lower in the evening, low at
// night and at the weekend.
func SubmitWeight(t time.Time) float64 {
	h := float64(t.Hour()) + float64(t.Minute())/60
	var hw float64
	switch {
	case h < 7:
		hw = 0.12
	case h < 9:
		hw = 0.12 + 0.88*(h-7)/2
	case h < 12:
		hw = 1
	case h < 13.5:
		hw = 0.7
	case h < 18:
		hw = 1
	case h < 23:
		hw = 1 - 0.8*(h-18)/5
	default:
		hw = 0.15
	}
	switch t.Weekday() {
	case time.Saturday:
		return 0.1 + 0.25*hw
	case time.Sunday:
		return 0.1 + 0.2*hw
	case time.Friday:
		return 0.9 * hw
	}
	return hw
}

// Done reports whether every finished job was handed out.
func (g *Generator) Done() bool { return g.emitted >= g.cfg.Jobs }

// Next returns up to n more finished jobs, in submission order; none when
// Done.
func (g *Generator) Next(n int) []jobmodel.Job {
	out := make([]jobmodel.Job, 0, n)
	for len(out) < n && !g.Done() {
		if len(g.pending) == 0 {
			g.fillHour()
			continue
		}
		k := min(n-len(out), len(g.pending), g.cfg.Jobs-g.emitted)
		out = append(out, g.pending[:k]...)
		g.pending = g.pending[k:]
		g.emitted += k
	}
	return out
}

// fillHour generates the jobs submitted in the next hour of the span: its
// share of the total, rounded so that the hours add up to Jobs exactly.
func (g *Generator) fillHour() {
	if g.hour >= len(g.hourCum) {
		// Rounding left nothing over in practice; should it, the last
		// hour takes the rest.
		g.hour = len(g.hourCum) - 1
	}
	total := g.hourCum[len(g.hourCum)-1]
	upTo := func(h int) int {
		if h < 0 {
			return 0
		}
		return int(math.Round(float64(g.cfg.Jobs) * g.hourCum[h] / total))
	}
	k := upTo(g.hour) - upTo(g.hour-1)
	if g.hour == len(g.hourCum)-1 {
		k = max(k, g.cfg.Jobs-g.emitted)
	}
	hourStart := g.cfg.End.Add(-time.Duration(len(g.hourCum)-g.hour) * time.Hour)
	g.hour++
	if k <= 0 {
		return
	}
	var subs []submission
	for left := k; left > 0; {
		s := g.submission(hourStart.Add(time.Duration(g.r.Int64N(int64(time.Hour)))).Truncate(time.Second))
		s.tasks = min(s.tasks, left)
		left -= s.tasks
		subs = append(subs, s)
	}
	sort.SliceStable(subs, func(i, j int) bool { return subs[i].submit.Before(subs[j].submit) })
	for _, s := range subs {
		g.pending = append(g.pending, g.finished(s)...)
	}
}

// submission is one sbatch: a job or an array of tasks alike.
type submission struct {
	submit time.Time
	user   *User
	acct   string
	part   *Partition
	tasks  int
}

func (g *Generator) submission(at time.Time) submission {
	r := g.r
	u := g.site.pickUser(r)
	s := submission{submit: at, user: u, acct: u.Accounts[0], tasks: 1}
	if len(u.Accounts) > 1 && r.IntN(3) == 0 {
		s.acct = u.Accounts[1]
	}
	if r.Float64() < u.gpuShare {
		if r.IntN(4) == 0 {
			s.part = g.site.partition("gpu-h100")
		} else {
			s.part = g.site.partition("gpu")
		}
	} else {
		switch x := r.IntN(100); {
		case x < 78:
			s.part = g.site.partition("cpu")
		case x < 87:
			s.part = g.site.partition("bigmem")
		default:
			s.part = g.site.partition("debug")
		}
	}
	if s.part.GPUsPerNode == 0 && s.part.Name != "debug" && r.IntN(100) < 3 {
		s.tasks = 4 + r.IntN(20) // an array job
	}
	return s
}

var jobNames = map[string][]string{
	"gpu":    {"train", "finetune", "infer", "eval", "sweep", "pretrain", "embed", "notebook"},
	"cpu":    {"md-sim", "cfd", "align", "assemble", "mc-run", "postproc", "qe-scf", "wrf", "gromacs", "lammps", "R-batch", "snakemake"},
	"bigmem": {"assemble", "denovo", "graph-build", "mesh-gen", "pandas-etl"},
	"debug":  {"test", "compile", "debug", "hello", "interactive"},
}

func (g *Generator) name(p *Partition) string {
	kind := p.Name
	if p.GPUsPerNode > 0 {
		kind = "gpu"
	}
	ns := jobNames[kind]
	return ns[g.r.IntN(len(ns))]
}

// niceLimits are the time limits users ask for (seconds).
var niceLimits = []int64{600, 1800, 3600, 2 * 3600, 4 * 3600, 8 * 3600, 12 * 3600, 24 * 3600, 48 * 3600, 72 * 3600}

func niceLimit(sec float64, maxTime int64) int64 {
	for _, l := range niceLimits {
		if float64(l) >= sec && l <= maxTime {
			return l
		}
	}
	return maxTime
}

// size is a job's request.
type size struct {
	nodes, cpus, gpus, memPerNode int64
}

func (g *Generator) size(p *Partition) size {
	r := g.r
	const gib = int64(1) << 30
	var s size
	switch {
	case p.GPUsPerNode > 0:
		choices := []int64{1, 1, 1, 1, 2, 2, 4, 4, 4, p.GPUsPerNode, 2 * p.GPUsPerNode, 4 * p.GPUsPerNode}
		s.gpus = choices[r.IntN(len(choices))]
		if r.IntN(3) != 0 && s.gpus > p.GPUsPerNode { // multi-node jobs are rarer
			s.gpus = p.GPUsPerNode
		}
		s.nodes = (s.gpus + p.GPUsPerNode - 1) / p.GPUsPerNode
		perNode := min(s.gpus, p.GPUsPerNode)
		s.cpus = s.nodes * perNode * (p.CoresPerNode / p.GPUsPerNode)
		s.memPerNode = min(perNode*[]int64{64, 96, 128}[r.IntN(3)]*gib, p.MemPerNode)
	case p.Name == "bigmem":
		s.nodes, s.cpus = 1, []int64{8, 16, 32, 64}[r.IntN(4)]
		s.memPerNode = []int64{384, 512, 768, 1024, 1536, 2000}[r.IntN(6)] * gib
	case p.Name == "debug":
		s.nodes, s.cpus = 1, []int64{1, 2, 4, 8, 16, 32}[r.IntN(6)]
		s.memPerNode = s.cpus * 4 * gib
	default:
		switch x := r.IntN(100); {
		case x < 55:
			s.nodes, s.cpus = 1, []int64{1, 1, 2, 4, 4, 8, 8, 16}[r.IntN(8)]
		case x < 82:
			s.nodes, s.cpus = 1, []int64{32, 48, 64}[r.IntN(3)]
		default:
			s.nodes = []int64{2, 2, 4, 4, 8, 16}[r.IntN(6)]
			s.cpus = s.nodes * p.CoresPerNode
		}
		perNode := s.cpus / s.nodes
		s.memPerNode = min(perNode*[]int64{2, 4, 4, 8}[r.IntN(4)]*gib, p.MemPerNode)
	}
	return s
}

// runSeconds is how long a job of a partition wants to run: log-normal,
// minutes for debug jobs, hours for GPU training, up to days.
func (g *Generator) runSeconds(p *Partition) float64 {
	median, sigma := 45*60.0, 1.5
	switch {
	case p.GPUsPerNode > 0:
		median, sigma = 2.5*3600, 1.3
	case p.Name == "bigmem":
		median, sigma = 3*3600, 1.2
	case p.Name == "debug":
		median, sigma = 5*60, 0.9
	}
	return math.Max(20, median*math.Exp(sigma*g.r.NormFloat64()))
}

// finished generates the jobs of one submission.
func (g *Generator) finished(s submission) []jobmodel.Job {
	r := g.r
	sz := g.size(s.part)
	want := g.runSeconds(s.part)
	var limit int64
	switch x := r.IntN(100); {
	case x < 6: // asked too little: runs into the limit
		limit = niceLimit(want*(0.3+0.6*r.Float64()), s.part.MaxTime)
	case x < 30: // takes the partition's maximum
		limit = s.part.MaxTime
	default: // over-requested by 1.2–8 times
		limit = niceLimit(want*math.Exp(math.Log(1.2)+r.Float64()*math.Log(8/1.2)), s.part.MaxTime)
	}
	wait := 30 * math.Exp(1.8*r.NormFloat64())
	if s.part.GPUsPerNode > 0 {
		wait *= 8
	}
	name := g.name(s.part)
	if s.tasks > 1 {
		name += "-array"
	} else {
		name += "-" + strconv.Itoa(r.IntN(1000))
	}
	cluster := s.part.Cluster
	first := g.nextID[cluster]
	g.nextID[cluster] += uint64(s.tasks) // #nosec G115 -- tasks > 0
	out := make([]jobmodel.Job, 0, s.tasks)
	for t := 0; t < s.tasks; t++ {
		id := jobmodel.Identity{Cluster: cluster, JobID: first + uint64(t)} // #nosec G115 -- t >= 0
		if s.tasks > 1 {
			id.ArrayJobID, id.ArrayTaskID = first, uint64(t) // #nosec G115 -- t >= 0
		}
		run := want
		if s.tasks > 1 {
			run = want * (0.7 + 0.6*r.Float64())
		}
		start := s.submit.Add(time.Duration((wait + float64(t)*10*r.Float64()) * float64(time.Second))).Truncate(time.Second)
		j := g.base(id, s, name, sz, limit)
		g.finish(&j, s.submit, start, run, s.user.skill)
		out = append(out, j)
	}
	return out
}

// base fills what a job's document holds from its start: identity,
// owner, request.
func (g *Generator) base(id jobmodel.Identity, s submission, name string, sz size, limit int64) jobmodel.Job {
	j := jobmodel.Job{
		DocID: id.DocID(), SchemaVersion: jobmodel.SchemaVersion, Source: Source,
		Cluster: id.Cluster, JobID: id.Key(), SlurmJobID: id.JobID,
		Name: name, User: s.user.Name, UID: jobmodel.Ptr(s.user.UID), GID: jobmodel.Ptr(s.user.GID),
		Account: s.acct, Partition: s.part.Name, QOS: "normal",
		TimeLimitSeconds: jobmodel.Ptr(limit), AgentVersion: AgentVersion,
	}
	if id.ArrayJobID != 0 {
		j.ArrayJobID, j.ArrayTaskID = jobmodel.Ptr(id.ArrayJobID), jobmodel.Ptr(id.ArrayTaskID)
	}
	pool := s.part.Nodes
	at := g.r.IntN(len(pool))
	for n := int64(0); n < sz.nodes; n++ {
		j.Nodes = append(j.Nodes, pool[(at+int(n))%len(pool)])
	}
	j.NodeCount = int(sz.nodes)
	j.Requested = jobmodel.Request{
		CPUs: jobmodel.Ptr(sz.cpus), MemoryBytes: jobmodel.Ptr(sz.memPerNode * sz.nodes), MemoryPerNodeBytes: jobmodel.Ptr(sz.memPerNode),
		Nodes: jobmodel.Ptr(sz.nodes), Tasks: jobmodel.Ptr(sz.nodes), GPUs: jobmodel.Ptr(sz.gpus),
		TRES: fmt.Sprintf("cpu=%d,mem=%dG,node=%d,billing=%d", sz.cpus, sz.memPerNode*sz.nodes>>30, sz.nodes, sz.cpus),
	}
	if sz.gpus > 0 {
		model := "a100"
		if s.part.Name == "gpu-h100" {
			model = "h100"
		}
		j.Requested.Gres = []string{fmt.Sprintf("gpu:%s:%d", model, min(sz.gpus, s.part.GPUsPerNode))}
		j.Requested.TRES += fmt.Sprintf(",gres/gpu=%d", sz.gpus)
	}
	return j
}

// finish makes j a finished job that started at start and wanted to run
// for run seconds: its state, end, usage, totals and analysis. A job that
// would still run at End starts earlier instead (the running jobs are
// generated apart).
func (g *Generator) finish(j *jobmodel.Job, submit, start time.Time, run, skill float64) {
	r := g.r
	limit := float64(*j.TimeLimitSeconds)
	j.State = jobmodel.StateCompleted
	switch x := r.IntN(1000); {
	case run >= limit:
		run, j.State = limit, jobmodel.StateTimeout
	case x < 110:
		j.State = jobmodel.StateFailed
		run *= math.Pow(r.Float64(), 2) // failures come early
	case x < 170:
		j.State = jobmodel.StateCancelled
		run *= r.Float64()
	case x < 190:
		j.State = jobmodel.StateOutOfMemory
		run *= 0.2 + 0.8*r.Float64()
	case x < 193:
		j.State = jobmodel.StateNodeFail
		run *= r.Float64()
	}
	elapsed := time.Duration(math.Max(run, 5)) * time.Second
	if late := start.Add(elapsed).Sub(g.cfg.End.Add(-time.Minute)); late > 0 {
		shift := late + time.Duration(r.Int64N(int64(time.Hour)))
		start, submit = start.Add(-shift), submit.Add(-shift)
	}
	end := start.Add(elapsed)
	j.SubmitTime = jobmodel.At(submit)
	j.StartTime, j.EndTime = jobmodel.At(start), jobmodel.At(end)
	j.ElapsedSeconds = jobmodel.Ptr(elapsed.Seconds())
	j.Final = true
	j.UpdatedAt = jobmodel.At(end)
	switch j.State {
	case jobmodel.StateFailed:
		j.ExitCode, j.Reason = jobmodel.Ptr(1+r.IntN(2)), "NonZeroExitCode"
	case jobmodel.StateOutOfMemory:
		j.ExitCode, j.Reason = jobmodel.Ptr(0), "OutOfMemory"
	case jobmodel.StateTimeout:
		j.ExitCode, j.ExitSignal, j.Reason = jobmodel.Ptr(0), jobmodel.Ptr(15), "TimeLimit"
	case jobmodel.StateCancelled:
		j.ExitCode, j.ExitSignal = jobmodel.Ptr(0), jobmodel.Ptr(15)
	case jobmodel.StateNodeFail:
		j.ExitCode, j.Reason = jobmodel.Ptr(0), "NodeDown"
	default:
		j.ExitCode = jobmodel.Ptr(0)
	}
	iv := StepFor(elapsed)
	j.Sampling = jobmodel.Sampling{IntervalSeconds: iv.Seconds(), Count: int64(elapsed/iv) + 1, First: j.StartTime, Last: j.EndTime}
	fillUsage(r, j, skill)
	j.Totals = jobmodel.TotalsOf(j)
	a := analysis.AnalyzeJob(*j, end, g.acfg)
	if g.cfg.Compact {
		for i := range a.Causes {
			a.Causes[i].Lesson, a.Causes[i].DocURL = "", ""
		}
	}
	j.Analysis = &a
}

// StepFor is the sample interval of a generated job's series (and its
// document's sampling.interval_seconds): the shortest of 30 s, 1, 2, 5, 10
// and 15 minutes that gives the run at most about 200 samples per series,
// so that every job's charts have up to some hundred points and a month of
// history stays some ten million samples. (Agents sample every few
// seconds; the charts of a long run show no more than this.)
func StepFor(run time.Duration) time.Duration {
	for _, s := range []time.Duration{30 * time.Second, time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute} {
		if run/s <= 200 {
			return s
		}
	}
	return 15 * time.Minute
}

// Running returns the running jobs: cfg.Running of them, started between
// 35 minutes and 6 hours before End (so that each has run for the hogging
// panels' 30-minute window), submitted after every finished job. The first
// is a multi-node GPU job (2 nodes, 8 GPUs) on the gpu partition. Their
// ids follow every finished job's (FirstJobID + Jobs on), and they do not
// depend on the finished jobs: a seed whose finished jobs are kept (a
// reused benchmark index) gets the same running jobs without generating
// the finished ones again.
func (g *Generator) Running() []jobmodel.Job {
	r := rand.New(rand.NewPCG(g.cfg.Seed, 0x72756e)) // #nosec G404 -- generated demo data, reproducible on purpose
	nextID := map[string]uint64{}
	for _, c := range g.cfg.Clusters {
		nextID[c] = g.cfg.FirstJobID + uint64(g.cfg.Jobs) // #nosec G115 -- Jobs >= 0
	}
	out := make([]jobmodel.Job, 0, g.cfg.Running)
	for i := 0; i < g.cfg.Running; i++ {
		u := g.site.pickUser(r)
		s := submission{user: u, acct: u.Accounts[0], tasks: 1}
		save := g.r
		g.r = r
		var sz size
		start := g.cfg.End.Add(-35*time.Minute - time.Duration(r.Int64N(int64(325*time.Minute)))).Truncate(time.Second)
		if i == 0 {
			s.part = g.site.partition("gpu")
			sz = size{nodes: 2, gpus: 8, cpus: 2 * s.part.CoresPerNode, memPerNode: 256 << 30}
			start = g.cfg.End.Add(-50 * time.Minute)
		} else {
			s.part = g.submission(start).part
			sz = g.size(s.part)
		}
		name := g.name(s.part) + "-" + strconv.Itoa(r.IntN(1000))
		limit := s.part.MaxTime
		if s.part.Name == "debug" {
			start = g.cfg.End.Add(-time.Duration(1+r.IntN(50)) * time.Minute)
		}
		cluster := s.part.Cluster
		id := jobmodel.Identity{Cluster: cluster, JobID: nextID[cluster]}
		nextID[cluster]++
		j := g.base(id, s, name, sz, limit)
		g.r = save
		j.State = jobmodel.StateRunning
		j.SubmitTime = jobmodel.At(start.Add(-time.Duration(30+r.IntN(3600)) * time.Second))
		j.StartTime = jobmodel.At(start)
		// Updated at End, as an agent updates its running job's document:
		// not silent.
		j.UpdatedAt = jobmodel.At(g.cfg.End)
		j.Sampling = jobmodel.Sampling{IntervalSeconds: RunningStep.Seconds(), First: j.StartTime}
		out = append(out, j)
	}
	return out
}

// RunningStep is the sample interval of the running jobs' series.
const RunningStep = 15 * time.Second
