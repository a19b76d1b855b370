// Package spank tests the Jobsight SPANK plugin (agent/spank/jobsight.c)
// on a real single-node Slurm cluster with a stub agent that records how it
// was called.
package spank

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jobsight/jobsight/internal/slurm"
	"github.com/jobsight/jobsight/test/stack"
)

// stubAgent records "<argv...> | <memory cgroup> | nodes=<SLURM_JOB_NODELIST>"
// per call, one line each.
const stubAgent = `#!/bin/sh
echo "$* | $(grep ':memory:' /proc/self/cgroup) | nodes=$SLURM_JOB_NODELIST" >> %[1]s
env | sort > %[1]s.env; cat /proc/$PPID/cmdline | tr "\\0" " " > %[1]s.parent
`

type cluster struct {
	*stack.Slurm
	calls     string // the stub agent's call log
	plugstack string
	plugin    string
	stub      string
	stateDir  string // the plugin's state_dir: where it looks for the node agent's socket
}

// buildPlugin builds the plugin into dir against the spank.h of in (the
// zero SlurmInstall: the release the cluster runs), as a site does with
// `make -C agent/spank SLURM_PREFIX=<its Slurm>`.
func buildPlugin(t *testing.T, dir string, in stack.SlurmInstall) string {
	t.Helper()
	if in.Release == "" {
		var err error
		if in, err = stack.FindSlurm(context.Background(), ""); err != nil {
			t.Fatal(err)
		}
	}
	src, err := filepath.Abs("../../agent/spank")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("make", "-s", "-B", "-C", src, "OUT="+dir, "SLURM_INCLUDE="+in.Include()).CombinedOutput()
	if err != nil {
		t.Fatalf("building the SPANK plugin for %s: %v\n%s", in, err, out)
	}
	return filepath.Join(dir, "jobsight.so")
}

func start(t *testing.T) *cluster {
	t.Helper()
	stack.Require(t, "root", "slurm", "cgroupv1", "cc", "make")
	dir := t.TempDir()
	c := &cluster{calls: filepath.Join(dir, "calls.log"), plugstack: filepath.Join(dir, "plugstack.conf"), stub: filepath.Join(dir, "stub-agent"),
		stateDir: filepath.Join(dir, "state")}
	if err := os.MkdirAll(c.stateDir, 0o700); err != nil {
		t.Fatal(err)
	}
	c.plugin = buildPlugin(t, dir, stack.SlurmInstall{})
	if err := os.WriteFile(c.stub, []byte(fmt.Sprintf(stubAgent, c.calls)), 0o755); err != nil {
		t.Fatal(err)
	}
	c.writePlugstack(t, c.stub)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := stack.StartSlurm(ctx, filepath.Join(dir, "slurm"), stack.SlurmOptions{PlugstackConf: c.plugstack})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	c.Slurm = s
	return c
}

// writePlugstack loads the plugin as "required" with agent (none: an
// empty plugstack.conf).
func (c *cluster) writePlugstack(t *testing.T, agent string) {
	t.Helper()
	c.writePlugstackAs(t, "required", agent)
}

// writePlugstackAs loads the plugin with the given plugstack.conf flag
// ("required" or "optional").
func (c *cluster) writePlugstackAs(t *testing.T, flag, agent string) {
	t.Helper()
	line := fmt.Sprintf("%s %s agent=%s config=/etc/jobsight/test.yaml state_dir=%s\n", flag, c.plugin, agent, c.stateDir)
	if agent == "" {
		line = ""
	}
	if err := os.WriteFile(c.plugstack, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
}

// callsFor returns the stub agent's calls for one job.
func (c *cluster) callsFor(id string) []string {
	b, _ := os.ReadFile(c.calls)
	var calls []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, "--job-id "+id+" ") {
			calls = append(calls, l)
		}
	}
	return calls
}

