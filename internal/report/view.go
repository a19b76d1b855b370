package report

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/jobsight/jobsight/internal/analysis"
	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/internal/textfmt"
)

// view is the report's content, computed once from an Input and written
// out by the Markdown, HTML and text renderers. Its strings are raw: each
// renderer escapes or cleans them for its own output.
type view struct {
	title     string
	jobURL    string // validated http(s) URL, or ""
	simulated bool

	// summary names the job (id, user, account, nodes...); run says how
	// it ran (state, times, elapsed).
	summary []field
	run     []field
	usage   []usageRow
	// gpuSummary describes the job's GPUs as a whole; gpus lists them.
	gpuSummary string
	gpuLabel   string // what a GPU row is named by: "GPU" or "node/GPU"
	gpus       []gpuRow
	// activity says per GPU what it did beyond utilisation, and what its
	// device could not give.
	activity []activityRow
	missing  []string

	analysed    bool
	class       string
	score       string
	explanation string
	figures     []field
	short       bool

	causes    []causeView
	recAdvice string
	changes   []changeView
	// advise is the `jobsight advise` command for the next job like
	// this one (same request), shown with a suggested change.
	advise  string
	savings []string
	footer  string
}

type field struct{ label, value string }

// usageRow is one resource: what was asked for, what was used and the
// share used (nil when it cannot be computed from measured values).
type usageRow struct {
	resource, requested, used string
	share                     *float64
}

type gpuRow struct {
	label, model        string
	avg, p95, peak      *float64
	memPeak, memTotal   *int64
	notes               []string
	utilisationMeasured bool
	heldIdle, simulated bool
}

// activityRow is one GPU's activity figures ("SM activity 12% / 18% /
// 35%", average / 95th percentile / peak) and the figures its device could
// not give, described; label may name several GPUs alike.
type activityRow struct {
	label    string
	figures  []string
	notGiven []string
}

type causeView struct {
	title, confidence, evidence, lesson, docURL string
}

// changeView is one #SBATCH change: the line removed, the line added
// (either may be empty) and why.
type changeView struct {
	option, minus, plus, reason string
}

// Class explanations: one neutral sentence each.
var classExplanations = map[string]string{
	jobmodel.ClassEfficient:   "The job used most of the resources it reserved.",
	jobmodel.ClassAcceptable:  "The job used a fair share of the resources it reserved; some of the reservation was not used.",
	jobmodel.ClassInefficient: "A large part of the resources the job reserved was not used.",
	jobmodel.ClassWasted:      "Nearly all of the resources the job reserved went unused.",
	jobmodel.ClassShort:       "The job ran too briefly for its efficiency to be judged.",
	jobmodel.ClassUnknown:     "The figures needed to classify this job were not measured.",
}

