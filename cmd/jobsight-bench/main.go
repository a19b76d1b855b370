// Command jobsight-bench measures what the agent costs on a real job: it
// starts the local stack (Slurm with the SPANK plugin, Prometheus, the
// Elasticsearch-API server), runs a job of -procs processes for -seconds
// with the agent sampling every -interval and writing to both stores, and
// prints the agent's own CPU time and peak RSS as the agent measured them
// with getrusage at exit. Needs root.
//
// With -gpus N the node declares N GPUs to Slurm, the job holds all of
// them, and the agent reads them from the simulated source (every GPU
// busy, the job's program on each): the agent's whole cost of sampling N
// GPUs and their processes, without the driver's own cost per call (no
// GPU here; see docs/performance.md).
//
//	go run ./cmd/jobsight-bench [-seconds 60] [-interval 1s] [-procs 16] [-gpus 8]
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jobsight/jobsight/internal/stack"
)

func main() {
	seconds := flag.Int("seconds", 60, "how long the job runs")
	interval := flag.Duration("interval", time.Second, "agent sampling interval")
	procs := flag.Int("procs", 16, "processes in the job (sleeping) besides its shell")
	profile := flag.String("profile", "", "write the agent processes' CPU profiles to this directory (cpu_profile_dir)")
	gpus := flag.Int("gpus", 0, "simulated GPUs the job holds (0: none)")
	floor := flag.Bool("floor", false, "only measure this machine's floor: the CPU a Go process spends waking from a timer")
	flag.Parse()
	if *floor {
		wakeFloor()
		return
	}
	if err := run(*seconds, *interval, *procs, *gpus, *profile); err != nil {
		fmt.Fprintln(os.Stderr, "jobsight-bench:", err)
		os.Exit(1)
	}
}

func run(seconds int, interval time.Duration, procs, gpus int, profile string) error {
	dir, err := os.MkdirTemp("", "jobsight-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(seconds)*time.Second+10*time.Minute)
	defer cancel()
	extra := ""
	if profile != "" {
		if profile, err = filepath.Abs(profile); err != nil {
			return err
		}
		extra = fmt.Sprintf("cpu_profile_dir: %q\n", profile)
	}
	var gres []string
	if gpus > 0 {
		extra += fmt.Sprintf("gpu: {backend: simulated, simulated: {devices: %d, profile: steady}}\n", gpus)
		gres = []string{fmt.Sprintf("--gres=gpu:%d", gpus)}
	}
	agent, plugin, err := stack.BuildAgent(ctx, ".", filepath.Join(dir, "bin"))
	if err != nil {
		return err
	}
	st, err := stack.Up(ctx, dir, stack.Options{
		Slurm: stack.SlurmOptions{ClusterName: "bench", GPUs: gpus},
		Agent: &stack.AgentOptions{Binary: agent, Plugin: plugin, Interval: interval,
			FlushInterval: 30 * time.Second, PushInterval: 10 * time.Second, Extra: extra},
	})
	if err != nil {
		return err
	}
	defer st.Down()

	script := fmt.Sprintf("for i in $(seq %d); do sleep %d & done; wait", procs, seconds)
	id, err := st.Slurm.Sbatch(ctx, append(append([]string{"--output=/dev/null", "--chdir=/tmp", "-J", "bench"}, gres...), "--wrap", script)...)
	if err != nil {
		return err
	}
	fmt.Printf("job %s: %d sleeping processes and %d simulated GPUs for %d s, agent sampling every %s, Elasticsearch and Prometheus on\n", id, procs, gpus, seconds, interval)
	for {
		lines := usageLines(st.Agent.Log, id)
		if start, ok := lines["start"]; ok {
			var cpu, child, rss float64
			for _, f := range lines {
				c, _ := strconv.ParseFloat(f["cpu_seconds"], 64)
				ch, _ := strconv.ParseFloat(f["child_cpu_seconds"], 64)
				r, _ := strconv.ParseFloat(f["max_rss_bytes"], 64)
				cpu, child, rss = cpu+c, child+ch, max(rss, r)
			}
			anon, _ := strconv.ParseFloat(start["anon_rss_bytes"], 64)
			file, _ := strconv.ParseFloat(start["file_rss_bytes"], 64)
			wall, _ := strconv.ParseFloat(start["wall_seconds"], 64)
			_, stopRan := lines["stop"]
			fmt.Printf("agent processes      start%s\n", map[bool]string{true: " + stop", false: " (the epilog signalled it directly)"}[stopRan])
			fmt.Printf("agent CPU time       %.3f s over %.1f s wall\n", cpu, wall)
			fmt.Printf("agent CPU share      %.4f %% of one core\n", 100*cpu/wall)
			fmt.Printf("scontrol it ran      %.3f s CPU (%.4f %% of one core with the agent's)\n", child, 100*(cpu+child)/wall)
			fmt.Printf("  by phase           start-up %s ms, setup %s ms, sampling %s ms, finalizing %s ms\n",
				ms(start["cpu_startup_seconds"]), ms(start["cpu_setup_seconds"]), ms(start["cpu_watch_seconds"]), ms(start["cpu_finalize_seconds"]))
			fmt.Printf("agent peak RSS       %.1f MiB (at exit: %.1f MiB anonymous, %.1f MiB file pages shared through the page cache)\n", rss/(1<<20), anon/(1<<20), file/(1<<20))
			fmt.Printf("samples              %s\n", start["samples"])
			q := fmt.Sprintf(`max(jobsight_agent_sample_duration_seconds_total{job_id=%q}) / max(jobsight_agent_samples_total{job_id=%q})`, id, id)
			if v, ok, _ := stack.PromQuery(ctx, st.Prometheus.URL, q); ok {
				fmt.Printf("one sampling pass    %.0f µs (wall, mean over the job, real /proc and cgroups)\n", v*1e6)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no 'agent resource use' line for job %s in %s", id, st.Agent.Log)
		case <-time.After(2 * time.Second):
		}
	}
}

// usageLines finds the agent processes' resource-use log lines of a job,
// by command (start, stop).
func usageLines(log, id string) map[string]map[string]string {
	out := map[string]map[string]string{}
	f, err := os.Open(log)
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if strings.Contains(l, `msg="agent resource use"`) && strings.Contains(l, " job_id="+id+" ") {
			fields := logFields(l)
			out[fields["cmd"]] = fields
		}
	}
	return out
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

// ms renders seconds from a log field as milliseconds.
func ms(s string) string {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return "?"
	}
	return strconv.FormatFloat(v*1000, 'f', 1, 64)
}

// logFields splits a slog text line into key=value pairs.
func logFields(line string) map[string]string {
	out := map[string]string{}
	for _, f := range strings.Fields(line) {
		if k, v, ok := strings.Cut(f, "="); ok {
			out[k] = strings.Trim(v, `"`)
		}
	}
	return out
}
