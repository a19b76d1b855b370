// Command jobsight-bench measures what the node agent costs, as a whole
// process, on real jobs: it starts the local stack (Slurm with the SPANK
// plugin, Prometheus, the Elasticsearch-API server), and for each agent
// configuration (production, or the stack's shipped one), node load
// (busy: the jobs saturate every core; quiet: they sleep), interval and
// job count runs that many concurrent jobs on one node (partition
// "dense", whose cores the jobs share), waits until the node agent
// watches them all, and measures over several windows every process's CPU
// time (the sum of its threads' schedstat run time, in nanoseconds), its
// RSS and the agent's context switches, with the node's busy share and
// the agent's own account by phase (its health series). Delivery uses
// production settings: node documents every 30 s, remote write every 10 s.
//
// Beside it, in the same run and on the same jobs, it runs an idle Go
// ticker (the wake-up floor on that node) and the exporters it finds in
// -tools (CEEMS' ceems_exporter, treydock's cgroup_exporter; built outside
// this repository by scripts/build-peers.sh), scraped at the same
// interval in each peer mode, and prints the ratio of each to the agent
// window by window, then the spread over the windows.
//
//	sudo go run ./cmd/jobsight-bench -tools DIR [-load busy,quiet] [-config production,stack]
//	    [-peers job,default,proc] [-jobs 8] [-intervals 1s] [-windows 3] [-window 120s]
//	    [-agent-from CHECKOUT] [-profile DIR]
//	sudo go run ./cmd/jobsight-bench -floor
//	sudo go run ./cmd/jobsight-bench -slurm-lookups 10000
//	sudo go run ./cmd/jobsight-bench -clusterstate 100000 -rounds 3
//
// Needs root. Nothing else may run on the machine meanwhile.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jobsight/jobsight/test/stack"
)

func main() {
	jobs := flag.String("jobs", "8", "concurrent job counts, comma-separated")
	intervals := flag.String("intervals", "1s", "sampling (and scrape) intervals, comma-separated")
	window := flag.Duration("window", 120*time.Second, "length of one measurement window")
	windows := flag.Int("windows", 3, "measurement windows per configuration (the spread is over these)")
	warmup := flag.Duration("warmup", 15*time.Second, "time after every job is watched before the first window opens")
	loads := flag.String("load", "busy,quiet", "node loads, comma-separated: busy (the jobs saturate every core: half of them spin, at least one per core) or quiet (every job sleeps)")
	configs := flag.String("config", "production,stack", "agent configurations, comma-separated: production (info log, no GPU backend) or stack (what jobsight-stack up ships: debug log, 8 simulated GPUs); both with remote write every 10 s and node documents every 30 s")
	peerModes := flag.String("peers", "job", "how the peers run, comma-separated: job (CEEMS's Slurm collector alone, cgroup_exporter's defaults), default (their default collectors) or proc (with per-process collection); each mode gets its own windows on the same jobs")
	tools := flag.String("tools", os.Getenv("JOBSIGHT_BENCH_TOOLS"), "directory with ceems_exporter and cgroup_exporter (skipped when absent)")
	profile := flag.String("profile", "", "write the node agents' CPU profiles (cpu_profile_dir, 5 kHz) into this directory, one per configuration and load")
	floor := flag.Bool("floor", false, "only measure this machine's floor: the CPU a Go process spends waking from a timer")
	agentFrom := flag.String("agent-from", ".", "the checkout to build the agent from (an earlier commit's worktree, for a before-and-after with this benchmark)")
	idle := flag.Duration("idle-ticker", 0, "internal: be a Go process that wakes every this long and does nothing (the wake-up floor, measured beside the agent)")
	lookups := flag.Int("slurm-lookups", 0, "only measure one job's metadata lookup on a cluster holding this many pending jobs (bytes, time, controller RPCs; the release JOBSIGHT_SLURM names)")
	rounds := flag.Int("rounds", 20, "with -slurm-lookups or -clusterstate: calls of each kind")
	csQueued := flag.Int("clusterstate", 0, "only measure one cluster-state poll, whole (commands, collector, slurmctld's RPCs), on a cluster holding this many queued jobs, with squeue --json and with the narrow squeue, and check both give the same series")
	csNarrow := flag.Bool("narrow-only", false, "with -clusterstate: only the narrow squeue (squeue --json for 100,000 jobs runs for minutes and holds about a GiB)")
	csExpanded := flag.Bool("expanded", false, "with -clusterstate: also squeue -r, one line per array task, as a queue of as many independently submitted jobs prints")
	csPolls := flag.Int("collector-polls", 0, "with -clusterstate: then run the collector itself for this many 30 s polls (a simulated clock; queue_cpu_budget at its default) and print its average cost per poll")
	csWhole := flag.Int("whole-arrays", 2, "with -clusterstate: the pending arrays of 1000 tasks left whole (one record each); the others' tasks are split into records")
	flag.Parse()
	switch {
	case *floor:
		wakeFloor()
		return
	case *idle > 0:
		idleTicker(*idle)
		return
	case *csQueued > 0:
		if err := clusterStatePolls(*csQueued, max(*rounds, 1), *csWhole, *csNarrow, *csExpanded, *csPolls); err != nil {
			fmt.Fprintln(os.Stderr, "jobsight-bench:", err)
			os.Exit(1)
		}
		return
	case *lookups > 0:
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
	p := plan{counts: counts, intervals: ivs, window: *window, windows: max(*windows, 1), warmup: *warmup,
		tools: *tools, profile: *profile, agentFrom: *agentFrom}
	if p.loads, err = choices("-load", *loads, "busy", "quiet"); err != nil {
		fail(err)
	}
	if p.configs, err = choices("-config", *configs, "production", "stack"); err != nil {
		fail(err)
	}
	if p.peerModes, err = choices("-peers", *peerModes, "job", "default", "proc"); err != nil {
		fail(err)
	}
	if err := p.run(); err != nil {
		fail(err)
	}
}

// choices splits a comma-separated flag and checks every value is known.
func choices(flagName, s string, known ...string) ([]string, error) {
	var out []string
	for _, v := range strings.Split(s, ",") {
		v = strings.TrimSpace(v)
		if !slices.Contains(known, v) {
			return nil, fmt.Errorf("%s: %q is not one of %s", flagName, v, strings.Join(known, ", "))
		}
		out = append(out, v)
	}
	return out, nil
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

// usage is what one process used so far.
type usage struct {
	cpu, childCPU time.Duration
	rss, hwm      int64
	ctxsw         int64 // context switches of its threads, voluntary and not
}

// readUsage reads a process's CPU time (its threads' schedstat run time:
// nanoseconds, unlike /proc/PID/stat's clock ticks), the CPU of children
// it reaped (squeue runs; clock ticks) and its RSS.
func readUsage(pid int) usage {
	var u usage
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*", pid))
	for _, t := range tasks {
		b, err := os.ReadFile(t + "/schedstat")
		if err != nil {
			continue
		}
		f := strings.Fields(string(b))
		if len(f) > 0 {
			ns, _ := strconv.ParseInt(f[0], 10, 64)
			u.cpu += time.Duration(ns)
		}
		st, _ := os.ReadFile(t + "/status")
		for _, l := range strings.Split(string(st), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.HasSuffix(k, "ctxt_switches") {
				n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				u.ctxsw += n
			}
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
