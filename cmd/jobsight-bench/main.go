// Command jobsight-bench measures what the node agent costs, as a whole
// process, on real jobs: it starts the local stack (Slurm with the SPANK
// plugin, Prometheus, the Elasticsearch-API server), and for each
// sampling interval and job count runs that many concurrent jobs on one
// node (partition "dense", whose cores the jobs share), waits until the
// node agent watches them all, and reads the agent process's CPU time
// (the sum of its threads' schedstat run time, in nanoseconds) and its
// RSS over a window. Delivery uses production settings: node documents
// every 30 s, remote write every 10 s.
//
// Beside it, in the same run and on the same jobs, it runs the exporters
// it finds in -tools (CEEMS' ceems_exporter, treydock's cgroup_exporter;
// built outside this repository, see docs/performance.md) and scrapes each
// at the same interval, measuring their processes the same way.
//
//	sudo go run ./cmd/jobsight-bench [-jobs 1,8,64] [-intervals 1s,5s] [-window 60s] [-tools DIR]
//	sudo go run ./cmd/jobsight-bench -floor
//
// Needs root.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jobsight/jobsight/test/stack"
)

func main() {
	jobs := flag.String("jobs", "1,8,64", "concurrent job counts, comma-separated")
	intervals := flag.String("intervals", "1s,5s", "sampling (and scrape) intervals, comma-separated")
	window := flag.Duration("window", 60*time.Second, "measurement window per configuration")
	warmup := flag.Duration("warmup", 15*time.Second, "time after every job is watched before the window opens")
	busy := flag.Int("busy", 4, "at most this many jobs spin a core (the others sleep); half the jobs when fewer")
	tools := flag.String("tools", os.Getenv("JOBSIGHT_BENCH_TOOLS"), "directory with ceems_exporter and cgroup_exporter (skipped when absent)")
	profile := flag.String("profile", "", "write the node agents' CPU profiles to this directory (cpu_profile_dir)")
	floor := flag.Bool("floor", false, "only measure this machine's floor: the CPU a Go process spends waking from a timer")
	lookups := flag.Int("slurm-lookups", 0, "only measure one job's metadata lookup on a cluster holding this many pending jobs (bytes, time, controller RPCs; the release JOBSIGHT_SLURM names)")
	rounds := flag.Int("rounds", 20, "with -slurm-lookups: calls of each kind")
	flag.Parse()
	if *floor {
		wakeFloor()
		return
	}
	if *lookups > 0 {
		if err := slurmLookups(*lookups, max(*rounds, 1)); err != nil {
			fail(err)
		}
		return
	}
	counts, err := ints(*jobs)
	if err != nil {
		fail(err)
	}
	var ivs []time.Duration
	for _, s := range strings.Split(*intervals, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil || d < time.Second {
			fail(fmt.Errorf("-intervals: %q is not a duration of at least 1s", s))
		}
		ivs = append(ivs, d)
	}
	if err := run(counts, ivs, *window, *warmup, *busy, *tools, *profile); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "jobsight-bench:", err)
	os.Exit(1)
}

