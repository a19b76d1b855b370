package stack

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// AgentOptions has Up load the Jobsight SPANK plugin into slurmd, so every
// job gets an agent that writes to this stack's Elasticsearch and
// Prometheus.
type AgentOptions struct {
	Binary string // the built jobsight-agent
	Plugin string // the built jobsight.so
	// Interval, FlushInterval and PushInterval are the agent's; defaults
	// 1s, 5s and 2s (fast, for tests and demos).
	Interval, FlushInterval, PushInterval time.Duration
	// Squeue is the squeue the agents run (a wrapper, in tests); default
	// the cluster release's squeue.
	Squeue string
	// Extra is YAML appended to the generated agent.yaml.
	Extra string
}

// Agent is where the stack's agents keep their configuration, state and log.
type Agent struct {
	Config    string // agent.yaml
	Plugstack string // plugstack.conf loading the SPANK plugin
	StateDir  string
	SpoolDir  string
	Log       string
}

// BuildAgent builds the agent and the SPANK plugin from the repository at
// repo into out, returning their paths. The plugin is built against the
// spank.h of the release SlurmRelease() names (slurmd refuses a plugin
// built for another release).
func BuildAgent(ctx context.Context, repo, out string) (agent, plugin string, err error) {
	in, err := FindSlurm(ctx, "")
	if err != nil {
		return "", "", err
	}
	return BuildAgentFor(ctx, repo, out, in)
}

// BuildAgentFor is BuildAgent with the SPANK plugin built for in.
func BuildAgentFor(ctx context.Context, repo, out string, in SlurmInstall) (agent, plugin string, err error) {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", "", err
	}
	out, _ = filepath.Abs(out)
	agent, plugin = filepath.Join(out, "jobsight-agent"), filepath.Join(out, "jobsight.so")
	ldflags := "-s -w -X github.com/jobsight/jobsight/agent/jobagent.Version=" + AgentVersion(ctx, repo)
	for _, c := range [][]string{
		{"go", "build", "-trimpath", "-ldflags=" + ldflags, "-o", agent, "./cmd/jobsight-agent"},
		{"make", "-s", "-B", "-C", "agent/spank", "OUT=" + out, "SLURM_INCLUDE=" + in.Include()},
	} {
		cmd := exec.CommandContext(ctx, c[0], c[1:]...)
		cmd.Dir = repo
		// cgo: the GPU backends load NVML and AMD SMI at run time (dlopen).
		cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
		if b, err := cmd.CombinedOutput(); err != nil {
			return "", "", fmt.Errorf("%s: %w\n%s", strings.Join(c, " "), err, b)
		}
	}
	return agent, plugin, nil
}

// AgentVersion is the version BuildAgent builds into the agent, as `make
// agent` does: the git description of the checkout at repo ("unknown"
// outside a git checkout).
func AgentVersion(ctx context.Context, repo string) string {
	cmd := exec.CommandContext(ctx, "git", "describe", "--tags", "--always", "--dirty")
	cmd.Dir = repo
	out, err := cmd.Output()
	if v := strings.TrimSpace(string(out)); err == nil && v != "" {
		return v
	}
	return "unknown"
}

// writeAgent writes agent.yaml (pointing at es and prom) and a
// plugstack.conf loading the plugin, under dir.
func writeAgent(dir string, o AgentOptions, in SlurmInstall, es *ESServer, prom *Server) (*Agent, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	a := &Agent{
		Config: filepath.Join(dir, "agent.yaml"), Plugstack: filepath.Join(dir, "plugstack.conf"),
		StateDir: filepath.Join(dir, "state"), SpoolDir: filepath.Join(dir, "spool"), Log: filepath.Join(dir, "agent.log"),
	}
	orDur := func(d, def time.Duration) time.Duration {
		if d == 0 {
			return def
		}
		return d
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Written by test/stack for this stack only.\n")
	fmt.Fprintf(&b, "interval: %s\nflush_interval: %s\n", orDur(o.Interval, time.Second), orDur(o.FlushInterval, 5*time.Second))
	fmt.Fprintf(&b, "state_dir: %s\nlog_file: %s\nlog_level: debug\noutput_dir: %s\n", a.StateDir, a.Log, filepath.Join(dir, "documents"))
	squeue := in.Bin("squeue")
	if o.Squeue != "" {
		squeue = o.Squeue
	}
	// The agent is started by slurmd's SPANK hook with a fixed PATH: it is
	// told where this release's clients are.
	fmt.Fprintf(&b, "slurm: {final_state_wait: 60s, squeue: %q, scontrol: %q}\ncgroup: {wait: 30s}\n", squeue, in.Bin("scontrol"))
	fmt.Fprintf(&b, "spool: {dir: %s}\n", a.SpoolDir)
	if es != nil {
		pw := filepath.Join(dir, "es-password")
		if err := os.WriteFile(pw, []byte(es.Password), 0o600); err != nil {
			return nil, err
		}
		fmt.Fprintf(&b, "elasticsearch:\n  urls: [%q]\n", es.URL)
		if es.User != "" {
			fmt.Fprintf(&b, "  username: %q\n  password_file: %s\n", es.User, pw)
		}
		if es.CACertFile != "" {
			fmt.Fprintf(&b, "  ca_file: %s\n", es.CACertFile)
		}
	}
	if prom != nil {
		fmt.Fprintf(&b, "prometheus:\n  remote_write_url: %q\n  push_interval: %s\n", prom.URL+"/api/v1/write", orDur(o.PushInterval, 2*time.Second))
	}
	b.WriteString(o.Extra)
	if err := os.WriteFile(a.Config, []byte(b.String()), 0o644); err != nil {
		return nil, err
	}
	line := fmt.Sprintf("optional %s agent=%s config=%s state_dir=%s\n", o.Plugin, o.Binary, a.Config, a.StateDir)
	if err := os.WriteFile(a.Plugstack, []byte(line), 0o644); err != nil {
		return nil, err
	}
	return a, nil
}

// NodeAgentPID returns the pid of the node agent running for node from
// this stack's state directory, 0 when none runs.
func (a *Agent) NodeAgentPID(node string) int {
	return agentPID(filepath.Join(a.StateDir, "agent@"+node+".pid"))
}

// agentPID reads a node agent's pid file: 0 unless it names a live
// jobsight-agent process.
func agentPID(pidFile string) int {
	b, err := os.ReadFile(pidFile)
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 || !running(pid) {
		return 0
	}
	if comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); err != nil || strings.TrimSpace(string(comm)) != "jobsight-agent" {
		return 0
	}
	return pid
}

// StopNodeAgents ends the node agents still running from this stack's
// state directory (one per node that ran a job; they exit by themselves
// once their node has no job and their spool is delivered): SIGTERM, then
// up to wait for them to write what they hold and exit.
func (a *Agent) StopNodeAgents(wait time.Duration) {
	if a == nil {
		return
	}
	pidFiles, _ := filepath.Glob(filepath.Join(a.StateDir, "agent@*.pid"))
	var pids []int
	for _, p := range pidFiles {
		if pid := agentPID(p); pid != 0 && syscall.Kill(pid, syscall.SIGTERM) == nil {
			pids = append(pids, pid)
		}
	}
	deadline := time.Now().Add(wait)
	for _, pid := range pids {
		for running(pid) && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// running reports whether pid is a live process (not a zombie nobody has
// reaped yet).
func running(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, rest, ok := strings.Cut(string(b), ") ")
	return ok && !strings.HasPrefix(rest, "Z")
}