func buildView(in Input) *view {
	j := &in.Job
	a := in.Analysis
	if a == nil {
		a = j.Analysis
	}
	v := &view{}
	v.title = "Job " + orDash(j.JobID)
	if j.Cluster != "" {
		v.title += " on " + j.Cluster
	}
	if u, ok := safeURL(in.JobURL); ok {
		v.jobURL = u
	}
	v.simulated = simulatedGPUs(j)

	v.summary, v.run = summaryFields(j)
	v.usage = usageRows(j)
	v.gpuSummary, v.gpuLabel, v.gpus = gpuRows(j)
	v.activity = activityRows(j)
	v.missing = missingMetrics(j, a)

	if a == nil {
		v.footer = "This job has not been analysed yet; the figures above are as measured."
		return v
	}
	v.analysed = true
	v.class = orDash(a.Class)
	v.short = a.Class == jobmodel.ClassShort
	v.explanation = classExplanations[a.Class]
	if v.short {
		if j.ElapsedSeconds != nil {
			v.explanation = "The job ran for " + formatDuration(*j.ElapsedSeconds) + ", too short to judge its efficiency."
		} else {
			v.explanation = "The job ran too briefly to judge its efficiency."
		}
	}
	if a.Score != nil && !v.short {
		v.score = "score " + formatNum(*a.Score, 2)
		switch {
		case a.Kind == jobmodel.KindGPU && scoreIsSMActivity(a):
			v.score += " (mean SM activity " + formatPct(*a.Score)
			if u := a.Figures.GPUUtilization; u != nil {
				v.score += "; average GPU utilisation " + formatPct(*u)
			}
			v.score += ")"
		case a.Kind == jobmodel.KindGPU:
			v.score += " (average GPU utilisation " + formatPct(*a.Score) + ")"
		case a.Kind == jobmodel.KindCPU:
			v.score += " (combined CPU score)"
		}
	}
	if a.Kind == jobmodel.KindGPU && !v.short && scoreIsSMActivity(a) && a.Figures.GPUUtilization != nil {
		v.explanation += " The GPU score is the mean SM activity (" + formatPct(*a.Score) + "), the share of the GPUs' SMs at work, which is lower than their utilisation (" +
			formatPct(*a.Figures.GPUUtilization) + ", the share of time any kernel ran)."
	}
	if v.simulated && a.Kind == jobmodel.KindGPU && !v.short {
		v.explanation += " The GPU figures this rests on are SIMULATED."
	}
	v.figures = analysisFigures(a)
	v.causes = causeViews(a.Causes)
	v.recAdvice, v.changes = recommendation(a.Recommendation)
	if len(v.changes) > 0 {
		v.advise = adviseCommand(in.Job)
	}
	v.savings = savings(a.Savings)

	foot := []string{}
	if a.Version > 0 {
		foot = append(foot, "analysis rules version "+strconv.Itoa(a.Version))
	}
	if a.AnalyzedAt != nil {
		foot = append(foot, "analysed "+formatTime(a.AnalyzedAt))
	}
	v.footer = "The analysis is advisory: nothing in it changes this job or later ones."
	if len(foot) > 0 {
		v.footer = "Jobsight " + strings.Join(foot, ", ") + ". " + v.footer
	}
	return v
}

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

// simulatedGPUs reports whether any of the job's GPU data came from the
// simulated source.
func simulatedGPUs(j *jobmodel.Job) bool {
	if j.GPU != nil && (j.GPU.Simulated || strings.Contains(j.GPU.Source, jobmodel.GPUSourceSimulated)) {
		return true
	}
	for _, g := range j.GPUs {
		if g.Simulated {
			return true
		}
	}
	return false
}

func summaryFields(j *jobmodel.Job) (who, run []field) {
	var f []field
	add := func(label, value string) {
		if value != "" {
			f = append(f, field{label, value})
		}
	}
	id := j.JobID
	switch {
	case j.ArrayJobID != nil && j.ArrayTaskID != nil:
		id += fmt.Sprintf(" (array job %d, task %d)", *j.ArrayJobID, *j.ArrayTaskID)
	case j.HetJobID != nil && j.HetJobOffset != nil:
		id += fmt.Sprintf(" (heterogeneous job %d, component %d)", *j.HetJobID, *j.HetJobOffset)
	}
	add("Job ID", orDash(id))
	add("Cluster", j.Cluster)
	add("Job name", j.Name)
	user := j.User
	if j.UID != nil {
		if user == "" {
			user = "uid " + strconv.FormatUint(uint64(*j.UID), 10)
		} else {
			user += " (uid " + strconv.FormatUint(uint64(*j.UID), 10) + ")"
		}
	}
	add("User", user)
	add("Account", j.Account)
	add("Partition", j.Partition)
	add("QOS", j.QOS)
	nodes := int64(j.NodeCount)
	if nodes == 0 {
		nodes = int64(len(j.Nodes))
	}
	if nodes > 0 || len(j.Nodes) > 0 {
		s := strconv.FormatInt(nodes, 10)
		if len(j.Nodes) > 0 {
			const show = 8
			names := j.Nodes
			more := ""
			if len(names) > show {
				more = fmt.Sprintf(" and %d more", len(names)-show)
				names = names[:show]
			}
			s += ": " + strings.Join(names, ", ") + more
		}
		add("Nodes", s)
	}
	who, f = f, nil
	state := orDash(j.State)
	var extra []string
	if j.ExitCode != nil {
		extra = append(extra, "exit code "+strconv.Itoa(*j.ExitCode))
	}
	if j.ExitSignal != nil && *j.ExitSignal != 0 {
		extra = append(extra, "signal "+strconv.Itoa(*j.ExitSignal))
	}
	if j.Reason != "" && j.Reason != "None" {
		extra = append(extra, "reason "+j.Reason)
	}
	if len(extra) > 0 {
		state += " (" + strings.Join(extra, ", ") + ")"
	}
	add("State", state)
	if j.SubmitTime != nil {
		add("Submitted", formatTime(j.SubmitTime))
	}
	if j.StartTime != nil {
		add("Started", formatTime(j.StartTime))
	}
	if j.EndTime != nil {
		add("Ended", formatTime(j.EndTime))
	}
	switch {
	case j.ElapsedSeconds != nil && j.TimeLimitSeconds != nil && *j.TimeLimitSeconds > 0:
		add("Elapsed", formatDuration(*j.ElapsedSeconds)+" of a "+formatDuration(float64(*j.TimeLimitSeconds))+
			" time limit ("+formatPct(*j.ElapsedSeconds/float64(*j.TimeLimitSeconds))+")")
	case j.ElapsedSeconds != nil:
		add("Elapsed", formatDuration(*j.ElapsedSeconds)+" (no time limit recorded)")
	default:
		add("Elapsed", "not measured")
	}
	return who, f
}

