package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jobsight/jobsight/internal/site/clusterstate"
	"github.com/jobsight/jobsight/internal/slurm"
	"github.com/jobsight/jobsight/internal/textfmt"
	"github.com/jobsight/jobsight/test/stack"
)

// clusterStatePolls measures one cluster-state poll, whole, on a real
// controller holding queued jobs: for the narrow squeue the collector runs
// (slurm.Client.Jobs) and for `squeue --json` (what it ran before), the
// wall and CPU time of every command it starts (sinfo, squeue: their
// children's rusage), the collector's own CPU for reading the answers and
// building the snapshot (this process's rusage), the answer sizes, and
// slurmctld's RPCs by type with their time (sdiag). Both forms must give
// the same series: it fails when they differ.
//
// The queue: queued/1000 held arrays of 1000 tasks; every task of all but
// the last `whole` arrays split off into a record of its own (an update
// of each task's range, which is how tasks split in Slurm), so the
// controller holds records as a queue of single jobs does, plus pending
// arrays counted by their tasks, a het job, jobs pending for typed and
// untyped GPUs, one submitted to two partitions, and running jobs.
func clusterStatePolls(queued, rounds, whole int, narrowOnly, expanded bool, collectorPolls int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", "jobsight-clusterstate-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	sl, err := stack.StartSlurm(ctx, filepath.Join(dir, "slurm"), stack.SlurmOptions{GPUs: 2, GPUType: "a100",
		ExtraNodes: []string{"benchn2"},
		ExtraConf:  fmt.Sprintf("MaxJobCount=%d\nMaxArraySize=1001\n", queued+5000)})
	if err != nil {
		return err
	}
	defer sl.Stop()
	sh := func(script string) error {
		cmd := sl.Command(ctx, "sh", "-c", script)
		cmd.Path, cmd.Args = "/bin/sh", []string{"sh", "-c", script}
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %v: %s", script, err, out)
		}
		return nil
	}
	// Running jobs, one holding a GPU.
	for _, args := range [][]string{{"-c", "1", "--gres=gpu:a100:1"}, {"-c", "1"}, {"-p", "multi", "-w", "benchn2", "-c", "1"}} {
		id, err := sl.Sbatch(ctx, append([]string{"--output=/dev/null", "--mem=50M"}, append(args, "--wrap", "sleep 3600")...)...)
		if err != nil {
			return err
		}
		if _, err := sl.WaitJobState(ctx, id, "RUNNING"); err != nil {
			return err
		}
	}
	// A few pending that compete: GPUs by type and untyped, two
	// partitions, a het job, a sparse array whose task list is long.
	for _, s := range []string{
		"sbatch --output=/dev/null -c 2 --mem=50M --gres=gpu:a100:2 --begin=now+1hour --wrap true",
		"sbatch --output=/dev/null -c 1 --mem=50M --gres=gpu:1 -p debug,multi --wrap 'sleep 60'",
		"sbatch --output=/dev/null -c 64 --mem=50M -p debug,multi --wrap 'sleep 60'",
		"sbatch --output=/dev/null --mem=50M -c 1 -p debug --wrap 'sleep 60' : -c 2 --mem=50M -p multi --gres=gpu:1",
		// Not an even step: Slurm prints 1,5,...,105 as "1-105:4", and
		// squeue -r expands such a range without its last task (its
		// bitfmt2int loops while i < end, src/common/bitstring.c,
		// 26.05.3), so the -r answer would be one task short of the
		// controller's; the collector reads the folded string whole.
		"sbatch --output=/dev/null -c 64 --mem=50M --array=1,5,9,13,17,21,25,29,33,37,41,45,49,53,57,61,65,69,73,77,81,85,89,93,97,101,105,106 --wrap true",
	} {
		if err := sh(s + " >/dev/null"); err != nil {
			return err
		}
	}
	start := time.Now()
	arrays := max(queued/1000, 1)
	var ids []string
	for i := 0; i < arrays; i++ {
		out, err := sl.Command(ctx, "sbatch", "--parsable", "--hold", "--output=/dev/null", "-c", "1", "--mem=10M",
			"--array=0-"+strconv.Itoa(min(queued, 1000)-1), "--wrap", "true").Output()
		if err != nil {
			return fmt.Errorf("sbatch array: %w", err)
		}
		ids = append(ids, strings.TrimSpace(string(out)))
	}
	for i, id := range ids {
		if i >= len(ids)-whole {
			break
		}
		// An update of every task but the last splits each off (one of
		// all the meta-record's tasks would update the meta-record).
		if out, err := sl.Command(ctx, "scontrol", "update", "JobId="+id+"_[0-"+strconv.Itoa(min(queued, 1000)-2)+"]", "Nice=10").CombinedOutput(); err != nil {
			return fmt.Errorf("splitting %s: %v: %s", id, err, out)
		}
	}
	time.Sleep(3 * time.Second) // a scheduling pass for the reasons
	recs, _ := sl.Command(ctx, "squeue", "-h", "-o", "%i").Output()
	fmt.Printf("%s: %d queued jobs (%d held arrays of %d, %d left whole) and 9 others in %s; squeue lists %d records\n",
		sl.Install, queued, arrays, min(queued, 1000), min(whole, arrays), time.Since(start).Round(time.Second), strings.Count(string(recs), "\n"))

	client := &slurm.Client{Options: slurm.Options{Sinfo: sl.Install.Bin("sinfo"), Squeue: sl.Install.Bin("squeue"),
		Env: sl.Env(), Timeout: 10 * time.Minute}}
	forms := []struct {
		name string
		jobs func(context.Context) ([]byte, error)
	}{{"squeue --json (before)", client.JobsJSON}, {"squeue -O (narrow, now)", client.Jobs}}
	if narrowOnly {
		forms = forms[1:]
	}
	if expanded {
		// One line per array task (squeue -r): what a queue of as many
		// independently submitted jobs prints, each on its own line.
		forms = append(forms, struct {
			name string
			jobs func(context.Context) ([]byte, error)
		}{"squeue -O -r (a line a job)", func(ctx context.Context) ([]byte, error) {
			cmd := sl.Command(ctx, "squeue", "--noheader", "--all", "-r", "-O", slurm.PollFormat())
			cmd.Env = append(cmd.Env, slurm.PollEnv...)
			return cmd.Output()
		}})
	}
	var series [][]string
	for _, f := range forms {
		var m pollFigures
		var last *clusterstate.Snapshot
		for range rounds {
			rpc0, err := sdiagRPCs(ctx, sl)
			if err != nil {
				return err
			}
			ch0, self0 := rusage(syscall.RUSAGE_CHILDREN), rusage(syscall.RUSAGE_SELF)
			t0 := time.Now()
			nodes, err := client.Nodes(ctx)
			if err != nil {
				return err
			}
			jobs, err := f.jobs(ctx)
			if err != nil {
				return err
			}
			cmdWall := time.Since(t0)
			ch1, self1 := rusage(syscall.RUSAGE_CHILDREN), rusage(syscall.RUSAGE_SELF)
			snap, err := clusterstate.Build("bench", time.Now(), nodes, jobs)
			if err != nil {
				return err
			}
			_ = clusterstate.Series(snap, clusterstate.Health{}, true)
			self2 := rusage(syscall.RUSAGE_SELF)
			rpc1, err := sdiagRPCs(ctx, sl)
			if err != nil {
				return err
			}
			m.add(cmdWall, ch1-ch0, (self1-self0)+(self2-self1), len(nodes)+len(jobs), rpc0, rpc1)
			last = snap
		}
		fmt.Printf("%-26s %s\n", f.name, m)
		series = append(series, seriesLines(last))
	}
	if collectorPolls > 0 {
		if err := collectorCost(ctx, sl, client, "", dir, collectorPolls); err != nil {
			return err
		}
		if expanded {
			src := expandedSource{Client: client, jobs: forms[len(forms)-1].jobs, reads: new(atomic.Uint64)}
			if err := collectorCost(ctx, sl, src, " (squeue -r: a line a job)", dir, collectorPolls); err != nil {
				return err
			}
		}
	}
	for i := 1; i < len(series); i++ {
		if slices.Equal(series[0], series[i]) {
			continue
		}
		for _, l := range series[0] {
			if !slices.Contains(series[i], l) {
				fmt.Printf("  only from %s: %s\n", forms[0].name, l)
			}
		}
		for _, l := range series[i] {
			if !slices.Contains(series[0], l) {
				fmt.Printf("  only from %s: %s\n", forms[i].name, l)
			}
		}
		return fmt.Errorf("%s and %s give different series", forms[0].name, forms[i].name)
	}
	if len(series) > 1 {
		fmt.Printf("every answer gives the same %d series\n", len(series[0]))
	}
	return nil
}