// waitCalls waits until the job has a stop call (the epilog ran) and
// returns its calls.
func (c *cluster) waitCalls(t *testing.T, ctx context.Context, id string) []string {
	t.Helper()
	for {
		calls := c.callsFor(id)
		if slices.ContainsFunc(calls, func(l string) bool { return strings.HasPrefix(l, "stop ") }) {
			time.Sleep(300 * time.Millisecond) // a duplicate would show up now
			return c.callsFor(id)
		}
		if ctx.Err() != nil {
			t.Fatalf("job %s: no stop call from the epilog; calls: %q", id, calls)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// jobNodes is the SLURM_JOB_NODELIST a job on the test cluster's node
// gets in the prolog and epilog: slurmd 25.05, 25.11 and 26.05 set it
// (their prep/script plugin); 22.05 leaves SPANK's prolog and epilog
// without it, and the agent then takes the job's nodes from squeue.
func (c *cluster) jobNodes() string {
	if c.Install.Release == "22.05" {
		return ""
	}
	return c.NodeName
}

// checkStartStop checks a job's calls of the agent: one start, one stop,
// each with the job's node list (slurmd's SLURM_JOB_NODELIST), which
// decides the node that writes the job document.
func (c *cluster) checkStartStop(t *testing.T, id string, calls []string) {
	t.Helper()
	var starts, stops int
	for _, l := range calls {
		argv, rest, _ := strings.Cut(l, " | ")
		cg, nodes, _ := strings.Cut(rest, " | nodes=")
		if want := c.jobNodes(); nodes != want {
			t.Errorf("job %s: %q call with SLURM_JOB_NODELIST %q, want %q", id, argv, nodes, want)
		}
		switch {
		case strings.HasPrefix(argv, "start "):
			starts++
			want := fmt.Sprintf("start --config /etc/jobsight/test.yaml --job-id %s --uid 0", id)
			if argv != want {
				t.Errorf("job %s start call %q, want %q", id, argv, want)
			}
			if strings.Contains(cg, "job_") {
				t.Errorf("job %s: the agent runs inside the job's cgroup (%s); it must be outside", id, cg)
			}
		case strings.HasPrefix(argv, "stop "):
			stops++
			want := fmt.Sprintf("stop --config /etc/jobsight/test.yaml --job-id %s", id)
			if argv != want {
				t.Errorf("job %s stop call %q, want %q", id, argv, want)
			}
		}
	}
	if starts != 1 || stops != 1 {
		t.Errorf("job %s: %d start and %d stop calls, want 1 and 1: %q", id, starts, stops, calls)
	}
}

func TestPluginStartsAndStopsOneAgentPerJob(t *testing.T) {
	c := start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	// The time-limit case takes over a minute (Slurm limits are minutes):
	// submit it first so it runs beside the others.
	timeout, err := c.Sbatch(ctx, "--output=/dev/null", "--time=1", "--wrap", "sleep 300")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		args  []string
		state string
	}{
		{"completes", []string{"--wrap", "sleep 1"}, "COMPLETED"},
		{"fails", []string{"--wrap", "exit 1"}, "FAILED"},
		{"cancelled", []string{"--wrap", "sleep 300"}, "CANCELLED"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			id, err := c.Sbatch(ctx, append([]string{"--output=/dev/null"}, tc.args...)...)
			if err != nil {
				t.Fatal(err)
			}
			if tc.state == "CANCELLED" {
				if _, err := c.WaitJobState(ctx, id, "RUNNING"); err != nil {
					t.Fatal(err)
				}
				time.Sleep(time.Second)
				if err := c.Scancel(ctx, id); err != nil {
					t.Fatal(err)
				}
			}
			if st, err := c.WaitJobState(ctx, id, tc.state); err != nil {
				t.Fatalf("state %s: %v", st, err)
			}
			c.checkStartStop(t, id, c.waitCalls(t, ctx, id))
		})
	}
	t.Run("opt-out", func(t *testing.T) {
		id, err := c.Sbatch(ctx, "--output=/dev/null", "--jobsight=off", "--wrap", "true")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.WaitJobState(ctx, id, "COMPLETED"); err != nil {
			t.Fatal(err)
		}
		// The epilog runs after COMPLETED: give it the time a stop call takes.
		time.Sleep(3 * time.Second)
		if calls := c.callsFor(id); len(calls) != 0 {
			t.Errorf("job with --jobsight=off started the agent: %q", calls)
		}
	})
	t.Run("bad option value is refused at submission", func(t *testing.T) {
		if _, err := c.Sbatch(ctx, "--output=/dev/null", "--jobsight=maybe", "--wrap", "true"); err == nil {
			t.Errorf("sbatch --jobsight=maybe was accepted")
		}
	})
	t.Run("time limit", func(t *testing.T) {
		if st, err := c.WaitJobState(ctx, timeout, "TIMEOUT"); err != nil {
			t.Fatalf("state %s: %v", st, err)
		}
		c.checkStartStop(t, timeout, c.waitCalls(t, ctx, timeout))
	})
}

func TestPluginWithMissingAgentLeavesJobsAlone(t *testing.T) {
	c := start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	missing := filepath.Join(t.TempDir(), "no-such-agent")
	c.writePlugstack(t, missing)
	if err := c.RestartSlurmd(ctx); err != nil {
		t.Fatal(err)
	}
	id, err := c.Sbatch(ctx, "--output=/dev/null", "--wrap", "sleep 1")
	if err != nil {
		t.Fatal(err)
	}
	if st, err := c.WaitJobState(ctx, id, "COMPLETED"); err != nil {
		t.Fatalf("job with a missing agent ended %s: %v", st, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		log, _ := os.ReadFile(c.SlurmdLog)
		if strings.Contains(string(log), "agent "+missing+" is not executable") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("slurmd log does not name the missing agent %s", missing)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// The plugin builds, warning-free (-Werror), against the spank.h of every
// release the tests have (26.05 and Debian's 22.05 at least), and records
// the release it was built for in plugin_version, which slurmd checks.
func TestPluginBuildsForEveryRelease(t *testing.T) {
	stack.Require(t, "cc", "make")
	releases := []string{"22.05", stack.SlurmRelease()}
	if stack.SlurmRelease() == "22.05" {
		releases = releases[:1]
	}
	for _, rel := range releases {
		in, err := stack.FindSlurm(context.Background(), rel)
		if err != nil {
			stack.Unavailable(t, "Slurm %s: %v", rel, err)
		}
		so := buildPlugin(t, t.TempDir(), in)
		got, err := slurm.PluginVersion(so)
		if err != nil {
			t.Fatal(err)
		}
		want, err := headerVersion(filepath.Join(in.Include(), "slurm", "slurm_version.h"))
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s: plugin_version %#x, want %#x", in, got, want)
		}
	}
}

// A plugin built for another release is refused by slurmd: with
// `optional` (as the README's plugstack.conf says), jobs still run, but
// nothing hands them to an agent and slurmd's log is the only trace. This
// is what the collector's "running jobs without an agent report" reveals.
func TestStalePluginIsRefusedAndJobsRunUnmonitored(t *testing.T) {
	if stack.SlurmRelease() == "22.05" {
		t.Skip("the cluster runs 22.05: no older release's spank.h to build a stale plugin from")
	}
	c := start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	old, err := stack.FindSlurm(ctx, "22.05")
	if err != nil {
		stack.Unavailable(t, "Debian's Slurm 22.05 headers: %v", err)
	}
	c.plugin = buildPlugin(t, t.TempDir(), old)
	c.writePlugstackAs(t, "optional", c.stub)
	id := c.restartAndRunJob(t, ctx)
	if calls := c.callsFor(id); len(calls) != 0 {
		t.Errorf("a stale plugin handed job %s to the agent: %q", id, calls)
	}
	// "spank: <plugin>: Incompatible plugin version", then "Failed to
	// load optional plugin": the only trace.
	log, _ := os.ReadFile(c.SlurmdLog)
	if !strings.Contains(string(log), c.plugin+": Incompatible plugin version") {
		t.Errorf("slurmd's log does not name the refused plugin %s", c.plugin)
	}
}

// headerVersion reads SLURM_VERSION_NUMBER from slurm_version.h.
func headerVersion(path string) (uint32, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "#define SLURM_VERSION_NUMBER 0x"); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 16, 32)
			return uint32(n), err
		}
	}
	return 0, fmt.Errorf("%s: no SLURM_VERSION_NUMBER", path)
}