func usageRows(j *jobmodel.Job) []usageRow {
	var rows []usageRow
	req := j.Requested

	cpu := usageRow{resource: "CPU", requested: "not recorded", used: "not measured"}
	if req.CPUs != nil {
		cpu.requested = textfmt.Plural(*req.CPUs, "CPU")
	}
	if c := j.CPU; c != nil && c.AvgCores != nil {
		cpu.used = "avg " + formatCores(*c.AvgCores) + " cores"
		var more []string
		if c.P95Cores != nil {
			more = append(more, "p95 "+formatCores(*c.P95Cores))
		}
		if c.PeakCores != nil {
			more = append(more, "peak "+formatCores(*c.PeakCores))
		}
		if len(more) > 0 {
			cpu.used += " (" + strings.Join(more, ", ") + ")"
		}
		if c.Efficiency != nil {
			cpu.share = c.Efficiency
		} else if req.CPUs != nil {
			cpu.share = ratio(*c.AvgCores, float64(*req.CPUs))
		}
	} else if c != nil && c.CoreSeconds != nil {
		cpu.used = formatNum(*c.CoreSeconds, 0) + " core-seconds"
		cpu.share = c.Efficiency
	}
	rows = append(rows, cpu)

	mem := usageRow{resource: "Memory", requested: "not recorded", used: "not measured"}
	var limit *int64
	switch {
	case req.MemoryBytes != nil:
		mem.requested = formatBytes(*req.MemoryBytes)
		limit = req.MemoryBytes
	case j.Memory != nil && j.Memory.LimitBytes != nil:
		mem.requested = formatBytes(*j.Memory.LimitBytes) + " (limit)"
	}
	if m := j.Memory; m != nil {
		if m.LimitBytes != nil {
			limit = m.LimitBytes
		}
		var parts []string
		if m.RSSPeakBytes != nil {
			parts = append(parts, "peak "+formatBytes(*m.RSSPeakBytes)+" resident")
		}
		if m.PeakBytes != nil {
			parts = append(parts, "peak "+formatBytes(*m.PeakBytes)+" incl. page cache")
		}
		if len(parts) > 0 {
			mem.used = strings.Join(parts, ", ")
		}
		switch {
		case m.Efficiency != nil:
			mem.share = m.Efficiency
		case m.RSSPeakBytes != nil && limit != nil:
			mem.share = ratio(float64(*m.RSSPeakBytes), float64(*limit))
		}
	}
	rows = append(rows, mem)

	if isGPUJob(j) {
		g := usageRow{resource: "GPUs", requested: "not recorded", used: "not measured"}
		switch {
		case req.GPUs != nil:
			g.requested = textfmt.Plural(*req.GPUs, "GPU")
		case j.GPU != nil && j.GPU.Held != nil:
			g.requested = textfmt.Plural(*j.GPU.Held, "GPU") + " held"
		}
		if s := j.GPU; s != nil && s.UtilizationAvg != nil {
			g.used = "avg utilisation " + formatPct(*s.UtilizationAvg)
			if s.Activity != nil && s.Activity.SM != nil && s.Activity.SM.Avg != nil {
				g.used += ", SM activity " + formatPct(*s.Activity.SM.Avg)
			}
			if s.EffectiveGPUs != nil {
				g.used += ", " + strconv.FormatInt(*s.EffectiveGPUs, 10) + " of " + strconv.FormatInt(s.Count, 10) + " in use"
			}
			g.share = s.UtilizationAvg
		}
		rows = append(rows, g)
	}

	t := usageRow{resource: "Time", requested: "no limit recorded", used: "not measured"}
	if j.TimeLimitSeconds != nil {
		t.requested = formatDuration(float64(*j.TimeLimitSeconds))
	}
	if j.ElapsedSeconds != nil {
		t.used = formatDuration(*j.ElapsedSeconds)
		if j.TimeLimitSeconds != nil {
			t.share = ratio(*j.ElapsedSeconds, float64(*j.TimeLimitSeconds))
		}
	}
	rows = append(rows, t)

	if io := j.IO; io != nil && (io.ReadBytes != nil || io.WrittenBytes != nil) {
		var parts []string
		if io.ReadBytes != nil {
			parts = append(parts, "read "+formatBytes(*io.ReadBytes))
		}
		if io.WrittenBytes != nil {
			parts = append(parts, "written "+formatBytes(*io.WrittenBytes))
		}
		rows = append(rows, usageRow{resource: "Storage I/O", requested: "–", used: strings.Join(parts, ", ")})
	}
	rows = append(rows, stallRow(j), oomRow(j))
	return rows
}