// pollFigures sums the rounds of one form.
type pollFigures struct {
	n                 int
	wall, child, self []time.Duration
	bytes             int
	rpcs              map[string]int
	rpcMicros         map[string]int64
}

func (m *pollFigures) add(wall, child, self time.Duration, bytes int, before, after map[string][2]int64) {
	m.n++
	m.wall, m.child, m.self = append(m.wall, wall), append(m.child, child), append(m.self, self)
	m.bytes = bytes
	if m.rpcs == nil {
		m.rpcs, m.rpcMicros = map[string]int{}, map[string]int64{}
	}
	for k, v := range after {
		if d := v[0] - before[k][0]; d > 0 && k != "REQUEST_STATS_INFO" {
			m.rpcs[k] += int(d)
			m.rpcMicros[k] += v[1] - before[k][1]
		}
	}
}

func (m pollFigures) String() string {
	med := func(d []time.Duration) string {
		s := slices.Clone(d)
		slices.Sort(s)
		return fmt.Sprintf("%d/%d/%d", s[0].Milliseconds(), s[len(s)/2].Milliseconds(), s[len(s)-1].Milliseconds())
	}
	var rpcs []string
	total := 0.0
	for k, v := range m.rpcs {
		per := float64(v) / float64(m.n)
		total += per
		rpcs = append(rpcs, fmt.Sprintf("%s %.0f (%.0f ms)", strings.TrimPrefix(k, "REQUEST_"), per, float64(m.rpcMicros[k])/float64(m.n)/1000))
	}
	slices.Sort(rpcs)
	return fmt.Sprintf("answers %9s | commands wall %s ms, CPU %s ms | collector CPU %s ms | RPCs %.0f: %s (min/median/max of %d)",
		textfmt.Bytes(m.bytes), med(m.wall), med(m.child), med(m.self), total, strings.Join(rpcs, ", "), m.n)
}