// TestPrologDelay prints how much later a job starts running with the
// plugin than without it (a figure, not an assertion).
func TestPrologDelay(t *testing.T) {
	if testing.Short() {
		t.Skip("measurement; skipped with -short")
	}
	c := start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	measure := func() time.Duration {
		var ds []time.Duration
		for range 5 {
			stamp := filepath.Join(t.TempDir(), "ran")
			t0 := time.Now()
			id, err := c.Sbatch(ctx, "--output=/dev/null", "--wrap", "date +%s.%N > "+stamp)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.WaitJobState(ctx, id, "COMPLETED"); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(stamp)
			if err != nil {
				t.Fatal(err)
			}
			f, err := strconv.ParseFloat(strings.TrimSpace(string(b)), 64)
			if err != nil {
				t.Fatal(err)
			}
			ds = append(ds, time.Unix(0, int64(f*1e9)).Sub(t0))
		}
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		return ds[len(ds)/2]
	}
	with := measure()
	c.writePlugstack(t, "")
	if err := c.RestartSlurmd(ctx); err != nil {
		t.Fatal(err)
	}
	without := measure()
	t.Logf("submit-to-running median over 5 jobs: with plugin %v, without %v, difference %v", with, without, with-without)
}

// fakeNodeAgent listens where the node's agent would, records every
// request line and answers with reply ("ok": taken; "bye": exiting).
type fakeNodeAgent struct {
	mu    sync.Mutex
	lines []string
	reply string
}

