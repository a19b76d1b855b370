package jobagent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"os/user"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/procfs"

	"github.com/jobsight/jobsight/agent/collector"
	"github.com/jobsight/jobsight/agent/monitor"
	"github.com/jobsight/jobsight/internal/intconv"
	"github.com/jobsight/jobsight/internal/jobmodel"
)

// RunResult is what the standalone mode measured.
type RunResult struct {
	ExitCode int
	Job      jobmodel.Job
	Node     jobmodel.Node
	Machine  Machine
	Wall     time.Duration
}

// Machine is what the machine offered the command.
type Machine struct {
	Host        string
	CPUs        int
	MemoryBytes int64 // 0 when unknown
}

// Run monitors a command without Slurm: it starts args, samples the command
// and its descendants until it exits, writes the job document (to
// Elasticsearch when configured, else a file in output_dir), and returns
// the command's exit code. SIGINT and SIGTERM are passed on to the command.
func (a *Agent) Run(ctx context.Context, args []string) (*RunResult, error) {
	if len(args) == 0 {
		return nil, errors.New("run: no command given (usage: jobsight-agent run -- CMD [ARGS])")
	}
	host, _ := os.Hostname()
	host, _, _ = strings.Cut(host, ".")
	r := &standaloneRun{a: a, args: args, host: host, machine: machineFacts(a.Config.ProcRoot, host), cluster: a.Config.Cluster}
	if r.cluster == "" {
		r.cluster = safeName(host)
	}
	return r.run(ctx)
}

// standaloneRun is one command measured on a machine without Slurm
// (`jobsight-agent run -- CMD`). Its job is the command and everything it
// starts, followed through their process tree (no cgroup, no Slurm), on
// one node, the machine; its documents are written once, final, when the
// command exits, and its id is its pid qualified by its start: pids are
// reused all the time, so a run never takes another's id and is never
// checked against the store.
type standaloneRun struct {
	a       *Agent
	args    []string
	host    string // the machine's short name: the job's node
	cluster string // cluster, else a name made of the host's
	machine Machine

	cmd   *exec.Cmd
	start time.Time
	job   jobmodel.Job
	node  jobmodel.Node
	state *monitor.NodeState
}

// run starts the command, passes the signals the agent gets on to it,
// samples it until it exits and writes its documents.
func (r *standaloneRun) run(ctx context.Context) (*RunResult, error) {
	a := r.a
	r.cmd = exec.Command(r.args[0], r.args[1:]...)
	r.cmd.Stdin, r.cmd.Stdout, r.cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	r.start = a.now()
	if err := r.cmd.Start(); err != nil {
		return nil, fmt.Errorf("run: starting %s: %w", r.args[0], err)
	}
	pid := r.cmd.Process.Pid

	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	exited := make(chan error, 1)
	go func() { exited <- r.cmd.Wait() }()

	r.job = r.jobDocument(pid)
	r.node = nodeTemplate(r.job, r.host)
	r.state = monitor.NewNodeState(r.start, a.Config.Interval, a.Config.ActiveThresholdCores)
	stopWatching := r.watch(ctx, pid)

	var waitErr error
wait:
	for {
		select {
		case waitErr = <-exited:
			break wait
		case s := <-sigs:
			_ = r.cmd.Process.Signal(s)
		}
	}
	end := a.now()
	stopWatching()
	return r.finish(ctx, end, waitErr), nil
}

// jobDocument is the running job document of the command, whose process
// id is pid.
func (r *standaloneRun) jobDocument(pid int) jobmodel.Job {
	jobID := uint64(pid) // #nosec G115 -- pid is the started command's process id: positive, at most pid_max (2^22)
	id := jobmodel.Identity{Cluster: r.cluster, JobID: jobID}
	job := jobmodel.Job{
		DocID: jobmodel.ReuseDocID(id.DocID(), r.start), SchemaVersion: jobmodel.SchemaVersion,
		Source: jobmodel.SourceStandalone, Cluster: r.cluster, JobID: id.Key(), SlurmJobID: jobID,
		Nodes: []string{r.host}, NodeCount: 1, State: jobmodel.StateRunning,
		SubmitTime: jobmodel.At(r.start), StartTime: jobmodel.At(r.start), AgentVersion: Version,
	}
	if u, err := user.Current(); err == nil {
		job.User = u.Username
		if uid, err := strconv.ParseUint(u.Uid, 10, 32); err == nil {
			job.UID = jobmodel.Ptr(uint32(uid))
		}
	}
	if r.a.Config.StoreJobName {
		job.Name = r.args[0]
	}
	return job
}

