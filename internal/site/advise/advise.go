// Package advise answers, for a job about to be submitted, what the
// caller's own comparable finished jobs used against what they asked for,
// and the request that would have served them all, as #SBATCH lines
// (`jobsight advise`, called by the site's cli_filter.lua inside sbatch).
// It says nothing when the history is too thin, too varied, or the
// request already fits.
//
// The figures are the post-job analysis's own (analysis.Needs: the same
// headroom, rounding and floors as a job's recommendation), taken at their
// largest over the comparable jobs: the advice would have served every one
// of them, never only the typical one.
package advise

import (
	"fmt"
	"math"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jobsight/jobsight/internal/analysis"
	"github.com/jobsight/jobsight/internal/jobmodel"
)

// Config is the advice's part of the site configuration (advise:).
type Config struct {
	// Enabled switches the advice off for the whole site when false: the
	// command then answers nothing, at once, without reading the store.
	Enabled bool `yaml:"enabled"`
	// MinJobs is the fewest comparable jobs advice is based on.
	MinJobs int `yaml:"min_jobs"`
	// MaxJobs is the most recent comparable jobs it looks at.
	MaxJobs int `yaml:"max_jobs"`
	// Lookback is how far back a finished job counts.
	Lookback time.Duration `yaml:"lookback"`
	// Fetch is the most of the caller's finished jobs one store request
	// reads (the newest first).
	Fetch int `yaml:"fetch"`
	// MinSaving is the least share of a request the advice must free to
	// be given: 0.25 says nothing about a 16G request that 13G would serve.
	MinSaving float64 `yaml:"min_saving"`
	// MaxSpread is how varied the history may be: a resource whose
	// largest need is more than MaxSpread × its median need among the
	// comparable jobs gets no advice (one of them is not like the others).
	MaxSpread float64 `yaml:"max_spread"`
	// MinElapsed is the shortest run that counts: a job that ended in
	// seconds (a typo, a missing file) says nothing about the next one.
	MinElapsed time.Duration `yaml:"min_elapsed"`
	// Timeout bounds the store requests: below the cli_filter's own hard
	// limit on the whole command (1 s), so that a slow store's answer is
	// still cached for the next submission.
	Timeout time.Duration `yaml:"timeout"`
	// CacheTTL is how long the caller's history, once read, is reused
	// from their private runtime directory (/run/user/UID); 0: never.
	CacheTTL time.Duration `yaml:"cache_ttl"`
	// PIHistory lets a PI of the request's account (access.pis) be
	// advised from the account's finished jobs of every user, not only
	// their own. Off by default: the advice then tells a PI what their
	// members' jobs used, in aggregate.
	PIHistory bool `yaml:"pi_history"`
}

// Default is the advice's default configuration.
func Default() Config {
	return Config{Enabled: true, MinJobs: 3, MaxJobs: 20, Lookback: 180 * 24 * time.Hour, Fetch: 60,
		MinSaving: 0.25, MaxSpread: 3, MinElapsed: time.Minute, Timeout: 800 * time.Millisecond, CacheTTL: 5 * time.Minute}
}

// Reads is how many jobs one search reads: Fetch, but at least MaxJobs +
// MinJobs - 1, since the jobs of the request's name, too few to advise on,
// come first and may take MinJobs - 1 places.
func (c Config) Reads() int { return max(c.Fetch, c.MaxJobs+c.MinJobs-1) }

