// Command jobsight-bench measures what the agent costs on a real job: it
// starts the local stack (Slurm with the SPANK plugin, Prometheus, the
// Elasticsearch-API server), runs a job of -procs processes for -seconds
// with the agent sampling every -interval and writing to both stores, and
// prints the agent's own CPU time and peak RSS as the agent measured them
// with getrusage at exit. Needs root.
//
//	go run ./cmd/jobsight-bench [-seconds 60] [-interval 1s] [-procs 16]
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
	"time"

	"github.com/jobsight/jobsight/internal/stack"
)

func main() {
	seconds := flag.Int("seconds", 60, "how long the job runs")
	interval := flag.Duration("interval", time.Second, "agent sampling interval")
	procs := flag.Int("procs", 16, "processes in the job (sleeping) besides its shell")
	flag.Parse()
	if err := run(*seconds, *interval, *procs); err != nil {
		fmt.Fprintln(os.Stderr, "jobsight-bench:", err)
		os.Exit(1)
	}
}

func run(seconds int, interval time.Duration, procs int) error {
	dir, err := os.MkdirTemp("", "jobsight-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(seconds)*time.Second+10*time.Minute)
	defer cancel()
	agent, plugin, err := stack.BuildAgent(ctx, ".", filepath.Join(dir, "bin"))
	if err != nil {
		return err
	}
	st, err := stack.Up(ctx, dir, stack.Options{
		Slurm: stack.SlurmOptions{ClusterName: "bench"},
		Agent: &stack.AgentOptions{Binary: agent, Plugin: plugin, Interval: interval,
			FlushInterval: 30 * time.Second, PushInterval: 10 * time.Second},
	})
	if err != nil {
		return err
	}
	defer st.Down()

	script := fmt.Sprintf("for i in $(seq %d); do sleep %d & done; wait", procs, seconds)
	id, err := st.Slurm.Sbatch(ctx, "--output=/dev/null", "--chdir=/tmp", "-J", "bench", "--wrap", script)
	if err != nil {
		return err
	}
	fmt.Printf("job %s: %d sleeping processes for %d s, agent sampling every %s, Elasticsearch and Prometheus on\n", id, procs, seconds, interval)
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
			wall, _ := strconv.ParseFloat(start["wall_seconds"], 64)
			_, stopRan := lines["stop"]
			fmt.Printf("agent processes      start%s\n", map[bool]string{true: " + stop", false: " (the epilog signalled it directly)"}[stopRan])
			fmt.Printf("agent CPU time       %.3f s over %.1f s wall\n", cpu, wall)
			fmt.Printf("agent CPU share      %.4f %% of one core\n", 100*cpu/wall)
			fmt.Printf("scontrol it ran      %.3f s CPU (%.4f %% of one core with the agent's)\n", child, 100*(cpu+child)/wall)
			fmt.Printf("agent peak RSS       %.1f MiB\n", rss/(1<<20))
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