// watch samples the command and its descendants (their process tree,
// their GPUs, the machine's energy) in the background; the returned stop
// takes a last sample and ends it.
func (r *standaloneRun) watch(ctx context.Context, pid int) (stop func()) {
	a := r.a
	watchCtx, stopWatching := context.WithCancel(ctx)
	tree, err := collector.NewProcessTree(a.Config.ProcRoot, int32(pid)) // #nosec G115 -- a process id, at most pid_max (2^22)
	if err != nil {
		a.Log.Warn("cannot follow the command's processes; only its totals will be known", "err", err)
		return stopWatching
	}
	var src collector.Collector = tree
	if a.GPU.Backend != nil {
		src = a.runGPU(tree, r.state)
	}
	src = a.addEnergy(src, r.state)
	mon := monitor.New(monitor.Options{
		Interval: a.Config.Interval, FlushInterval: a.Config.FlushInterval,
		PushInterval: a.Config.Prometheus.PushInterval, ActiveThreshold: a.Config.ActiveThresholdCores,
		Labels: Labels(r.cluster, r.job.JobID, r.host, r.job.SubmitTime), Now: a.Now,
	}, src, a.Outputs, a.Health, r.node, r.state, a.Log)
	watched := make(chan struct{})
	go func() { mon.Run(watchCtx); close(watched) }()
	return func() {
		stopWatching()
		<-watched
		tree.Close()
	}
}

// finish writes the command's final node and job documents: what sampling
// saw, corrected by what the kernel accounted (rusage), its exit.
func (r *standaloneRun) finish(ctx context.Context, end time.Time, waitErr error) *RunResult {
	a, job, node, ps := r.a, r.job, r.node, r.cmd.ProcessState
	res := &RunResult{Machine: r.machine, Wall: end.Sub(r.start), ExitCode: exitCode(ps, waitErr)}
	r.state.Fill(&node, end)
	applyRusage(&node, ps)
	a.applyEmissions(ctx, &node.Usage)
	node.AgentState, node.Final, node.UpdatedAt = jobmodel.AgentFinished, true, jobmodel.At(end)
	a.saved("node document", a.Outputs.PutNode(ctx, node))

	job.EndTime = jobmodel.At(end)
	job.ElapsedSeconds = jobmodel.Ptr(end.Sub(r.start).Seconds())
	job.State = jobmodel.StateCompleted
	job.ExitCode = jobmodel.Ptr(res.ExitCode)
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		job.State, job.ExitSignal = jobmodel.StateCancelled, jobmodel.Ptr(int(ws.Signal()))
	} else if res.ExitCode != 0 {
		job.State = jobmodel.StateFailed
	}
	jobmodel.Assemble(&job, []jobmodel.Node{node})
	job.Final, job.UpdatedAt = true, jobmodel.At(end)
	a.writeFinal(ctx, &job)
	a.Outputs.Replay(ctx)
	res.Job, res.Node = job, node
	return res
}

// applyRusage corrects the sampled totals with what the kernel accounted
// for the command and every descendant it waited for: CPU time and block
// I/O are exact (processes that lived between two samples included), and
// the peak RSS of the largest single process is a floor for the sampled
// peak.
func applyRusage(node *jobmodel.Node, ps *os.ProcessState) {
	if ps == nil {
		return
	}
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		return
	}
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
	if node.CPU == nil {
		node.CPU = &jobmodel.CPUUsage{}
	}
	if node.CPU.CoreSeconds == nil || *node.CPU.CoreSeconds < cpu {
		node.CPU.CoreSeconds = jobmodel.Ptr(cpu)
	}
	if node.StartTime != nil && node.EndTime != nil {
		if wall := node.EndTime.Sub(node.StartTime.Time).Seconds(); wall > 0 {
			node.CPU.AvgCores = jobmodel.Ptr(cpu / wall)
			if node.Allocated.CPUs != nil && *node.Allocated.CPUs > 0 {
				node.CPU.Efficiency = jobmodel.Ptr(min(1, cpu/(wall*float64(*node.Allocated.CPUs))))
			}
		}
	}
	maxRSS := ru.Maxrss * 1024
	if node.Memory == nil {
		node.Memory = &jobmodel.MemoryUsage{}
	}
	if node.Memory.RSSPeakBytes == nil || *node.Memory.RSSPeakBytes < maxRSS {
		node.Memory.RSSPeakBytes = jobmodel.Ptr(maxRSS)
	}
	// Linux accounts block I/O in rusage as bytes/512 (task io accounting),
	// including descendants waited for: a floor for what sampling saw.
	read, written := ru.Inblock*512, ru.Oublock*512
	if node.IO == nil {
		node.IO = &jobmodel.IOUsage{}
	}
	if node.IO.ReadBytes == nil || *node.IO.ReadBytes < read {
		node.IO.ReadBytes = jobmodel.Ptr(read)
	}
	if node.IO.WrittenBytes == nil || *node.IO.WrittenBytes < written {
		node.IO.WrittenBytes = jobmodel.Ptr(written)
	}
	node.MissingMetrics = without(node.MissingMetrics, "cpu", "memory_rss", "io")
}