// rusage is the user and system CPU time of who.
func rusage(who int) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(who, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// sdiagRPC is one "<TYPE> ( id) count:N ave_time:A total_time:T" line.
var sdiagRPC = regexp.MustCompile(`(?m)^\s*(\w+)\s+\(\s*\d+\)\s+count:(\d+)\s+ave_time:\d+\s+total_time:(\d+)`)

// sdiagRPCs reads slurmctld's RPC counts and total microseconds by type.
func sdiagRPCs(ctx context.Context, sl *stack.Slurm) (map[string][2]int64, error) {
	out, err := sl.Command(ctx, "sdiag").Output()
	if err != nil {
		return nil, fmt.Errorf("sdiag: %w", err)
	}
	text := string(out)
	if i := strings.Index(text, "Remote Procedure Call statistics by user"); i >= 0 {
		text = text[:i]
	}
	m := map[string][2]int64{}
	for _, s := range sdiagRPC.FindAllStringSubmatch(text, -1) {
		c, _ := strconv.ParseInt(s[2], 10, 64)
		t, _ := strconv.ParseInt(s[3], 10, 64)
		m[s[1]] = [2]int64{c, t}
	}
	return m, nil
}

// seriesLines are a snapshot's series, name, labels and value, sorted;
// the collector's health series are left out.
func seriesLines(s *clusterstate.Snapshot) []string {
	var out []string
	for _, x := range clusterstate.Series(s, clusterstate.Health{}, true) {
		if strings.HasPrefix(x.Name, "jobsight_clusterstate_") {
			continue
		}
		var ls []string
		for _, l := range x.Labels {
			ls = append(ls, l.Name+"="+l.Value)
		}
		v := 0.0
		if len(x.Samples) > 0 {
			v = x.Samples[len(x.Samples)-1].Value
		}
		out = append(out, fmt.Sprintf("%s{%s} %g", x.Name, strings.Join(ls, ","), v))
	}
	slices.Sort(out)
	return out
}

// collectorCost runs the collector itself (clusterstate.Collector with its
// default queue_cpu_budget) for polls polls, 30 s apart on a simulated
// clock, and prints its average cost per poll with everything counted:
// the commands' CPU, its own, slurmctld's RPCs.
func collectorCost(ctx context.Context, sl *stack.Slurm, client clusterstate.Source, what, dir string, polls int) error {
	cfg := clusterstate.DefaultConfig()
	cfg.Cluster, cfg.Listen = "bench", ""
	cfg.Spool.Dir = filepath.Join(dir, "collector-spool")
	now := time.Now()
	c, err := clusterstate.New(cfg, clusterstate.Options{Source: client, Now: func() time.Time { return now },
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return err
	}
	rpc0, err := sdiagRPCs(ctx, sl)
	if err != nil {
		return err
	}
	ch0, self0 := rusage(syscall.RUSAGE_CHILDREN), rusage(syscall.RUSAGE_SELF)
	calls0 := client.Calls()
	reads := 0
	for i := 0; i < polls; i++ {
		snap, err := c.Poll(ctx)
		if err != nil {
			return err
		}
		if snap.QueueTime.Equal(now) {
			reads++
		}
		now = now.Add(cfg.Interval)
	}
	ch, self := rusage(syscall.RUSAGE_CHILDREN)-ch0, rusage(syscall.RUSAGE_SELF)-self0
	rpc1, err := sdiagRPCs(ctx, sl)
	if err != nil {
		return err
	}
	var rpcs int64
	for k, v := range rpc1 {
		if k != "REQUEST_STATS_INFO" { // sdiag's own
			rpcs += v[0] - rpc0[k][0]
		}
	}
	per := (ch + self) / time.Duration(polls)
	fmt.Printf("collector%s, %d polls of %s (queue_cpu_budget %v): queue read %d times, %d commands; per poll: commands' CPU %d ms, collector's %d ms, %.1f slurmctld RPCs: %.2f %% of a core\n",
		what, polls, cfg.Interval, cfg.QueueCPUBudget, reads, client.Calls()-calls0, (ch / time.Duration(polls)).Milliseconds(), (self / time.Duration(polls)).Milliseconds(),
		float64(rpcs)/float64(polls), 100*per.Seconds()/cfg.Interval.Seconds())
	return nil
}

// expandedSource is the cluster with squeue -r for the queue: a line a job.
type expandedSource struct {
	*slurm.Client
	jobs  func(context.Context) ([]byte, error)
	reads *atomic.Uint64
}

func (e expandedSource) Jobs(ctx context.Context) ([]byte, error) {
	e.reads.Add(1)
	return e.jobs(ctx)
}

func (e expandedSource) Calls() uint64 { return e.Client.Calls() + e.reads.Load() }
