package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jobsight/jobsight/agent/monitor"
	"github.com/jobsight/jobsight/test/stack"
)

// plan is what one run measures: every combination of agent
// configuration, interval, node load and job count, each over several
// windows, with the peers in each of their modes on the same jobs.
type plan struct {
	counts                    []int
	intervals                 []time.Duration
	window, warmup            time.Duration
	windows                   int
	loads, configs, peerModes []string
	tools, profile            string
	// agentFrom is the checkout the agent is built from ("." unless
	// -agent-from names an earlier one, for a before-and-after).
	agentFrom string
}

const (
	benchNode  = "benchnode"
	agentName  = "jobsight-agent"
	ceemsName  = "ceems_exporter"
	cgexpName  = "cgroup_exporter"
	tickerName = "idle Go ticker"
)

// measured is one window's figures.
type measured struct {
	key     string // configuration, load, jobs, interval, peer mode
	jobs    int
	perJob  map[string]float64 // µs of CPU per job per sample (scrape), by process
	perWake map[string]float64 // µs of CPU per wake-up (scrape), by process
	rss     map[string]float64 // MiB at the window's end
	busy    float64            // the node's busy share over the window, 0..1
	phases  map[string]float64 // the agent's µs per job-sample by phase
	ctxsw   float64            // the agent's context switches per wake-up
}

func (p plan) run() error {
	dir, err := os.MkdirTemp("", "jobsight-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	agent, plugin, err := stack.BuildAgent(ctx, p.agentFrom, filepath.Join(dir, "bin"))
	if err != nil {
		return err
	}
	st, err := stack.Up(ctx, dir, stack.Options{
		Slurm: stack.SlurmOptions{ClusterName: "bench", NodeName: benchNode, GPUs: -1, Dense: true},
		Agent: &stack.AgentOptions{Binary: agent, Plugin: plugin, Interval: p.intervals[0],
			FlushInterval: 30 * time.Second, PushInterval: 10 * time.Second},
	})
	if err != nil {
		return err
	}
	defer st.Down()
	base, err := os.ReadFile(st.Agent.Config)
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	r := &runner{plan: p, st: st, self: self, dir: dir}
	defer r.unbindCpuacct()
	defer r.stopPeers()
	fmt.Printf("jobsight-bench: whole-process CPU per job per sample (µs), %d windows of %s per configuration, %d cores, %s, agent %s\n\n",
		p.windows, p.window, runtime.NumCPU(), st.Slurm.Install, stack.AgentVersion(ctx, p.agentFrom))
	fmt.Println("| config | load | jobs | interval | peers | window | node busy | Jobsight | idle Go ticker (per wake) | CEEMS | cgroup_exporter | × CEEMS | × cgroup_exporter | Jobsight RSS | Jobsight ctx switches per wake |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	var all []measured
	for _, cfg := range p.configs {
		for _, iv := range p.intervals {
			conf := agentConfig(base, cfg, iv)
			if p.profile != "" {
				// The node agent profiles its whole life at 5 kHz (a
				// 100 Hz profile of 1 ms a second holds a sample a
				// second): one file per configuration, load and count,
				// named by the job whose start launched it.
				prof, err := filepath.Abs(filepath.Join(p.profile, cfg+"-"+iv.String()))
				if err != nil {
					return err
				}
				conf = append(conf, fmt.Sprintf("cpu_profile_dir: %q\n", prof)...)
			}
			// #nosec G703 -- the config file of the stack this benchmark started in its own directory
			if err := os.WriteFile(st.Agent.Config, conf, 0o644); err != nil {
				return err
			}
			for _, load := range p.loads {
				for _, n := range p.counts {
					ms, err := r.phase(ctx, cfg, load, n, iv)
					all = append(all, ms...)
					if err != nil {
						return err
					}
				}
			}
		}
	}
	summarize(all)
	return nil
}

// agentConfig is the stack's agent.yaml for one configuration: "stack"
// as jobsight-stack up ships it (debug log, 8 simulated GPUs), or
// "production" (info log, no GPU backend); both deliver as a site would
// (remote write every 10 s, node documents every 30 s).
func agentConfig(base []byte, cfg string, iv time.Duration) []byte {
	lines := strings.Split(strings.TrimRight(string(base), "\n"), "\n")
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "interval:"):
			lines[i] = "interval: " + iv.String()
		case strings.HasPrefix(l, "log_level:"):
			lines[i] = "log_level: info"
			if cfg == "stack" {
				lines[i] = "log_level: debug"
			}
		}
	}
	if cfg == "stack" {
		lines = append(lines, "gpu: {backend: simulated, simulated: {devices: 8, profile: one-of-n}}")
	} else {
		lines = append(lines, "gpu: {backend: none}")
	}
	return []byte(strings.Join(lines, "\n") + "\n")
}