// stallRow says how much of the time the job was watched its tasks waited
// for a CPU, memory or I/O (pressure.*), "not measured" where the
// document has no pressure figures (cgroup v1, no PSI).
func stallRow(j *jobmodel.Job) usageRow {
	r := usageRow{resource: "Waiting (stalls)", requested: "–", used: "not measured"}
	p := j.Pressure
	if p == nil {
		return r
	}
	multi := j.NodeCount > 1 || len(j.Nodes) > 1
	f := p.Families()
	var parts []string
	for _, res := range []struct {
		name       string
		some, full jobmodel.StallFields
		hasFull    bool
	}{{"CPU", f[0], f[0], false}, {"memory", f[1], f[2], true}, {"I/O", f[3], f[4], true}} {
		if *res.some.Ratio == nil {
			continue
		}
		s := res.name + " " + formatPct(**res.some.Ratio)
		var more []string
		if res.hasFull && *res.full.Ratio != nil && **res.full.Ratio > 0 {
			more = append(more, "all tasks at once "+formatPct(**res.full.Ratio))
		}
		if multi && *res.some.MaxNodeRatio != nil {
			more = append(more, "worst node "+formatPct(**res.some.MaxNodeRatio))
		}
		if *res.some.PeakRatio != nil {
			more = append(more, "worst interval "+formatPct(**res.some.PeakRatio))
		}
		if len(more) > 0 {
			s += " (" + strings.Join(more, ", ") + ")"
		}
		parts = append(parts, s)
	}
	if len(parts) > 0 {
		r.used = "share of the watched time tasks waited for: " + strings.Join(parts, "; ")
	}
	return r
}