func without(list []string, drop ...string) []string {
	out := list[:0]
	for _, s := range list {
		keep := true
		for _, d := range drop {
			keep = keep && s != d
		}
		if keep {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func exitCode(ps *os.ProcessState, err error) int {
	if ps == nil {
		return 127
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// machineFacts reads what the machine offers: CPUs this process may use
// and total memory (from procfs; 0 when unreadable).
func machineFacts(procRoot, host string) Machine {
	m := Machine{Host: host, CPUs: runtime.NumCPU()}
	if fs, err := procfs.NewFS(procRoot); err == nil {
		if mi, err := fs.Meminfo(); err == nil && mi.MemTotalBytes != nil {
			m.MemoryBytes = intconv.Int64(*mi.MemTotalBytes) // past math.MaxInt64: math.MaxInt64, not negative
		}
	}
	return m
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// safeName turns a host name into a valid cluster name.
func safeName(s string) string {
	s = strings.Trim(unsafeChars.ReplaceAllString(s, "-"), "-._")
	if s == "" {
		return "standalone"
	}
	if len(s) > 64 {
		s = s[:64]
	}
	return s
}

// Summary writes the human summary of a standalone run: what the command
// used against what the machine offered.
func Summary(w io.Writer, args []string, r *RunResult, where string) {
	cmdline := strings.Join(args, " ")
	if len(cmdline) > 60 {
		cmdline = cmdline[:57] + "..."
	}
	n := r.Node
	fmt.Fprintf(w, "\njobsight: %q ran %s on %s and exited with %d (%s)\n", cmdline, seconds(r.Wall.Seconds()),
		r.Machine.Host, r.ExitCode, r.Job.State)
	fmt.Fprintf(w, "  machine   %d CPUs, %s memory\n", r.Machine.CPUs, bytesOrUnknown(r.Machine.MemoryBytes))
	if c := n.CPU; c != nil && c.CoreSeconds != nil {
		line := fmt.Sprintf("  cpu       %.1f core-seconds", *c.CoreSeconds)
		if c.AvgCores != nil {
			line += fmt.Sprintf(", avg %.2f cores", *c.AvgCores)
		}
		if c.PeakCores != nil {
			line += fmt.Sprintf(", peak %.2f", *c.PeakCores)
		}
		if c.AvgCores != nil && r.Machine.CPUs > 0 {
			line += fmt.Sprintf("  = %.0f%% of %d CPUs", 100**c.AvgCores/float64(r.Machine.CPUs), r.Machine.CPUs)
		}
		fmt.Fprintln(w, line)
	}
	if m := n.Memory; m != nil && m.RSSPeakBytes != nil {
		line := fmt.Sprintf("  memory    peak %s resident", formatBytes(*m.RSSPeakBytes))
		if m.RSSAvgBytes != nil {
			line += fmt.Sprintf(", avg %s", formatBytes(*m.RSSAvgBytes))
		}
		if r.Machine.MemoryBytes > 0 {
			line += fmt.Sprintf("  = %.1f%% of %s", 100*float64(*m.RSSPeakBytes)/float64(r.Machine.MemoryBytes), formatBytes(r.Machine.MemoryBytes))
		}
		fmt.Fprintln(w, line)
	}
	if io := n.IO; io != nil && io.ReadBytes != nil {
		fmt.Fprintf(w, "  i/o       read %s, written %s\n", formatBytes(*io.ReadBytes), formatBytes(*io.WrittenBytes))
	}
	if n.Processes != nil && n.Processes.Peak != nil {
		line := fmt.Sprintf("  tasks     peak %d processes", *n.Processes.Peak)
		if n.Threads != nil && n.Threads.Peak != nil {
			line += fmt.Sprintf(", %d threads", *n.Threads.Peak)
		}
		fmt.Fprintln(w, line)
	}
	if g := n.GPU; g != nil {
		fmt.Fprintln(w, gpuLine(g))
	}
	if e := r.Job.Energy; e != nil && e.TotalJoules != nil {
		line := fmt.Sprintf("  energy    %.1f kJ (%s)", *e.TotalJoules/1000, e.TotalBasis)
		if em := r.Job.Emissions; em != nil && em.CO2eGrams != nil {
			line += fmt.Sprintf(", %.1f g CO2e at %.0f g/kWh (%s)", *em.CO2eGrams, *em.FactorGPerKWh, em.Zone)
		}
		fmt.Fprintln(w, line)
	}
	fmt.Fprintf(w, "  samples   %d, every %s", n.Sampling.Count, seconds(n.Sampling.IntervalSeconds))
	if len(r.Job.MissingMetrics) > 0 {
		// Without a cgroup there is no charged memory, limit or kernel peak;
		// energy depends on what the machine offers (docs/energy.md).
		fmt.Fprintf(w, "; not measured: %s", strings.Join(r.Job.MissingMetrics, ", "))
	}
	fmt.Fprintln(w)
	if an := r.Job.Analysis; an != nil {
		analysisLines(w, an)
	}
	if where != "" {
		fmt.Fprintf(w, "  document  %s\n", where)
	}
	self := ReadSelfUsage()
	share := ""
	if r.Wall >= time.Second {
		share = fmt.Sprintf(" (%.3f%% of one core)", self.CorePercent(r.Wall))
	}
	fmt.Fprintf(w, "  overhead  jobsight used %.0f ms of CPU%s and %s of memory\n", float64(self.CPU.Microseconds())/1000, share, formatBytes(self.MaxRSSBytes))
}

// analysisLines prints the analysis: class, likely causes and the
// suggested request.
func analysisLines(w io.Writer, an *jobmodel.Analysis) {
	line := "  class     " + an.Class
	if an.Score != nil {
		line += fmt.Sprintf(" (score %.0f%%)", 100**an.Score)
	}
	if an.Class == jobmodel.ClassShort {
		line += ": too short to judge"
	}
	fmt.Fprintln(w, line)
	for _, c := range an.Causes {
		fmt.Fprintf(w, "  cause     %s (%.0f%%): %s\n", c.Title, 100*c.Confidence, c.Evidence)
	}
	for _, ch := range an.Recommendation.Changes {
		fmt.Fprintf(w, "  suggest   %s -> %s  (%s)\n", ch.From, ch.To, ch.Reason)
	}
}

// gpuLine summarises the command's GPUs in one line.
func gpuLine(g *jobmodel.GPUUsage) string {
	line := fmt.Sprintf("  gpus      %d", g.Count)
	if g.Held != nil {
		line = fmt.Sprintf("  gpus      %d held", *g.Held)
	}
	if g.EffectiveGPUs != nil {
		line += fmt.Sprintf(", %d in use", *g.EffectiveGPUs)
	}
	if g.UtilizationAvg != nil {
		line += fmt.Sprintf(", avg %.0f%% utilisation", 100**g.UtilizationAvg)
	}
	if g.HeldIdle != nil && *g.HeldIdle > 0 {
		line += fmt.Sprintf(", %d held and idle", *g.HeldIdle)
	}
	if a := g.Activity; a != nil {
		for _, f := range []struct {
			name string
			s    *jobmodel.Stat
		}{{"SM activity", a.SM}, {"tensor", a.Tensor}, {"DRAM bandwidth", a.DRAM}} {
			if f.s != nil && f.s.Avg != nil {
				line += fmt.Sprintf(", %s %.0f%%", f.name, 100**f.s.Avg)
			}
		}
		if a.PCIeRxBytesPerSecond != nil && a.PCIeRxBytesPerSecond.Avg != nil {
			line += ", PCIe in " + formatBytes(int64(*a.PCIeRxBytesPerSecond.Avg)) + "/s"
		}
	}
	if g.MemoryPeakBytes != nil {
		line += ", peak memory " + formatBytes(*g.MemoryPeakBytes)
	}
	if g.EnergyJoules != nil {
		line += fmt.Sprintf(", %.1f kJ", *g.EnergyJoules/1000)
	}
	line += " (" + g.Source + ")"
	if g.Simulated {
		line += " SIMULATED, not measured"
	}
	return line
}

func seconds(s float64) string {
	switch {
	case s < 60:
		return strconv.FormatFloat(s, 'f', 1, 64) + " s"
	case s < 3600:
		return fmt.Sprintf("%dm%02ds", int(s)/60, int(s)%60)
	default:
		return fmt.Sprintf("%dh%02dm", int(s)/3600, int(s)%3600/60)
	}
}

func bytesOrUnknown(b int64) string {
	if b <= 0 {
		return "unknown"
	}
	return formatBytes(b)
}

func formatBytes(b int64) string {
	const unit = 1024
	if b < unit {
		return fmt.Sprintf("%d B", b)
	}
	div, exp := int64(unit), 0
	for n := b / unit; n >= unit && exp < 4; n /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(b)/float64(div), "KMGTP"[exp])
}