type runner struct {
	plan
	st        *stack.Stack
	self, dir string
	peers     []*peer
	// boundCpuacct: cpuacctForCEEMS bound the cpuacct controller's mount.
	boundCpuacct bool
}

// peer is a process measured beside the agent: an exporter (scraped at
// the interval) or the idle ticker (the machine's wake-up floor).
type peer struct {
	name, url string
	cmd       *exec.Cmd
}

// cpuacctForCEEMS gives CEEMS the cgroup v1 directory it looks for: it
// reads CPU from /sys/fs/cgroup/cpu,cpuacct, where a host mounting the
// cpu and cpuacct controllers apart has none; the controller's mount is
// bound there for the run (and unmounted by stopPeers).
func (r *runner) cpuacctForCEEMS() {
	const want, have = "/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup/cpuacct"
	if _, err := os.Stat(want); err == nil || r.boundCpuacct {
		return
	}
	if _, err := os.Stat(have); err != nil {
		return
	}
	if err := os.Mkdir(want, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "CEEMS:", err)
		return
	}
	if out, err := exec.Command("mount", "--bind", have, want).CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "CEEMS: mount --bind %s %s: %v %s\n", have, want, err, out)
		_ = os.Remove(want)
		return
	}
	r.boundCpuacct = true
}

func (r *runner) unbindCpuacct() {
	if r.boundCpuacct {
		_ = exec.Command("umount", "/sys/fs/cgroup/cpu,cpuacct").Run()
		_ = os.Remove("/sys/fs/cgroup/cpu,cpuacct")
		r.boundCpuacct = false
	}
}

func (r *runner) stopPeers() {
	for _, x := range r.peers {
		_ = x.cmd.Process.Kill()
		_, _ = x.cmd.Process.Wait()
	}
	r.peers = nil
}

