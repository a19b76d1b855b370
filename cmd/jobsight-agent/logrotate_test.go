package main

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jobsight/jobsight/agent/config"
	"github.com/jobsight/jobsight/agent/jobagent"
)

// TestMain lets the test binary, copied as "jobsight-agent", play the
// processes logrotate meets on a node (TestLogrotateSignalsTheNodeAgentOnly).
func TestMain(m *testing.M) {
	switch os.Getenv("JOBSIGHT_TEST_ROLE") {
	case "node":
		os.Exit(nodeAgentRole(os.Args[1], os.Args[2], os.Args[3]))
	case "run":
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// nodeAgentRole is a node agent's log and pid file as the agent makes them
// (logger; jobagent.WritePidFile, as the node agent's serve): it logs one
// line, says "ready", and logs another when SIGTERM comes.
func nodeAgentRole(stateDir, node, logPath string) int {
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	log, closeLog := logger(config.Config{LogFile: logPath, LogLevel: "info"}, "start", io.Discard)
	defer closeLog()
	pid := jobagent.PidFilePath(stateDir, node)
	release, err := jobagent.WritePidFile(pid)
	if err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		return 1
	}
	defer release()
	log.Info("before rotation")
	os.Stdout.WriteString("ready\n")
	<-term
	log.Info("after rotation")
	_ = os.Remove(pid)
	return 0
}

// postrotate is the shell script between postrotate and endscript of the
// shipped logrotate file (examples/logrotate.d/jobsight, which the
// jobsight-agent package installs as /etc/logrotate.d/jobsight), with the
// default state_dir replaced by stateDir.
func postrotate(t *testing.T, stateDir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "examples", "logrotate.d", "jobsight"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i, j := strings.Index(s, "\n    postrotate\n"), strings.Index(s, "\n    endscript")
	if i < 0 || j < i {
		t.Fatalf("no postrotate ... endscript in examples/logrotate.d/jobsight:\n%s", s)
	}
	return strings.ReplaceAll(s[i+len("\n    postrotate\n"):j], "/var/lib/jobsight", stateDir)
}

// TestLogrotateSignalsTheNodeAgentOnly runs the shipped postrotate script
// on a node where the node agent, a user's `jobsight-agent run -- CMD` and
// a pid file a killed agent left (naming the `run` process, as a reused
// pid would) are all there: the node agent opens its log again, and the
// `run` process, which passes SIGHUP on to CMD, gets nothing.
func TestLogrotateSignalsTheNodeAgentOnly(t *testing.T) {
	if _, err := exec.LookPath("pkill"); err != nil {
		t.Skip("no pkill (procps)")
	}
	dir := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "bin", "jobsight-agent") // the process name pkill -x looks for
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(self); err != nil || os.WriteFile(bin, data, 0o755) != nil {
		t.Fatalf("copying the test binary: %v", err)
	}
	stateDir := filepath.Join(dir, "state")
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "log", "agent.log")

	// The node agent.
	node := exec.Command(bin, stateDir, "n1", logPath)
	node.Env = append(os.Environ(), "JOBSIGHT_TEST_ROLE=node")
	node.Stderr = os.Stderr
	nodeOut, _ := node.StdoutPipe()
	if err := node.Start(); err != nil {
		t.Fatal(err)
	}
	defer node.Process.Kill()
	if line, _ := bufio.NewReader(nodeOut).ReadString('\n'); line != "ready\n" {
		t.Fatalf("node agent: %q", line)
	}

	// A user's `jobsight-agent run -- sh`: its shell notes every SIGHUP.
	hup, ready := filepath.Join(dir, "hup"), filepath.Join(dir, "ready")
	runner := exec.Command(bin, "run", "--output-dir", filepath.Join(dir, "out"), "--",
		"sh", "-c", `trap 'echo HUP >> "$HUPFILE"' HUP; : > "$READYFILE"; while :; do sleep 0.05; done`)
	runner.Env = append(os.Environ(), "JOBSIGHT_TEST_ROLE=run", "HUPFILE="+hup, "READYFILE="+ready,
		"HOME="+dir, "XDG_CACHE_HOME="+filepath.Join(dir, "cache"))
	if err := runner.Start(); err != nil {
		t.Fatal(err)
	}
	defer runner.Process.Kill()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(ready); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("jobsight-agent run: its command did not start in 20 s")
		}
	}
	// A pid file a killed agent left (unlocked), naming the run process.
	if err := os.WriteFile(filepath.Join(stateDir, "agent@gone.pid"), []byte(strconv.Itoa(runner.Process.Pid)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	// logrotate: rename, then postrotate.
	if err := os.Rename(logPath, logPath+".1"); err != nil {
		t.Fatal(err)
	}
	script := postrotate(t, stateDir)
	if out, err := exec.Command("sh", "-c", script).CombinedOutput(); err != nil {
		t.Fatalf("postrotate %q: %v\n%s", script, err, out)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(logPath); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the node agent did not open its log again 5 s after postrotate %q", script)
		}
	}
	time.Sleep(300 * time.Millisecond) // time for a stray SIGHUP to reach the run's command
	if b, err := os.ReadFile(hup); err == nil {
		t.Errorf("postrotate %q signalled `jobsight-agent run`, whose command got SIGHUP (%q)", script, b)
	}

	_ = node.Process.Signal(syscall.SIGTERM)
	if err := node.Wait(); err != nil {
		t.Errorf("node agent: %v", err)
	}
	old, _ := os.ReadFile(logPath + ".1")
	cur, _ := os.ReadFile(logPath)
	if !strings.Contains(string(old), "before rotation") || strings.Contains(string(old), "after rotation") {
		t.Errorf("rotated log: %q", old)
	}
	if !strings.Contains(string(cur), "after rotation") {
		t.Errorf("new log: %q", cur)
	}
	if _, err := os.Stat(jobagent.PidFilePath(stateDir, "n1")); err == nil {
		t.Error("the node agent's pid file is left after it exited")
	}
	_ = runner.Process.Signal(syscall.SIGTERM)
	_ = runner.Wait()
}
