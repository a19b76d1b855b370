package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/jobsight/jobsight/agent/config"
	"github.com/jobsight/jobsight/agent/jobagent"
)

// takeoverWait bounds how long takeover waits for one node's new agent
// once no agent answers (the old one's last delivery, jobagent.ExitBudget,
// and the new one's start); while the old agent still answers it is
// finishing a job that ended (its final documents wait up to
// slurm.final_state_wait for Slurm's final state), and takeover waits on,
// up to takeoverMax.
const (
	takeoverWait = time.Minute
	takeoverMax  = 10 * time.Minute
)

// takeover asks every node agent running from cfg's state directory to
// hand its jobs over to this executable (an upgrade: the package's
// post-install runs it), and waits until the new agent answers. One line
// per node; exit 1 when one did not take over.
func takeover(cfg config.Config, force bool, stdout, stderr io.Writer) int {
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(stderr, "jobsight-agent takeover:", err)
		return 1
	}
	exe = strings.TrimSuffix(exe, " (deleted)")
	nodes := jobagent.AgentNodes(cfg.StateDir)
	if len(nodes) == 0 {
		fmt.Fprintf(stdout, "no node agent runs from %s: the next job starts %s\n", cfg.StateDir, jobagent.Version)
		return 0
	}
	code := 0
	for _, node := range nodes {
		old, err := jobagent.AgentStatus(cfg.StateDir, node)
		if err != nil {
			fmt.Fprintf(stdout, "node %s: no agent answers (%v): the next job starts %s\n", node, err, jobagent.Version)
			continue
		}
		if old.Version == jobagent.Version && !force {
			fmt.Fprintf(stdout, "node %s: the agent (pid %d, %d jobs) runs %s already\n", node, old.PID, old.Jobs, old.Version)
			continue
		}
		began := time.Now()
		if err := jobagent.AskHandover(cfg.StateDir, node, exe); err != nil {
			fmt.Fprintf(stdout, "node %s: the agent %s (pid %d) refused the handover: %v\n", node, old.Version, old.PID, err)
			code = 1
			continue
		}
		var now jobagent.Status
		deadline := began.Add(takeoverWait)
		for ; ; time.Sleep(50 * time.Millisecond) {
			now, err = jobagent.AgentStatus(cfg.StateDir, node)
			if err == nil && now.Since != old.Since {
				break
			}
			if err != nil && old.Jobs == 0 && !alive(old.PID) {
				break // nothing to resume: the new agent exits at once
			}
			if err == nil && time.Since(began) < takeoverMax {
				deadline = time.Now().Add(takeoverWait) // the old agent is still finishing a job
			}
			if time.Now().After(deadline) {
				break
			}
		}
		switch {
		case err == nil && now.Since != old.Since && now.Version == jobagent.Version:
			fmt.Fprintf(stdout, "node %s: %s (pid %d) handed %d jobs over to %s (pid %d) in %.1f s; %d jobs watched now\n",
				node, old.Version, old.PID, old.Jobs, now.Version, now.PID, time.Since(began).Seconds(), now.Jobs)
		case err != nil && old.Jobs == 0:
			fmt.Fprintf(stdout, "node %s: %s (pid %d) had no job and exited; the next job starts %s\n", node, old.Version, old.PID, jobagent.Version)
		default:
			fmt.Fprintf(stdout, "node %s: no %s agent answered within %.0f s of the handover (now: %+v, %v); the next job's launch resumes the jobs from their checkpoints (agent log: %s)\n",
				node, jobagent.Version, time.Since(began).Seconds(), now, err, cfg.LogFile)
			code = 1
		}
	}
	return code
}

// alive reports whether pid is a running process.
func alive(pid int) bool {
	p, err := os.FindProcess(pid)
	return err == nil && p.Signal(syscall.Signal(0)) == nil
}