// phase runs n jobs under one configuration and load, and measures the
// agent and the peers over the windows of each peer mode.
func (r *runner) phase(ctx context.Context, cfg, load string, n int, iv time.Duration) ([]measured, error) {
	spin := 0
	if load == "busy" {
		// Every core busy: half the jobs spin, and at least one per core.
		spin = min(n, max(n/2, runtime.NumCPU()))
	}
	var ids []string
	for i := 0; i < n; i++ {
		script := "sleep 100000"
		if i < spin {
			script = "while :; do :; done"
		}
		id, err := r.st.Slurm.Sbatch(ctx, "--output=/dev/null", "--chdir=/tmp", "-J", "bench", "-p", "dense", "-c", "1", "--mem=16M", "--wrap", script)
		if err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	defer func() {
		r.stopPeers()
		_ = r.st.Slurm.Scancel(ctx, ids...)
		waitAgentGone(r.st.Agent, benchNode, 3*time.Minute)
	}()
	deadline := time.Now().Add(3 * time.Minute)
	pid := 0
	for {
		pid = r.st.Agent.NodeAgentPID(benchNode)
		if pid != 0 && watching(r.st.Prometheus.URL, benchNode) >= float64(n) {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%d jobs: the node agent (pid %d) never watched them all", n, pid)
		}
		time.Sleep(time.Second)
	}
	var out []measured
	for i, mode := range r.peerModes {
		r.stopPeers()
		// The exporters start once the jobs run: CEEMS looks for Slurm's
		// cgroup root when it starts, and slurmd makes it with the first job.
		r.startPeers(mode, iv)
		if i == 0 {
			time.Sleep(r.warmup)
		} else {
			time.Sleep(5 * time.Second)
		}
		stop := make(chan struct{})
		for _, x := range r.peers {
			if x.url != "" {
				go scrape(x.url, iv, stop)
			}
		}
		time.Sleep(iv) // one scrape in before the window
		for w := 1; w <= r.windows; w++ {
			m := r.measure(pid, n, iv)
			m.key = fmt.Sprintf("%s | %s | %d | %s | %s", cfg, load, n, iv, mode)
			m.jobs = n
			out = append(out, m)
			printWindow(m, w)
		}
		close(stop)
	}
	return out, nil
}

// startPeers starts the idle ticker and the exporters found in -tools, in
// the given mode.
func (r *runner) startPeers(mode string, iv time.Duration) {
	start := func(name, url, bin string, args ...string) {
		cmd := exec.Command(bin, args...) // #nosec G702 -- a benchmark peer the operator put in -tools
		logName := filepath.Join(r.dir, strings.ReplaceAll(name, " ", "-")+".log")
		logf, err := os.Create(logName)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v: skipped\n", name, err)
			return
		}
		defer logf.Close() // the child holds its own copy
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := cmd.Start(); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v: skipped\n", name, err)
			return
		}
		x := &peer{name: name, url: url, cmd: cmd}
		if url == "" {
			r.peers = append(r.peers, x)
			return
		}
		for i := 0; i < 50; i++ {
			if err := get(url); err == nil {
				r.peers = append(r.peers, x)
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
		fmt.Fprintf(os.Stderr, "%s did not answer on %s: skipped (log %s)\n", name, url, logName)
		_ = cmd.Process.Kill()
		_, _ = cmd.Process.Wait()
	}
	start(tickerName, "", r.self, "-idle-ticker", iv.String())
	if r.tools == "" {
		return
	}
	r.cpuacctForCEEMS()
	for _, x := range []struct{ name, port, env string }{{ceemsName, "19306", "CEEMS"}, {cgexpName, "19307", "CGROUP_EXPORTER"}} {
		bin := filepath.Join(r.tools, x.name)
		if _, err := os.Stat(bin); err != nil {
			fmt.Fprintf(os.Stderr, "%s not in %s: skipped\n", x.name, r.tools)
			continue
		}
		args := peerArgs[x.name][mode]
		if v := os.Getenv("JOBSIGHT_BENCH_" + x.env + "_ARGS_" + strings.ToUpper(mode)); v != "" {
			args = v
		}
		start(x.name, "http://127.0.0.1:"+x.port+"/metrics", bin, append([]string{"--web.listen-address=127.0.0.1:" + x.port}, strings.Fields(args)...)...)
	}
}

// peerArgs are each peer's flags in each mode (-peers):
//
//   - job: as the independent run in the issue ran them: CEEMS with its
//     Slurm collector alone (its other default collectors are
//     node_exporter's, not job monitoring), cgroup_exporter with its
//     defaults for Slurm's cgroups.
//   - default: each with its default collectors (CEEMS's node collectors
//     on as well).
//   - proc: with per-process collection: cgroup_exporter's --collect.proc
//     (its processes' threads, file descriptors, memory). CEEMS has no
//     per-process collection but its eBPF and perf profilers, which need
//     BPF objects and kernel support these hosts do not give: it runs as
//     in job.
var peerArgs = map[string]map[string]string{
	ceemsName: {
		"job":     "--collector.slurm --collector.disable-defaults",
		"default": "--collector.slurm",
		"proc":    "--collector.slurm --collector.disable-defaults",
	},
	cgexpName: {
		"job":     "--config.paths=/slurm_" + benchNode,
		"default": "--config.paths=/slurm_" + benchNode,
		"proc":    "--config.paths=/slurm_" + benchNode + " --collect.proc",
	},
}

// measure measures the agent (pid) and every peer over one window.
func (r *runner) measure(pid, n int, iv time.Duration) measured {
	procs := map[string]int{agentName: pid}
	for _, x := range r.peers {
		procs[x.name] = x.cmd.Process.Pid
	}
	before := map[string]usage{}
	for name, p := range procs {
		before[name] = readUsage(p)
	}
	ph0 := agentPhases(r.st.Prometheus.URL)
	node0 := readNodeCPU()
	t0 := time.Now()
	time.Sleep(r.window)
	wall := time.Since(t0)
	node1 := readNodeCPU()
	ph1 := agentPhases(r.st.Prometheus.URL)
	wakes := wall.Seconds() / iv.Seconds()
	m := measured{perJob: map[string]float64{}, perWake: map[string]float64{}, rss: map[string]float64{}, phases: map[string]float64{},
		busy: node1.busyShare(node0)}
	for name, p := range procs {
		after := readUsage(p)
		if after.cpu == 0 {
			continue
		}
		cpu := float64((after.cpu - before[name].cpu).Microseconds())
		m.perWake[name] = cpu / wakes
		m.perJob[name] = cpu / wakes / float64(n)
		m.rss[name] = float64(after.rss) / (1 << 20)
		if name == agentName {
			m.ctxsw = float64(after.ctxsw-before[name].ctxsw) / wakes
		}
	}
	// The agent's own account by phase (its health series, pushed every
	// 10 s: both ends are up to one push old).
	if span := ph1["_span"] - ph0["_span"]; span > 0 {
		for k, v := range ph1 {
			if k != "_span" {
				m.phases[k] = 1e6 * (v - ph0[k]) / (span / iv.Seconds()) / float64(n)
			}
		}
	}
	return m
}

// agentPhases reads the agent's CPU by phase from its health series, with
// "_span" the seconds its newest push covers since the agent began.
func agentPhases(prom string) map[string]float64 {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out := map[string]float64{}
	q := func(expr string) (float64, bool) {
		v, ok, _ := stack.PromQuery(ctx, prom, expr)
		return v, ok
	}
	// One query per phase: PromQuery answers one value.
	for _, ph := range append(phaseNames(), "other") {
		if v, ok := q(fmt.Sprintf(`max(jobsight_agent_phase_cpu_seconds_total{node=%q,phase=%q})`, benchNode, ph)); ok {
			out[ph] = v
		}
	}
	if v, ok := q(fmt.Sprintf(`max(timestamp(jobsight_agent_cpu_seconds_total{node=%q}))`, benchNode)); ok {
		out["_span"] = v
	}
	return out
}

func phaseNames() []string {
	var out []string
	for p := monitor.PhaseSample; p <= monitor.PhaseSlurm; p++ {
		out = append(out, p.String())
	}
	return out
}

func printWindow(m measured, w int) {
	fmtUS := func(name string) string {
		if v, ok := m.perJob[name]; ok {
			return fmt.Sprintf("%.0f", v)
		}
		return "–"
	}
	ratio := func(name string) string {
		if v, ok := m.perJob[name]; ok && m.perJob[agentName] > 0 {
			return fmt.Sprintf("%.1f×", v/m.perJob[agentName])
		}
		return "–"
	}
	ticker := "–"
	if v, ok := m.perWake[tickerName]; ok {
		ticker = fmt.Sprintf("%.0f", v)
	}
	fmt.Printf("| %s | %d | %.0f %% | **%s** | %s | %s | %s | %s | %s | %.1f MiB | %.1f |\n", m.key, w, 100*m.busy, fmtUS(agentName), ticker,
		fmtUS(ceemsName), fmtUS(cgexpName), ratio(ceemsName), ratio(cgexpName), m.rss[agentName], m.ctxsw)
}

// summarize prints, per configuration, the spread over its windows: each
// process's µs per job-sample and the ratio of each peer to the agent
// (min / median / max), then the agent's own account by phase.
func summarize(all []measured) {
	var keys []string
	by := map[string][]measured{}
	for _, m := range all {
		if _, ok := by[m.key]; !ok {
			keys = append(keys, m.key)
		}
		by[m.key] = append(by[m.key], m)
	}
	spread := func(vs []float64, f string) string {
		if len(vs) == 0 {
			return "–"
		}
		slices.Sort(vs)
		return fmt.Sprintf(f+" / "+f+" / "+f, vs[0], vs[len(vs)/2], vs[len(vs)-1])
	}
	collect := func(ms []measured, f func(measured) (float64, bool)) []float64 {
		var out []float64
		for _, m := range ms {
			if v, ok := f(m); ok {
				out = append(out, v)
			}
		}
		return out
	}
	perJob := func(name string) func(measured) (float64, bool) {
		return func(m measured) (float64, bool) { v, ok := m.perJob[name]; return v, ok }
	}
	ratio := func(name string) func(measured) (float64, bool) {
		return func(m measured) (float64, bool) {
			v, ok := m.perJob[name]
			return v / m.perJob[agentName], ok && m.perJob[agentName] > 0
		}
	}
	fmt.Println("\nSpread over the windows (min / median / max; µs of CPU per job per sample or scrape):")
	fmt.Println()
	fmt.Println("| config | load | jobs | interval | peers | node busy | Jobsight | CEEMS | cgroup_exporter | × CEEMS | × cgroup_exporter | idle Go ticker per wake | Jobsight RSS |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, k := range keys {
		ms := by[k]
		fmt.Printf("| %s | %s | **%s** | %s | %s | %s | %s | %s | %s |\n", k,
			spread(collect(ms, func(m measured) (float64, bool) { return 100 * m.busy, true }), "%.0f %%"),
			spread(collect(ms, perJob(agentName)), "%.0f"), spread(collect(ms, perJob(ceemsName)), "%.0f"),
			spread(collect(ms, perJob(cgexpName)), "%.0f"), spread(collect(ms, ratio(ceemsName)), "%.1f×"),
			spread(collect(ms, ratio(cgexpName)), "%.1f×"),
			spread(collect(ms, func(m measured) (float64, bool) { v, ok := m.perWake[tickerName]; return v, ok }), "%.0f"),
			spread(collect(ms, func(m measured) (float64, bool) { return m.rss[agentName], true }), "%.1f MiB"))
	}
	names := append(phaseNames(), "other")
	fmt.Println("\nThe agent's own account by phase (its health series; median µs per job-sample over the windows):")
	fmt.Println()
	fmt.Println("| config | load | jobs | interval | peers | " + strings.Join(names, " | ") + " | sum |")
	fmt.Println("|---|---|---|---|---|" + strings.Repeat("---|", len(names)+1))
	for _, k := range keys {
		row, sum := []string{}, 0.0
		for _, ph := range names {
			vs := collect(by[k], func(m measured) (float64, bool) { v, ok := m.phases[ph]; return v, ok })
			if len(vs) == 0 {
				row = append(row, "–")
				continue
			}
			slices.Sort(vs)
			sum += vs[len(vs)/2]
			row = append(row, fmt.Sprintf("%.1f", vs[len(vs)/2]))
		}
		fmt.Printf("| %s | %s | %.0f |\n", k, strings.Join(row, " | "), sum)
	}
}

// nodeCPU is /proc/stat's aggregate cpu line: busy and total jiffies.
type nodeCPU struct{ busy, total float64 }

func readNodeCPU() nodeCPU {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return nodeCPU{}
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	var c nodeCPU
	for i, v := range f[1:] {
		x, _ := strconv.ParseFloat(v, 64)
		if i >= 8 { // guest and guest_nice are inside user and nice
			break
		}
		c.total += x
		if i != 3 && i != 4 { // idle, iowait
			c.busy += x
		}
	}
	return c
}

func (c nodeCPU) busyShare(before nodeCPU) float64 {
	if d := c.total - before.total; d > 0 {
		return (c.busy - before.busy) / d
	}
	return 0
}

// idleTicker is a Go process that wakes every iv and does nothing: run
// beside the agent on the same node, its CPU is the floor of any process
// waking at that rate there (kernel timer, scheduler, the VM's exits).
func idleTicker(iv time.Duration) {
	runtime.GOMAXPROCS(1) // as the agent runs
	tk := time.NewTicker(iv)
	for range tk.C {
	}
}