func (f *fakeNodeAgent) serve(ln net.Listener) {
	for {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		line, _ := bufio.NewReader(conn).ReadString('\n')
		f.mu.Lock()
		f.lines = append(f.lines, strings.TrimSpace(line))
		reply := f.reply
		f.mu.Unlock()
		fmt.Fprintln(conn, reply)
		conn.Close()
	}
}

func (f *fakeNodeAgent) requests(id string) []map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []map[string]any
	for _, l := range f.lines {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && fmt.Sprint(m["job_id"]) == id {
			out = append(out, m)
		}
	}
	return out
}

// While the node's agent runs, the plugin hands it each job's start and
// end over its socket (one JSON line each) and starts no process; when the
// agent answers that it is exiting, the plugin launches the agent as
// before.
func TestPluginHandsJobsToTheRunningNodeAgent(t *testing.T) {
	c := start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ln, err := net.Listen("unix", filepath.Join(c.stateDir, "agent@"+c.NodeName+".sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	agent := &fakeNodeAgent{reply: "ok"}
	go agent.serve(ln)

	id, err := c.Sbatch(ctx, "--output=/dev/null", "--wrap", "sleep 1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitJobState(ctx, id, "COMPLETED"); err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if got = agent.requests(id); len(got) >= 2 {
			break
		}
	}
	if len(got) != 2 || got[0]["op"] != "start" || got[1]["op"] != "stop" || fmt.Sprint(got[0]["uid"]) != "0" {
		t.Fatalf("job %s: requests %v, want a start (uid 0) then a stop", id, got)
	}
	// Both carry the job's nodes as slurmd named them to the prolog and
	// epilog: the node agent decides from them which node writes the job
	// document, even when slurmctld does not answer.
	if want := c.jobNodes(); fmt.Sprint(got[0]["nodes"]) != cmp.Or(want, "<nil>") || fmt.Sprint(got[1]["nodes"]) != cmp.Or(want, "<nil>") {
		t.Errorf("job %s: start nodes %v, stop nodes %v, want %q with both", id, got[0]["nodes"], got[1]["nodes"], want)
	}
	// 26.05 gives the prolog the job's SLUID; the plugin hands it on with
	// both, the same for both, and never where Slurm gives none (22.05).
	sluid, _ := got[0]["sluid"].(string)
	if c.Install.Release == "22.05" {
		if _, ok := got[0]["sluid"]; ok {
			t.Errorf("job %s: a SLUID %q from Slurm 22.05, which has none", id, sluid)
		}
	} else if len(sluid) != 14 || sluid[0] != 's' || got[1]["sluid"] != sluid {
		t.Errorf("job %s: start SLUID %v, stop SLUID %v: want the job's SLUID (s + 13 characters) with both", id, got[0]["sluid"], got[1]["sluid"])
	}
	time.Sleep(time.Second)
	if calls := c.callsFor(id); len(calls) != 0 {
		t.Errorf("job %s: the agent was launched although the node's agent took the job: %q", id, calls)
	}

	agent.mu.Lock()
	agent.reply = "bye"
	agent.mu.Unlock()
	id, err = c.Sbatch(ctx, "--output=/dev/null", "--wrap", "sleep 1")
	if err != nil {
		t.Fatal(err)
	}
	c.checkStartStop(t, id, c.waitCalls(t, ctx, id))
	if n := len(agent.requests(id)); n != 2 {
		t.Errorf("job %s: %d requests reached the exiting agent, want its start and stop offered", id, n)
	}
}

// A Slurm upgrade from 25.11 to 26.05 on a node whose plugin was built for
// 25.11: slurmd refuses it and jobs run unmonitored, until the check the
// package's slurmd.service drop-in runs before slurmd starts
// (jobsight-spank-install --ensure) rebuilds it against the Slurm that
// slurmd is; the next job is handed to the agent. A second check finds
// it in step and leaves it alone. The 25.11 plugin is built from Slurm
// 25.11.7's own headers (../shared/slurm), slurm_version.h filled in as
// its configure does. (A short name: slurmstepd's socket path under
// t.TempDir must fit in 108 bytes.)
func TestOldPluginRebuiltBeforeSlurmd(t *testing.T) {
	if stack.SlurmRelease() != "26.05" {
		t.Skip("the upgrade is 25.11 to 26.05: the cluster runs " + stack.SlurmRelease())
	}
	old := slurmHeaders(t, "25.11.7", 0x190b07)
	c := start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	in, err := stack.FindSlurm(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	src, _ := filepath.Abs("../../agent/spank")
	c.plugin = buildPlugin(t, filepath.Join(t.TempDir(), "plugins"), stack.SlurmInstall{Release: "25.11", Prefix: filepath.Dir(old)})
	c.writePlugstackAs(t, "optional", c.stub)

	// Without the check: refused, the job unmonitored.
	id := c.restartAndRunJob(t, ctx)
	if calls := c.callsFor(id); len(calls) != 0 {
		t.Fatalf("the 25.11 plugin was loaded by slurmd 26.05 (calls %q): the test proves nothing", calls)
	}

	// slurmd restarts as systemd would start it: the drop-in's check first.
	if err := c.StopSlurmd(); err != nil {
		t.Fatal(err)
	}
	ensure := func() string {
		t.Helper()
		cmd := exec.CommandContext(ctx, filepath.Join(src, "jobsight-spank-install"), "--ensure")
		cmd.Env = append(os.Environ(), in.PathEnv(), "PLUGSTACK="+c.plugstack, "JOBSIGHT_SPANK_SRC="+src)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("jobsight-spank-install --ensure: %v\n%s", err, out)
		}
		return string(out)
	}
	out := ensure()
	t.Logf("--ensure:\n%s", out)
	if !strings.Contains(out, c.plugin+" is built for Slurm 25.11 but") || !strings.Contains(out, "rebuilt "+c.plugin+" for Slurm 26.05") {
		t.Errorf("--ensure said\n%s\nwant the 25.11 plugin named and rebuilt for 26.05", out)
	}
	got, err := slurm.PluginVersion(c.plugin)
	if err != nil {
		t.Fatal(err)
	}
	want, err := headerVersion(filepath.Join(in.Include(), "slurm", "slurm_version.h"))
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("after --ensure the plugin's plugin_version is %#x, want slurmd's %#x", got, want)
	}
	if err := c.StartSlurmd(ctx); err != nil {
		t.Fatal(err)
	}
	id, err = c.Sbatch(ctx, "--output=/dev/null", "--wrap", "sleep 1")
	if err != nil {
		t.Fatal(err)
	}
	c.checkStartStop(t, id, c.waitCalls(t, ctx, id))

	// In step now: the next check is quiet and rebuilds nothing.
	before, _ := os.Stat(c.plugin)
	if out := ensure(); !strings.Contains(out, "is built for Slurm 26.05, as ") {
		t.Errorf("a second --ensure said\n%s\nwant it in step", out)
	}
	if after, _ := os.Stat(c.plugin); !after.ModTime().Equal(before.ModTime()) {
		t.Error("a second --ensure rebuilt a plugin already in step")
	}
}