// oomRow is the number of the job's processes the kernel killed for
// memory (memory.oom_kills), "not measured" where it could not be read.
func oomRow(j *jobmodel.Job) usageRow {
	r := usageRow{resource: "Killed for memory", requested: "–", used: "not measured"}
	switch {
	case j.Memory == nil || j.Memory.OOMKills == nil || *j.Memory.OOMKills < 0:
	case *j.Memory.OOMKills == 0:
		r.used = "none"
	default:
		r.used = textfmt.Plural(*j.Memory.OOMKills, "process") + " killed by the kernel's OOM killer"
	}
	return r
}

// isGPUJob reports whether the job asked for, held or ran on GPUs.
func isGPUJob(j *jobmodel.Job) bool {
	return (j.Requested.GPUs != nil && *j.Requested.GPUs > 0) || j.GPU != nil || len(j.GPUs) > 0
}

// multiNodeGPUs reports whether the job's GPUs are on more than one node,
// so that a GPU must be named by node and index.
func multiNodeGPUs(gpus []jobmodel.GPUDevice) bool {
	for _, g := range gpus {
		if g.Node != gpus[0].Node {
			return true
		}
	}
	return false
}

func gpuName(multi bool, node string, index int64) string {
	if multi {
		return node + "/" + strconv.FormatInt(index, 10)
	}
	return "GPU " + strconv.FormatInt(index, 10)
}

func gpuRows(j *jobmodel.Job) (string, string, []gpuRow) {
	if !isGPUJob(j) {
		return "", "", nil
	}
	var parts []string
	if s := j.GPU; s != nil {
		held := ""
		if s.Held != nil {
			held = textfmt.Plural(*s.Held, "GPU") + " held"
			if s.Count != *s.Held {
				held += ", " + strconv.FormatInt(s.Count, 10) + " reported"
			}
		} else {
			held = textfmt.Plural(s.Count, "GPU") + " reported"
		}
		parts = append(parts, held)
		if s.EffectiveGPUs != nil {
			p := strconv.FormatInt(*s.EffectiveGPUs, 10) + " above the activity threshold"
			if s.EffectiveRatio != nil {
				p += " (" + formatPct(*s.EffectiveRatio) + ")"
			}
			parts = append(parts, p)
		}
		if s.HeldIdle != nil && *s.HeldIdle > 0 {
			parts = append(parts, strconv.FormatInt(*s.HeldIdle, 10)+" held with no process of the job seen on it")
		}
		if s.Source != "" {
			parts = append(parts, "data from "+describeSource(s.Source))
		}
		if s.Attribution != "" {
			parts = append(parts, "GPUs known from "+describeAttribution(s.Attribution))
		}
		if s.EnergyJoules != nil {
			parts = append(parts, "energy "+formatNum(*s.EnergyJoules/3.6e6, 2)+" kWh")
		}
	} else {
		parts = append(parts, "no GPU data was recorded")
	}
	summary := strings.Join(parts, "; ")

	multi := multiNodeGPUs(j.GPUs)
	label := "GPU"
	if multi {
		label = "Node/GPU"
	}
	var rows []gpuRow
	for _, g := range j.GPUs {
		r := gpuRow{
			label: gpuName(multi, g.Node, g.Index), model: g.Model,
			avg: g.UtilizationAvg, p95: g.UtilizationP95, peak: g.UtilizationPeak,
			memPeak: g.MemoryPeakBytes, memTotal: g.MemoryTotalBytes,
		}
		if g.Partition != "" {
			p := g.Partition
			if g.ParentIndex != nil {
				p += " on GPU " + strconv.FormatInt(*g.ParentIndex, 10)
			}
			r.notes = append(r.notes, p)
		}
		if g.HeldIdle {
			r.notes = append(r.notes, "held, no process of the job seen")
		} else if !g.Held && j.GPU != nil && j.GPU.Held != nil {
			r.notes = append(r.notes, "not in the job's allocation")
		}
		if g.Simulated {
			r.notes = append(r.notes, "SIMULATED")
		}
		// The activity figures' absence is said with the activity.
		var missing []string
		for _, m := range g.MissingMetrics {
			if _, ok := activityMetrics[m]; !ok {
				missing = append(missing, m)
			}
		}
		if len(missing) > 0 {
			r.notes = append(r.notes, "not measured: "+strings.Join(missing, ", "))
		}
		rows = append(rows, r)
	}
	return summary, label, rows
}