func ints(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 64 {
			return nil, fmt.Errorf("-jobs: %q is not a count from 1 to 64", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// exporter is a third-party exporter run beside the agent.
type exporter struct {
	name, url string
	cmd       *exec.Cmd
}

func run(counts []int, intervals []time.Duration, window, warmup time.Duration, busyMax int, tools, profile string) error {
	dir, err := os.MkdirTemp("", "jobsight-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	agent, plugin, err := stack.BuildAgent(ctx, ".", filepath.Join(dir, "bin"))
	if err != nil {
		return err
	}
	const node = "benchnode"
	extra := ""
	if profile != "" {
		if profile, err = filepath.Abs(profile); err != nil {
			return err
		}
		extra = fmt.Sprintf("cpu_profile_dir: %q\n", profile)
	}
	st, err := stack.Up(ctx, dir, stack.Options{
		Slurm: stack.SlurmOptions{ClusterName: "bench", NodeName: node, GPUs: -1, Dense: true},
		Agent: &stack.AgentOptions{Binary: agent, Plugin: plugin, Interval: intervals[0],
			FlushInterval: 30 * time.Second, PushInterval: 10 * time.Second, Extra: extra},
	})
	if err != nil {
		return err
	}
	defer st.Down()

	// The exporters start once the first jobs run: CEEMS looks for Slurm's
	// cgroup root when it starts, and slurmd makes it with the first job.
	var exporters []*exporter
	started := false
	start := func() []*exporter {
		if !started {
			exporters, started = startExporters(tools, node, dir), true
		}
		return exporters
	}
	defer func() {
		for _, x := range exporters {
			_ = x.cmd.Process.Kill()
			_, _ = x.cmd.Process.Wait()
		}
	}()

	fmt.Printf("whole-process CPU per job per sample (µs), %s windows, jobs half busy (at most %d spinning) half asleep, on partition dense of one node\n\n", window, busyMax)
	fmt.Printf("| interval | jobs | process | CPU over the window | µs per job per sample | share of one core | RSS (peak) | + squeue |\n|---|---|---|---|---|---|---|---|\n")
	for _, iv := range intervals {
		if err := setInterval(st.Agent.Config, iv); err != nil {
			return err
		}
		for _, n := range counts {
			if err := phase(ctx, st, node, n, iv, window, warmup, min(n/2, busyMax), start); err != nil {
				return err
			}
		}
	}
	return nil
}

// phase runs n jobs, measures the agent and the exporters over the
// window, then ends the jobs and waits for the node agent to exit.
func phase(ctx context.Context, st *stack.Stack, node string, n int, iv, window, warmup time.Duration, busy int, startExporters func() []*exporter) error {
	var ids []string
	for i := 0; i < n; i++ {
		script := "sleep 100000"
		if i < busy {
			script = "while :; do :; done"
		}
		id, err := st.Slurm.Sbatch(ctx, "--output=/dev/null", "--chdir=/tmp", "-J", "bench", "-p", "dense", "-c", "1", "--mem=16M", "--wrap", script)
		if err != nil {
			return err
		}
		ids = append(ids, id)
	}
	defer func() {
		_ = st.Slurm.Scancel(ctx, ids...)
		waitAgentGone(st.Agent, node, 3*time.Minute)
	}()
	deadline := time.Now().Add(3 * time.Minute)
	pid := 0
	for {
		pid = st.Agent.NodeAgentPID(node)
		if pid != 0 && watching(st.Prometheus.URL, node) >= float64(n) {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d jobs: the node agent (pid %d) never watched them all", n, pid)
		}
		time.Sleep(time.Second)
	}
	exporters := startExporters()
	time.Sleep(warmup)

	stopScrapes := make(chan struct{})
	for _, x := range exporters {
		go scrape(x.url, iv, stopScrapes)
	}
	time.Sleep(iv) // one scrape in before the window
	procs := map[string]int{"jobsight-agent (node agent)": pid}
	for _, x := range exporters {
		procs[x.name] = x.cmd.Process.Pid
	}
	before := map[string]usage{}
	for name, p := range procs {
		before[name] = readUsage(p)
	}
	t0 := time.Now()
	time.Sleep(window)
	wall := time.Since(t0)
	close(stopScrapes)
	samples := float64(n) * wall.Seconds() / iv.Seconds()
	for _, name := range []string{"jobsight-agent (node agent)", "ceems_exporter", "cgroup_exporter"} {
		p, ok := procs[name]
		if !ok {
			continue
		}
		after := readUsage(p)
		if after.cpu == 0 {
			fmt.Printf("| %s | %d | %s | process gone | | | | |\n", iv, n, name)
			continue
		}
		cpu := after.cpu - before[name].cpu
		child := after.childCPU - before[name].childCPU
		fmt.Printf("| %s | %d | %s | %.1f ms | **%.0f** | %.3f %% | %.1f MiB (%.1f) | %.0f ms |\n", iv, n, name,
			float64(cpu.Microseconds())/1000, float64(cpu.Microseconds())/samples, 100*cpu.Seconds()/wall.Seconds(),
			float64(after.rss)/(1<<20), float64(after.hwm)/(1<<20), float64(child.Microseconds())/1000)
	}
	return nil
}

// usage is what one process used so far.
type usage struct {
	cpu, childCPU time.Duration
	rss, hwm      int64
}

// readUsage reads a process's CPU time (its threads' schedstat run time:
// nanoseconds, unlike /proc/PID/stat's clock ticks), the CPU of children
// it reaped (squeue runs; clock ticks) and its RSS.
func readUsage(pid int) usage {
	var u usage
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		f := strings.Fields(string(b))
		if len(f) > 0 {
			ns, _ := strconv.ParseInt(f[0], 10, 64)
			u.cpu += time.Duration(ns)
		}
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		if _, rest, ok := strings.Cut(string(b), ") "); ok {
			f := strings.Fields(rest)
			if len(f) > 14 {
				cu, _ := strconv.ParseInt(f[13], 10, 64)
				cs, _ := strconv.ParseInt(f[14], 10, 64)
				u.childCPU = time.Duration(cu+cs) * 10 * time.Millisecond // USER_HZ 100
			}
		}
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			k, v, _ := strings.Cut(l, ":")
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			switch k {
			case "VmRSS":
				u.rss = kb << 10
			case "VmHWM":
				u.hwm = kb << 10
			}
		}
	}
	return u
}

func waitAgentGone(a *stack.Agent, node string, within time.Duration) {
	deadline := time.Now().Add(within)
	for a.NodeAgentPID(node) != 0 && time.Now().Before(deadline) {
		time.Sleep(time.Second)
	}
}

// watching is the node agent's own count of the jobs it watches, from its
// health series.
func watching(prom, node string) float64 {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	v, ok, _ := stack.PromQuery(ctx, prom, fmt.Sprintf(`max(jobsight_agent_jobs_watched{node=%q})`, node))
	if !ok {
		return 0
	}
	return v
}

// setInterval rewrites the agent's interval in its config; the next node
// agent (after the last one exited) reads it.
func setInterval(config string, iv time.Duration) error {
	b, err := os.ReadFile(config)
	if err != nil {
		return err
	}
	lines := strings.Split(string(b), "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "interval:") {
			lines[i] = "interval: " + iv.String()
		}
	}
	return os.WriteFile(config, []byte(strings.Join(lines, "\n")), 0o644)
}

// startExporters starts the third-party exporters found in tools.
func startExporters(tools, node, dir string) []*exporter {
	if tools == "" {
		fmt.Fprintln(os.Stderr, "no -tools directory: measuring Jobsight only")
		return nil
	}
	var out []*exporter
	try := func(name, port string, args ...string) {
		bin := filepath.Join(tools, name)
		if _, err := os.Stat(bin); err != nil {
			fmt.Fprintf(os.Stderr, "%s not in %s: skipped\n", name, tools)
			return
		}
		cmd := exec.Command(bin, args...)
		logf, _ := os.Create(filepath.Join(dir, name+".log"))
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := cmd.Start(); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v: skipped\n", name, err)
			return
		}
		x := &exporter{name: name, url: "http://127.0.0.1:" + port + "/metrics", cmd: cmd}
		for i := 0; i < 50; i++ {
			if err := get(x.url); err == nil {
				out = append(out, x)
				fmt.Fprintf(os.Stderr, "%s running (pid %d, %s)\n", name, cmd.Process.Pid, strings.Join(args, " "))
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
		fmt.Fprintf(os.Stderr, "%s did not answer on %s: skipped (log %s)\n", name, x.url, logf.Name())
		_ = cmd.Process.Kill()
	}
	try("ceems_exporter", "19306", exporterArgs("CEEMS", "--web.listen-address=127.0.0.1:19306 --collector.slurm --collector.disable-defaults")...)
	try("cgroup_exporter", "19307", exporterArgs("CGROUP_EXPORTER", "--web.listen-address=127.0.0.1:19307 --config.paths=/slurm_"+node+" --collect.proc")...)
	return out
}

// exporterArgs are the exporter's flags: def, or JOBSIGHT_BENCH_<NAME>_ARGS.
func exporterArgs(name, def string) []string {
	if v := os.Getenv("JOBSIGHT_BENCH_" + name + "_ARGS"); v != "" {
		return strings.Fields(v)
	}
	return strings.Fields(def)
}

// scrape gets url every interval until stop, as Prometheus would.
func scrape(url string, iv time.Duration, stop chan struct{}) {
	tk := time.NewTicker(iv)
	defer tk.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tk.C:
			_ = get(url)
		}
	}
}

func get(url string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return errors.New(resp.Status)
	}
	return nil
}

// wakeFloor prints what one wake-up from a timer costs a Go process on this
// machine, with nothing else to do: the floor under the agent's per-sample
// cost (kernel timer, scheduler and, in a VM, exits to the hypervisor).
func wakeFloor() {
	cpu := func() time.Duration {
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	const n = 50
	tk := time.NewTicker(100 * time.Millisecond)
	defer tk.Stop()
	c0 := cpu()
	for i := 0; i < n; i++ {
		<-tk.C
	}
	d := cpu() - c0
	fmt.Printf("empty timer wake-up  %.0f µs CPU each (%d wakes of a Go ticker doing nothing)\n", float64(d.Microseconds())/n, n)
	fmt.Printf("at 1 Hz that alone is %.4f %% of one core\n", float64(d.Microseconds())/n/1e4)
}