// slurmHeaders unpacks the public headers of Slurm version from
// ../shared/slurm's release tarball into a temporary include directory,
// with slurm_version.h as configure writes it (SLURM_VERSION_NUMBER
// number), and returns the directory.
func slurmHeaders(t *testing.T, version string, number uint32) string {
	t.Helper()
	tarball, _ := filepath.Abs(filepath.Join("../../../shared/slurm", "slurm-"+version+".tar.gz"))
	if _, err := os.Stat(tarball); err != nil {
		stack.Unavailable(t, "Slurm %s's sources: %v", version, err)
	}
	dir := t.TempDir()
	top := "slurm-" + version
	if out, err := exec.Command("tar", "-xzf", tarball, "-C", dir, top+"/slurm").CombinedOutput(); err != nil {
		t.Fatalf("unpacking %s: %v\n%s", tarball, err, out)
	}
	inc := filepath.Join(dir, "include")
	if err := os.Rename(filepath.Join(dir, top), inc); err != nil {
		t.Fatal(err)
	}
	tmpl, err := os.ReadFile(filepath.Join(inc, "slurm", "slurm_version.h.in"))
	if err != nil {
		t.Fatal(err)
	}
	h := strings.Replace(string(tmpl), "#undef SLURM_VERSION_NUMBER", fmt.Sprintf("#define SLURM_VERSION_NUMBER 0x%06x", number), 1)
	if h == string(tmpl) {
		t.Fatalf("%s's slurm_version.h.in has no #undef SLURM_VERSION_NUMBER", version)
	}
	if err := os.WriteFile(filepath.Join(inc, "slurm", "slurm_version.h"), []byte(h), 0o644); err != nil {
		t.Fatal(err)
	}
	return inc
}

// restartAndRunJob restarts slurmd (it reads plugstack.conf when it
// starts) and runs one job to its end; on a job that does not end it
// prints squeue's reason and the end of slurmd's log.
func (c *cluster) restartAndRunJob(t *testing.T, ctx context.Context) string {
	t.Helper()
	if err := c.RestartSlurmd(ctx); err != nil {
		t.Fatal(err)
	}
	id, err := c.Sbatch(ctx, "--output=/dev/null", "--wrap", "sleep 1")
	if err != nil {
		t.Fatal(err)
	}
	if st, err := c.WaitJobState(ctx, id, "COMPLETED"); err != nil {
		q, _ := c.Squeue(context.Background(), "-h", "-o", "%i %T %r")
		log, _ := os.ReadFile(c.SlurmdLog)
		t.Fatalf("job %s ended %s: %v\nsqueue: %s\nslurmd's log ends:\n%s", id, st, err, q, tail(string(log), 3000))
	}
	return id
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