// describeSource names a GPU data source ("nvml+simulated" when nodes
// differ).
func describeSource(src string) string {
	names := map[string]string{
		jobmodel.GPUSourceNVML:      "NVML",
		jobmodel.GPUSourceAMDSMI:    "the AMD SMI library",
		jobmodel.GPUSourceAMDSMICLI: "the amd-smi command",
		jobmodel.GPUSourceSimulated: "the SIMULATED source (not real hardware)",
	}
	var out []string
	for _, part := range strings.Split(src, "+") {
		if d, ok := names[part]; ok {
			out = append(out, d)
		} else {
			out = append(out, part)
		}
	}
	return joinAnd(out)
}

// describeAttribution says how the job's GPUs were learned.
func describeAttribution(a string) string {
	switch a {
	case "slurm":
		return "Slurm's allocation"
	case "cgroup":
		return "the job's device cgroup"
	case "environment":
		return "the command's environment"
	case "processes":
		return "the job's processes (a held GPU with no process cannot be seen)"
	}
	return a
}

// metricNames describes the metric names of missing_metrics.
var metricNames = map[string]string{
	"cpu":                  "CPU time",
	"memory":               "memory in use",
	"memory_rss":           "resident memory",
	"memory_peak":          "peak memory",
	"memory_limit":         "memory limit",
	"cpus_allocated":       "allocated CPUs",
	"processes":            "process count",
	"threads":              "thread count",
	"io":                   "storage I/O",
	"memory_shmem":         "shared memory",
	"memory_mapped_file":   "mapped file memory",
	"memory_working_set":   "memory working set",
	"cpu_pressure":         "CPU pressure stalls",
	"memory_pressure":      "memory pressure stalls",
	"io_pressure":          "I/O pressure stalls",
	"oom_kills":            "processes killed for memory",
	"threads_peak":         "kernel's thread peak",
	"gpu":                  "GPU data",
	"gpu_utilization":      "GPU utilisation",
	"gpu_memory_used":      "GPU memory in use",
	"gpu_memory_total":     "GPU memory capacity",
	"gpu_power":            "GPU power",
	"gpu_energy":           "GPU energy",
	"gpu_temperature":      "GPU temperature",
	"gpu_sm_clock":         "GPU clock",
	"gpu_memory_clock":     "GPU memory clock",
	"gpu_pcie":             "GPU PCIe traffic",
	"gpu_sm_activity":      "GPU SM activity",
	"gpu_sm_occupancy":     "GPU SM occupancy",
	"gpu_tensor_activity":  "GPU tensor-core activity",
	"gpu_tensor_precision": "GPU tensor activity by precision",
	"gpu_pipe_activity":    "GPU FP64/FP32/FP16 pipe activity",
	"gpu_dram_activity":    "GPU memory bandwidth",
	"gpu_link":             "GPU-to-GPU link traffic",
	"gpu_processes":        "GPU processes",
	"slurm_metadata":       "Slurm job metadata",
	"elapsed":              "elapsed time",
	"cpu_efficiency":       "CPU efficiency",
	"memory_efficiency":    "memory efficiency",
	"time_limit":           "time limit",
}

// missingMetrics lists, in the order first named and without repeats,
// what the document and the analysis say could not be measured.
func missingMetrics(j *jobmodel.Job, a *jobmodel.Analysis) []string {
	var names []string
	names = append(names, j.MissingMetrics...)
	if a != nil {
		names = append(names, a.MissingMetrics...)
	}
	seen := map[string]bool{}
	var out []string
	for _, n := range names {
		if n == "" || seen[n] {
			continue
		}
		seen[n] = true
		out = append(out, describeMetric(n))
	}
	return out
}

