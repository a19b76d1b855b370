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
	machine := machineFacts(a.Config.ProcRoot, host)
	cluster := a.Config.Cluster
	if cluster == "" {
		cluster = safeName(host)
	}

	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	start := a.now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("run: starting %s: %w", args[0], err)
	}
	pid := cmd.Process.Pid

	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	id := jobmodel.Identity{Cluster: cluster, JobID: uint64(pid)}
	job := jobmodel.Job{
		DocID: jobmodel.ReuseDocID(id.DocID(), start), SchemaVersion: jobmodel.SchemaVersion,
		Source: jobmodel.SourceStandalone, Cluster: cluster, JobID: id.Key(), SlurmJobID: uint64(pid),
		Nodes: []string{host}, NodeCount: 1, State: jobmodel.StateRunning,
		SubmitTime: jobmodel.At(start), StartTime: jobmodel.At(start), AgentVersion: Version,
	}
	if u, err := user.Current(); err == nil {
		job.User = u.Username
		if uid, err := strconv.ParseUint(u.Uid, 10, 32); err == nil {
			job.UID = jobmodel.Ptr(uint32(uid))
		}
	}
	if a.Config.StoreJobName {
		job.Name = args[0]
	}
	node := nodeTemplate(job, host)

	state := monitor.NewNodeState(start, a.Config.Interval, a.Config.ActiveThresholdCores)
	watchCtx, stopWatching := context.WithCancel(ctx)
	watched := make(chan struct{})
	tree, treeErr := collector.NewProcessTree(a.Config.ProcRoot, int32(pid))
	if treeErr == nil {
		var src collector.Collector = tree
		if a.GPU.Backend != nil {
			src = a.runGPU(tree, state)
		}
		src = a.addEnergy(src, state)
		mon := monitor.New(monitor.Options{
			Interval: a.Config.Interval, FlushInterval: a.Config.FlushInterval,
			PushInterval: a.Config.Prometheus.PushInterval, ActiveThreshold: a.Config.ActiveThresholdCores,
			Labels: Labels(cluster, job.JobID, host), Now: a.Now,
		}, src, a.Outputs, a.Health, node, state, a.Log)
		go func() { mon.Run(watchCtx); close(watched) }()
	} else {
		a.Log.Warn("cannot follow the command's processes; only its totals will be known", "err", treeErr)
		close(watched)
	}

	var waitErr error
wait:
	for {
		select {
		case waitErr = <-exited:
			break wait
		case s := <-sigs:
			_ = cmd.Process.Signal(s)
		}
	}
	end := a.now()
	stopWatching()
	<-watched
	if tree != nil {
		tree.Close()
	}

	res := &RunResult{Machine: machine, Wall: end.Sub(start), ExitCode: exitCode(cmd.ProcessState, waitErr)}
	state.Fill(&node, end)
	applyRusage(&node, cmd.ProcessState)
	a.applyEmissions(ctx, &node.Usage)
	node.AgentState, node.Final, node.UpdatedAt = jobmodel.AgentFinished, true, jobmodel.At(end)
	if err := a.Outputs.PutNode(ctx, node); err != nil {
		a.Log.Warn("writing node document; spooled", "err", err)
	}

	job.EndTime = jobmodel.At(end)
	job.ElapsedSeconds = jobmodel.Ptr(end.Sub(start).Seconds())
	job.State = jobmodel.StateCompleted
	job.ExitCode = jobmodel.Ptr(res.ExitCode)
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		job.State, job.ExitSignal = jobmodel.StateCancelled, jobmodel.Ptr(int(ws.Signal()))
	} else if res.ExitCode != 0 {
		job.State = jobmodel.StateFailed
	}
	jobmodel.Assemble(&job, []jobmodel.Node{node})
	job.Final, job.UpdatedAt = true, jobmodel.At(end)
	a.writeFinal(ctx, &job)
	a.Outputs.Replay(ctx)
	res.Job, res.Node = job, node
	return res, nil
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
			m.MemoryBytes = int64(*mi.MemTotalBytes)
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