// Validate calls bad with each problem, naming its option.
func (c Config) Validate(bad func(option, format string, args ...any)) {
	if c.MinJobs < 1 {
		bad("advise.min_jobs", "%d, want at least 1", c.MinJobs)
	}
	if c.MaxJobs < c.MinJobs {
		bad("advise.max_jobs", "%d, want at least min_jobs (%d)", c.MaxJobs, c.MinJobs)
	}
	if c.Fetch < c.MaxJobs || c.Fetch > 10000 {
		bad("advise.fetch", "%d, want max_jobs (%d) to 10000", c.Fetch, c.MaxJobs)
	}
	if c.Lookback <= 0 {
		bad("advise.lookback", "%s, want a positive duration", c.Lookback)
	}
	if !(c.MinSaving > 0 && c.MinSaving < 1) {
		bad("advise.min_saving", "%v, want between 0 and 1", c.MinSaving)
	}
	if !(c.MaxSpread >= 1) || math.IsInf(c.MaxSpread, 0) {
		bad("advise.max_spread", "%v, want 1 or more", c.MaxSpread)
	}
	if c.MinElapsed < 0 {
		bad("advise.min_elapsed", "%s, want 0 or more", c.MinElapsed)
	}
	if c.Timeout <= 0 {
		bad("advise.timeout", "%s, want a positive duration", c.Timeout)
	}
	if c.CacheTTL < 0 {
		bad("advise.cache_ttl", "%s, want 0 (no cache) or more", c.CacheTTL)
	}
}

// Request is the job about to be submitted, as sbatch holds it. Zero
// means not given.
type Request struct {
	CPUsPerTask     int64
	Tasks           int64
	Nodes           int64
	MemPerNodeBytes int64
	MemPerCPUBytes  int64
	// GPUs is the job's GPUs (all nodes); GPUsFromGres says they were
	// asked for per node with --gres.
	GPUs         int64
	GPUsFromGres bool
	// TimeLimitSeconds is 0 for none given or unlimited.
	TimeLimitSeconds int64
	Partition        string
	Account          string
	Name             string
	// Script is the batch script's path; its base name is the job's name
	// when none is given, as in Slurm.
	Script string
}

// CPUs is the request's CPUs over the whole job (at least 1).
func (r Request) CPUs() int64 { return max(1, r.CPUsPerTask) * max(1, r.Tasks) }

// MemPerNode is the request's memory per node: --mem, else --mem-per-cpu
// × the CPUs per node; 0 when neither is given (the partition's default).
func (r Request) MemPerNode() int64 {
	if r.MemPerNodeBytes > 0 {
		return r.MemPerNodeBytes
	}
	if r.MemPerCPUBytes > 0 {
		perNode := float64(r.MemPerCPUBytes) * float64(r.CPUs()) / float64(max(1, r.Nodes))
		if perNode < 1<<60 {
			return int64(perNode)
		}
	}
	return 0
}