func describeMetric(n string) string {
	if d, ok := metricNames[n]; ok {
		return d + " (" + n + ")"
	}
	if node, ok := strings.CutPrefix(n, "node:"); ok {
		return "everything on node " + node + " (no data from its agent)"
	}
	if node, ok := strings.CutPrefix(n, "samples_after_agent_loss:"); ok {
		return "samples on node " + node + " after its agent stopped"
	}
	return n
}

func analysisFigures(a *jobmodel.Analysis) []field {
	var f []field
	fig := a.Figures
	if fig.GPUHours != nil {
		s := formatNum(*fig.GPUHours, 1) + " reserved"
		if fig.GPUHoursWasted != nil {
			s += ", " + formatNum(*fig.GPUHoursWasted, 1) + " not used"
		}
		f = append(f, field{"GPU-hours", s})
	}
	if fig.GPUSMActivity != nil {
		f = append(f, field{"GPU SM activity", formatPct(*fig.GPUSMActivity) + " (mean over the GPUs)"})
	}
	if fig.EffectiveGPUs != nil && fig.GPUs != nil {
		s := strconv.FormatInt(*fig.EffectiveGPUs, 10) + " of " + strconv.FormatInt(*fig.GPUs, 10)
		if fig.EffectiveGPURatio != nil {
			s += " (" + formatPct(*fig.EffectiveGPURatio) + ")"
		}
		f = append(f, field{"GPUs in use", s})
	}
	if fig.CoreHours != nil {
		s := formatNum(*fig.CoreHours, 1) + " reserved"
		if fig.CoreHoursWasted != nil {
			s += ", " + formatNum(*fig.CoreHoursWasted, 1) + " not used"
		}
		f = append(f, field{"Core-hours", s})
	}
	if fig.CPUEfficiency != nil {
		f = append(f, field{"CPU efficiency", formatPct(*fig.CPUEfficiency)})
	}
	if fig.MemoryEfficiency != nil {
		m := formatPct(*fig.MemoryEfficiency)
		switch fig.MemoryBasis {
		case "per_node_working_set":
			m += " (fullest node's peak working set over the per-node request)"
		case "total_working_set":
			m += " (peak working set over the request)"
		case "per_node":
			m += " (fullest node's peak over the per-node request)"
		case "total":
			m += " (peak incl. page cache over the request)"
		case "total_rss":
			m += " (peak resident over the request)"
		}
		f = append(f, field{"Memory efficiency", m})
	}
	if fig.WalltimeEfficiency != nil {
		f = append(f, field{"Time limit used", formatPct(*fig.WalltimeEfficiency)})
	}
	return f
}

func causeViews(cs []jobmodel.Cause) []causeView {
	var out []causeView
	for _, c := range cs {
		cv := causeView{
			title:      orDash(c.Title),
			confidence: formatPct(jobmodel.Clamp01(c.Confidence)),
			evidence:   c.Evidence,
			lesson:     c.Lesson,
		}
		if u, ok := safeURL(c.DocURL); ok {
			cv.docURL = u
		}
		out = append(out, cv)
	}
	return out
}

// sbatchLine writes one #SBATCH line for an option and a value; a value
// that is itself an option ("--gpus=4") is taken as the whole option.
func sbatchLine(option, value string) string {
	option, value = clean(option), clean(value)
	if value == "" {
		return ""
	}
	if strings.HasPrefix(value, "-") {
		return "#SBATCH " + value
	}
	if option == "" {
		return "#SBATCH " + value
	}
	if !strings.HasPrefix(option, "-") {
		if len(option) == 1 {
			option = "-" + option
		} else {
			option = "--" + option
		}
	}
	if len(option) == 2 { // short option: "-G 4"
		return "#SBATCH " + option + " " + value
	}
	return "#SBATCH " + option + "=" + value
}

func recommendation(r jobmodel.Recommendation) (string, []changeView) {
	var parts []string
	if r.GPUs != nil {
		if *r.GPUs == 0 {
			parts = append(parts, "no GPU")
		} else {
			parts = append(parts, textfmt.Plural(*r.GPUs, "GPU"))
		}
	}
	if r.CPUs != nil {
		parts = append(parts, textfmt.Plural(*r.CPUs, "CPU"))
	}
	if r.MemoryBytes != nil {
		m := formatBytes(*r.MemoryBytes) + " of memory"
		if r.MemoryPerNodeBytes != nil && *r.MemoryPerNodeBytes != *r.MemoryBytes {
			m += " (" + formatBytes(*r.MemoryPerNodeBytes) + " per node)"
		}
		parts = append(parts, m)
	}
	if r.TimeLimitSeconds != nil {
		parts = append(parts, "a time limit of "+formatDuration(float64(*r.TimeLimitSeconds)))
	}
	advice := ""
	if len(parts) > 0 {
		advice = "A request that fits what this job used: " + joinAnd(parts) + "."
	}
	var ch []changeView
	for _, c := range r.Changes {
		cv := changeView{option: clean(c.Option), minus: sbatchLine(c.Option, c.From), plus: sbatchLine(c.Option, c.To), reason: c.Reason}
		if cv.minus == "" && cv.plus == "" {
			continue
		}
		ch = append(ch, cv)
	}
	return advice, ch
}

func savings(s jobmodel.Savings) []string {
	var out []string
	if s.GPUHours != nil {
		out = append(out, formatNum(*s.GPUHours, 1)+" GPU-hours")
	}
	if s.CoreHours != nil {
		out = append(out, formatNum(*s.CoreHours, 1)+" core-hours")
	}
	if s.MemoryGiBHours != nil {
		out = append(out, formatNum(*s.MemoryGiBHours, 1)+" GiB-hours of memory")
	}
	return out
}

// savingsSentence is the savings as one sentence, or "" when none were
// estimated.
func (v *view) savingsSentence() string {
	if len(v.savings) == 0 {
		return ""
	}
	return "With the suggested request, about " + joinAnd(v.savings) + " would have been free for other jobs."
}

// adviseSentence introduces the advise command in every format.
const adviseSentence = "Before the next job like this one, sbatch shows its owner what their last jobs like it used and the request that would have served them all (where the site runs Jobsight's cli_filter). To see it now, as the owner:"

// adviseCommand is `jobsight advise` with the job's request, for the user
// to run before their next job like it. Values are shown only when they
// are plain (letters, digits, ".", "_", "+", "-"): the line is copied into
// a shell, and a job name or account a user typed may be anything.
func adviseCommand(job jobmodel.Job) string {
	plain := func(s string) bool {
		if s == "" || len(s) > 64 {
			return false
		}
		for _, r := range s {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._+-", r)) {
				return false
			}
		}
		return s[0] != '-'
	}
	args := []string{"jobsight", "advise"}
	add := func(opt, v string) { args = append(args, opt, v) }
	if plain(job.Partition) {
		add("-p", job.Partition)
	}
	if plain(job.Account) {
		add("-A", job.Account)
	}
	req := job.Requested
	if req.CPUs != nil && *req.CPUs > 0 {
		tasks := int64(1)
		if req.Tasks != nil && *req.Tasks > 1 && *req.CPUs%*req.Tasks == 0 {
			tasks = *req.Tasks
			add("-n", strconv.FormatInt(tasks, 10))
		}
		add("-c", strconv.FormatInt(*req.CPUs/tasks, 10))
	}
	if req.Nodes != nil && *req.Nodes > 1 {
		add("-N", strconv.FormatInt(*req.Nodes, 10))
	}
	if req.MemoryPerNodeBytes != nil && *req.MemoryPerNodeBytes > 0 {
		add("--mem", analysis.SlurmMem(*req.MemoryPerNodeBytes))
	}
	if req.GPUs != nil && *req.GPUs > 0 {
		add("--gpus", strconv.FormatInt(*req.GPUs, 10))
	}
	if job.TimeLimitSeconds != nil && *job.TimeLimitSeconds > 0 {
		add("-t", analysis.SlurmTime(*job.TimeLimitSeconds))
	}
	if plain(job.Name) {
		add("-J", job.Name)
	}
	return strings.Join(args, " ")
}