// Partitions are the partitions the request names (sbatch takes a
// comma-separated list: the job runs in one of them); none for the
// cluster's default.
func (r Request) Partitions() []string {
	var out []string
	for _, p := range strings.Split(r.Partition, ",") {
		if p = strings.TrimSpace(p); p != "" && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// JobName is the name the job will have: --job-name, else the script's
// base name ("wrap" for --wrap, which has no script).
func (r Request) JobName() string {
	if r.Name != "" {
		return r.Name
	}
	if r.Script != "" {
		return path.Base(r.Script)
	}
	return ""
}

// Past is one of the caller's finished jobs, as the advice compares it.
type Past struct {
	DocID     string
	Name      string
	Account   string
	Partition string
	State     string
	End       time.Time
	Nodes     int64
	// Tasks is the job's tasks (0 when not known).
	Tasks int64
	// MemPerNode is the job's memory request per node (0 when not known),
	// whether or not its use was measured.
	MemPerNode int64
	Elapsed    float64
	Need       analysis.Need
}

// PastOf is a finished job document as the advice compares it.
func PastOf(job jobmodel.Job, cfg analysis.Config) Past {
	p := Past{DocID: job.DocID, Name: job.Name, Account: job.Account, Partition: job.Partition, State: job.State,
		Nodes: 1, Need: analysis.Needs(job, cfg)}
	if job.EndTime != nil {
		p.End = job.EndTime.Time
	}
	if n := job.Requested.Nodes; n != nil && *n > 0 {
		p.Nodes = *n
	} else if job.NodeCount > 0 {
		p.Nodes = int64(job.NodeCount)
	}
	if p.Need.ElapsedSeconds != nil {
		p.Elapsed = *p.Need.ElapsedSeconds
	}
	if t := job.Requested.Tasks; t != nil && *t > 0 {
		p.Tasks = *t
	}
	switch m := job.Requested; {
	case m.MemoryPerNodeBytes != nil && *m.MemoryPerNodeBytes > 0:
		p.MemPerNode = *m.MemoryPerNodeBytes
	case m.MemoryBytes != nil && *m.MemoryBytes > 0:
		p.MemPerNode = *m.MemoryBytes / p.Nodes
	case p.Need.MemoryRequestedPerNodeBytes != nil:
		p.MemPerNode = *p.Need.MemoryRequestedPerNodeBytes
	}
	return p
}

// Change is one option of the advice.
type Change struct {
	Option string `json:"option"`
	// From is the option as the request has it ("--mem=64G"), To as it
	// would have served every comparable job ("--mem=8G"). When they are
	// different options (--mem in place of --mem-per-cpu), From's line
	// must go: Slurm refuses the two together.
	From string `json:"from"`
	To   string `json:"to"`
	// Used is what the comparable jobs used, for people.
	Used string `json:"used"`
}

// Advice is the answer for one request.
type Advice struct {
	// Jobs is how many comparable jobs it is based on; Basis how they were
	// chosen: "name" (the same job name) or "request" (the same account,
	// partition and a similar request).
	Jobs  int    `json:"jobs"`
	Basis string `json:"basis,omitempty"`
	Name  string `json:"name,omitempty"`
	// Account is set when the jobs are the account's of every user (a
	// PI's advice, advise.pi_history), not only the caller's.
	Account string `json:"account,omitempty"`
	// Changes is empty when there is nothing to say; Quiet then says why.
	Changes []Change `json:"changes"`
	Quiet   string   `json:"quiet,omitempty"`
}

// SBATCH is the advice as #SBATCH lines.
func (a Advice) SBATCH() []string {
	out := make([]string, 0, len(a.Changes))
	for _, c := range a.Changes {
		out = append(out, "#SBATCH "+c.To)
	}
	return out
}

// Advise compares req with the caller's finished jobs (any order).
func Advise(req Request, history []Past, cfg Config) Advice {
	a, _ := advise(req, history, cfg)
	return a
}

// advise is Advise with the comparable jobs it is based on.
func advise(req Request, history []Past, cfg Config) (Advice, []Past) {
	jobs, basis := comparable(req, history, cfg)
	a := Advice{Jobs: len(jobs), Basis: basis}
	if basis == "name" {
		a.Name = req.JobName()
	}
	if len(jobs) < cfg.MinJobs {
		a.Basis, a.Name = "", ""
		a.Quiet = fmt.Sprintf("%d comparable finished jobs, %d needed", len(jobs), cfg.MinJobs)
		return a, jobs
	}
	var quiet []string
	add := func(c *Change, why string) {
		if c != nil {
			a.Changes = append(a.Changes, *c)
		} else if why != "" {
			quiet = append(quiet, why)
		}
	}
	mem, why := memoryChange(req, jobs, cfg)
	add(mem, why)
	add(cpuChange(req, jobs, cfg, mem != nil))
	add(gpuChange(req, jobs, cfg))
	add(timeChange(req, jobs, cfg))
	if len(a.Changes) == 0 {
		a.Quiet = "the request fits"
		if len(quiet) > 0 {
			a.Quiet += "; " + strings.Join(quiet, "; ")
		}
	}
	return a, jobs
}

// comparable picks the jobs the advice is based on: of the caller's
// finished runs (completed, out of memory or out of time, longer than
// MinElapsed) in the request's account and partition (when it names
// them), those of the same job name when there are enough, else those with
// a similar request; the newest MaxJobs.
func comparable(req Request, history []Past, cfg Config) ([]Past, string) {
	var pool []Past
	parts := req.Partitions()
	for _, p := range history {
		if !counts(p, cfg) || (req.Account != "" && p.Account != req.Account) ||
			(len(parts) > 0 && !slices.Contains(parts, p.Partition)) {
			continue
		}
		pool = append(pool, p)
	}
	slices.SortStableFunc(pool, func(a, b Past) int { return b.End.Compare(a.End) })
	newest := func(ps []Past) []Past { return ps[:min(len(ps), cfg.MaxJobs)] }
	if name := req.JobName(); name != "" {
		var named []Past
		for _, p := range pool {
			if p.Name == name {
				named = append(named, p)
			}
		}
		// The same name on another number of nodes is another kind of
		// run: memory is compared per node.
		named = slices.DeleteFunc(named, func(p Past) bool { return p.Nodes != max(1, req.Nodes) })
		if len(named) >= cfg.MinJobs {
			return newest(named), "name"
		}
	}
	var similar []Past
	for _, p := range pool {
		if similarRequest(req, p) {
			similar = append(similar, p)
		}
	}
	return newest(similar), "request"
}

// CountingStates are the states of the finished jobs that say anything
// about the next one: it ran to its end, out of memory or out of time.
var CountingStates = []string{jobmodel.StateCompleted, jobmodel.StateOutOfMemory, jobmodel.StateTimeout}

// counts says whether a finished job says anything about the next: it
// ended in one of CountingStates after at least MinElapsed.
func counts(p Past, cfg Config) bool {
	return slices.Contains(CountingStates, p.State) && p.Elapsed >= cfg.MinElapsed.Seconds()
}

// SimilarMemory is the range of memory requests per node that
// similarRequest takes as like req's (within a factor of two); 0, 0 when
// req gives none (any is like it).
func SimilarMemory(req Request) (lo, hi int64) {
	r := req.MemPerNode()
	if r <= 0 {
		return 0, 0
	}
	return (r + 1) / 2, 2 * r
}

// SimilarCPUs is the range of CPU requests that similarRequest takes as
// like req's: within a factor of two.
func SimilarCPUs(req Request) (lo, hi int64) {
	c := req.CPUs()
	return (c + 1) / 2, 2 * c
}

// similarRequest: the same nodes and GPUs, CPUs and memory per node
// within a factor of two.
func similarRequest(req Request, p Past) bool {
	if max(1, req.Nodes) != p.Nodes {
		return false
	}
	if deref(p.Need.GPUsRequested) != req.GPUs {
		return false
	}
	if lo, hi := SimilarCPUs(req); p.Need.CPUsRequested == nil || *p.Need.CPUsRequested < lo || *p.Need.CPUsRequested > hi {
		return false
	}
	if lo, hi := SimilarMemory(req); hi > 0 && p.MemPerNode > 0 && (p.MemPerNode < lo || p.MemPerNode > hi) {
		return false
	}
	return true
}

// figure is one resource as the advice judges it: its name, the state a
// job ends in when it had too little of it (no advice to ask for less
// then), and a job's need of it with what that need is computed from.
type figure struct {
	what, starved string
	of            func(analysis.Need) (need *int64, used *float64)
}

var (
	memoryFigure = figure{"memory", jobmodel.StateOutOfMemory,
		func(n analysis.Need) (*int64, *float64) { return n.MemoryPerNodeBytes, n.MemoryPeakPerNodeBytes }}
	cpuFigure = figure{"CPUs", "", func(n analysis.Need) (*int64, *float64) { return n.CPUs, n.CPUsUsed }}
	gpuFigure = figure{"GPUs", "", func(n analysis.Need) (*int64, *float64) {
		if n.GPUs == nil {
			return nil, nil
		}
		return n.GPUs, jobmodel.Ptr(float64(*n.GPUs))
	}}
	timeFigure = figure{"time", jobmodel.StateTimeout,
		func(n analysis.Need) (*int64, *float64) { return n.TimeLimitSeconds, n.ElapsedSeconds }}
)

// largest is the largest need of fig over jobs and the most any of them
// used, when the advice may ask for it instead of request: no job ran out
// of it, at least MinJobs measured it, the needs are not too varied
// (MaxSpread), and it frees at least MinSaving of the request. Otherwise
// ok is false, with why (empty when the request simply fits).
func (fig figure) largest(jobs []Past, request float64, cfg Config) (need, used float64, ok bool, why string) {
	top, used, why := fig.top(jobs, cfg)
	if why != "" || !(top <= (1-cfg.MinSaving)*request) {
		return 0, 0, false, why
	}
	return top, used, true, ""
}

// top is the largest need of fig over jobs and the most any of them used;
// why says why there is none to go by: a job ran out of it, too few jobs
// measured it, or the needs are too varied.
func (fig figure) top(jobs []Past, cfg Config) (need, used float64, why string) {
	if fig.starved != "" && slices.ContainsFunc(jobs, func(p Past) bool { return p.State == fig.starved }) {
		return 0, 0, fig.what + ": a comparable job ran out of it"
	}
	var needs, useds []float64
	for _, p := range jobs {
		if n, u := fig.of(p.Need); n != nil && u != nil {
			needs, useds = append(needs, float64(*n)), append(useds, *u)
		}
	}
	if len(needs) < cfg.MinJobs {
		return 0, 0, fmt.Sprintf("%s: measured in %d of the jobs, %d needed", fig.what, len(needs), cfg.MinJobs)
	}
	top, median := slices.Max(needs), median(needs)
	if median <= 0 || top > cfg.MaxSpread*median {
		return 0, 0, fmt.Sprintf("%s: too varied (the largest need is %s the median)", fig.what, timesText(top, median))
	}
	return top, slices.Max(useds), ""
}

func timesText(top, median float64) string {
	if median <= 0 {
		return "far above"
	}
	return strconv.FormatFloat(top/median, 'f', 1, 64) + "×"
}

func memoryChange(req Request, jobs []Past, cfg Config) (*Change, string) {
	reqMem := req.MemPerNode()
	if reqMem <= 0 {
		return nil, ""
	}
	need, peak, ok, why := memoryFigure.largest(jobs, float64(reqMem), cfg)
	if !ok {
		return nil, why
	}
	from := "--mem=" + analysis.SlurmMem(reqMem)
	if req.MemPerNodeBytes <= 0 {
		from = "--mem-per-cpu=" + analysis.SlurmMem(req.MemPerCPUBytes)
	}
	return &Change{Option: "--mem", From: from, To: "--mem=" + analysis.SlurmMem(int64(need)),
		Used: fmt.Sprintf("at most %s of the %s per node you ask for (peak %s)", analysis.Percent(peak/float64(reqMem)),
			analysis.Size(float64(reqMem)), analysis.Size(peak))}, ""
}

// cpuChange advises fewer CPUs. Under --mem-per-cpu (and no memory advice
// replacing it with --mem), fewer CPUs mean less memory: only as few as
// still give every comparable job the memory it needed.
func cpuChange(req Request, jobs []Past, cfg Config, memAdvised bool) (*Change, string) {
	cpus := req.CPUs()
	if cpus <= 1 {
		return nil, ""
	}
	need, top, ok, why := cpuFigure.largest(jobs, float64(cpus), cfg)
	if !ok {
		return nil, why
	}
	used := fmt.Sprintf("at most %s of the %d you ask for", analysis.Cores(top), cpus)
	rec := int64(need)
	tasks, perTask := max(1, req.Tasks), max(1, req.CPUsPerTask)
	var c Change
	newCPUs := rec
	switch {
	case perTask > 1 || tasks == 1:
		recPer := max(1, (rec-1)/tasks+1)
		if recPer >= perTask {
			return nil, ""
		}
		newCPUs = recPer * tasks
		c = Change{Option: "--cpus-per-task", From: "--cpus-per-task=" + strconv.FormatInt(perTask, 10),
			To: "--cpus-per-task=" + strconv.FormatInt(recPer, 10), Used: used}
	default:
		c = Change{Option: "--ntasks", From: "--ntasks=" + strconv.FormatInt(tasks, 10),
			To: "--ntasks=" + strconv.FormatInt(rec, 10), Used: used}
	}
	if req.MemPerNodeBytes <= 0 && req.MemPerCPUBytes > 0 && !memAdvised {
		memTop, _, why := memoryFigure.top(jobs, cfg)
		if why != "" {
			return nil, "CPUs: fewer would mean less memory at --mem-per-cpu, and the memory the jobs needed is not known (" + why + ")"
		}
		perNode := float64(newCPUs) / float64(max(1, req.Nodes)) * float64(req.MemPerCPUBytes)
		if perNode < memTop {
			return nil, "CPUs: fewer would leave the jobs too little memory at --mem-per-cpu"
		}
	}
	return &c, ""
}

func gpuChange(req Request, jobs []Past, cfg Config) (*Change, string) {
	if req.GPUs <= 1 {
		return nil, ""
	}
	// Any GPU fewer is worth saying: MinSaving does not apply.
	strict := cfg
	strict.MinSaving = 1 / float64(req.GPUs)
	need, _, ok, why := gpuFigure.largest(jobs, float64(req.GPUs), strict)
	if !ok {
		return nil, why
	}
	used := fmt.Sprintf("at most %d of the %d you ask for (with work on them)", int64(need), req.GPUs)
	if req.GPUsFromGres {
		// --gres counts per node: advised on one node only.
		if max(1, req.Nodes) != 1 {
			return nil, ""
		}
		return &Change{Option: "--gres", From: "--gres=gpu:" + strconv.FormatInt(req.GPUs, 10),
			To: "--gres=gpu:" + strconv.FormatInt(int64(need), 10), Used: used}, ""
	}
	return &Change{Option: "--gpus", From: "--gpus=" + strconv.FormatInt(req.GPUs, 10), To: "--gpus=" + strconv.FormatInt(int64(need), 10), Used: used}, ""
}

func timeChange(req Request, jobs []Past, cfg Config) (*Change, string) {
	if req.TimeLimitSeconds <= 0 {
		return nil, ""
	}
	need, ran, ok, why := timeFigure.largest(jobs, float64(req.TimeLimitSeconds), cfg)
	if !ok {
		return nil, why
	}
	return &Change{Option: "--time", From: "--time=" + analysis.SlurmTime(req.TimeLimitSeconds), To: "--time=" + analysis.SlurmTime(int64(need)),
		Used: fmt.Sprintf("at most %s of the %s you ask for", analysis.Duration(ran), analysis.Duration(float64(req.TimeLimitSeconds)))}, ""
}

// Text is the advice for people: nothing when there is none, else one
// line of what the jobs used, one saying what would have served them, and
// the #SBATCH lines.
func Text(a Advice) string {
	if len(a.Changes) == 0 {
		return ""
	}
	which := fmt.Sprintf("your last %d jobs like this one", a.Jobs)
	if a.Basis == "name" {
		which = fmt.Sprintf("your last %d jobs named %s", a.Jobs, quoteName(a.Name))
	}
	if a.Account != "" {
		which = strings.Replace(which, "your last", "the last", 1) + " in account " + quoteName(a.Account)
	}
	label := map[string]string{"--mem": "memory", "--cpus-per-task": "CPUs", "--ntasks": "CPUs", "--gpus": "GPUs", "--gres": "GPUs", "--time": "time"}
	used := make([]string, 0, len(a.Changes))
	for _, c := range a.Changes {
		used = append(used, label[c.Option]+" "+c.Used)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "jobsight: %s used %s.\n", which, strings.Join(used, "; "))
	b.WriteString("jobsight: this request would have served every one of them (quiet: JOBSIGHT_NO_ADVICE=1 or ~/.jobsight-no-advice):\n")
	for _, c := range a.Changes {
		b.WriteString("  #SBATCH " + c.To)
		if from, _, _ := strings.Cut(c.From, "="); from != c.Option {
			b.WriteString("   (in place of #SBATCH " + c.From + ")")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// quoteName quotes a job name for a terminal: Go's quoting, so a control
// character or escape sequence in the name is shown, never run.
func quoteName(s string) string {
	const maxName = 64
	if r := []rune(s); len(r) > maxName {
		s = string(r[:maxName]) + "…"
	}
	return strconv.Quote(s)
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
