package jobagent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jobsight/jobsight/agent/collector"
	"github.com/jobsight/jobsight/agent/config"
	"github.com/jobsight/jobsight/agent/monitor"
	"github.com/jobsight/jobsight/internal/jobmodel"
)

// The node agent under a low RLIMIT_NOFILE: a subprocess (this test
// binary, re-run as TestNodeAgentHelperProcess) becomes the real node
// agent of a job of 300 real processes, and its descriptors run out.
const (
	helperEnv     = "JOBSIGHT_TEST_NODE_AGENT_HELPER" // the helper's state dir
	fdLimit       = 256                               // the helper's RLIMIT_NOFILE
	fdJobProcs    = 300                               // processes of the job
	fdMaxOpen     = 64                                // proc_max_open_per_job
	fdJobID       = 77
	fdReportName  = "report.json"
	fdCgroupSub   = "cgroup"
	fdHelperDelay = 100 * time.Millisecond
)

// helperReport is what the helper node agent says about itself: its
// health series (summed over labels), and, once its Launch returned, the
// job's final node document.
type helperReport struct {
	Health map[string]float64 `json:"health"`
	Done   bool               `json:"done"`
	Err    string             `json:"err,omitempty"`
	Final  *jobmodel.Node     `json:"final,omitempty"`
}

// TestNodeAgentHelperProcess is the subprocess's body: it runs only when
// TestNodeAgentSurvivesRunningOutOfFiles starts it.
func TestNodeAgentHelperProcess(t *testing.T) {
	dir := os.Getenv(helperEnv)
	if dir == "" {
		t.Skip("runs only as the subprocess of TestNodeAgentSurvivesRunningOutOfFiles")
	}
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: fdLimit, Max: fdLimit}); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Cluster, cfg.Node, cfg.StateDir = "c", "n1", filepath.Join(dir, "state")
	cfg.Interval, cfg.FlushInterval, cfg.Prometheus.PushInterval = 200*time.Millisecond, time.Second, time.Second
	cfg.Slurm.FinalStateWait = 200 * time.Millisecond
	cfg.ProcMaxOpenPerJob = fdMaxOpen
	out := &memOutputs{}
	a := &Agent{Config: cfg, Outputs: out, Slurm: &fakeSlurm{state: jobmodel.StateRunning},
		Sources: CgroupSources(collector.Config{CgroupRoot: filepath.Join(dir, fdCgroupSub), ProcRoot: "/proc",
			Version: collector.VersionV2, MaxOpenProcesses: fdMaxOpen}, 5*time.Second),
		Health: monitor.NewHealth(), Log: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		EndPoll: 50 * time.Millisecond}
	report := func(r helperReport) {
		r.Health = map[string]float64{}
		fams, _ := a.Health.Registry.Gather()
		for _, f := range fams {
			for _, m := range f.GetMetric() {
				r.Health[f.GetName()] += m.GetCounter().GetValue() + m.GetGauge().GetValue()
			}
		}
		b, _ := json.Marshal(r)
		// Fails while the descriptors are all taken; the next tick retries.
		if os.WriteFile(filepath.Join(dir, fdReportName+".tmp"), b, 0o600) == nil {
			_ = os.Rename(filepath.Join(dir, fdReportName+".tmp"), filepath.Join(dir, fdReportName))
		}
	}
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(fdHelperDelay):
				report(helperReport{})
			}
		}
	}()
	_, err := a.Launch(context.Background(), Request{Op: "start", JobID: fdJobID})
	close(stop)
	r := helperReport{Done: true}
	if err != nil {
		r.Err = err.Error()
	}
	out.mu.Lock()
	for i := range out.nodes {
		if out.nodes[i].Final {
			r.Final = &out.nodes[i]
		}
	}
	out.mu.Unlock()
	for try := 0; try < 50; try++ {
		report(r)
		if b, err := os.ReadFile(filepath.Join(dir, fdReportName)); err == nil && bytes.Contains(b, []byte(`"done":true`)) {
			return
		}
		time.Sleep(fdHelperDelay)
	}
}

// A user's job of many processes cannot make the node agent deaf: with
// RLIMIT_NOFILE at 256 and a job of 300 processes, the agent keeps the
// files of only proc_max_open_per_job (64) of them open and reads the
// rest by opening and closing them, so the job's threads are all counted;
// when its descriptors do run out (a flood of connections to its socket),
// accept fails with EMFILE, the agent counts it and retries, and the
// job's stop sent afterwards is still taken and finalizes the job. The
// health series count the accept errors and the capped processes.
//
// Without the accept retry the loop ends at the first EMFILE and the
// stop is never answered (checked: fails at the Handover). Without the
// cap the agent tries to hold the job's 600 files, runs out for good, and
// reads no process beyond a cap (checked: fails waiting for the 236
// unheld processes).
func TestNodeAgentSurvivesRunningOutOfFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 300 processes")
	}
	t.Parallel()
	dir := t.TempDir()

	// The job: 300 sleeping processes, listed in a cgroup v2 fixture
	// (this machine has no Slurm cgroups to put them in); their
	// /proc/<pid>/stat and io are the real ones.
	var pids []string
	for i := 0; i < fdJobProcs; i++ {
		cmd := exec.Command("sleep", "600")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		pids = append(pids, strconv.Itoa(cmd.Process.Pid))
	}
	job := filepath.Join(dir, fdCgroupSub, "system.slice", "slurmstepd.scope", fmt.Sprintf("job_%d", fdJobID))
	task := filepath.Join(job, "step_0", "user", "task_0")
	if err := os.MkdirAll(task, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{
		"cpu.stat":              "usage_usec 7000000\nuser_usec 6000000\nsystem_usec 1000000\n",
		"memory.current":        "104857600\n",
		"memory.stat":           "anon 52428800\nfile 52428800\nshmem 0\nfile_mapped 0\ninactive_file 0\n",
		"memory.max":            "max\n",
		"cpuset.cpus.effective": "0-1\n",
	} {
		if err := os.WriteFile(filepath.Join(job, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(task, "cgroup.procs"), []byte(strings.Join(pids, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	var stderr bytes.Buffer
	helper := exec.Command(os.Args[0], "-test.run=^TestNodeAgentHelperProcess$", "-test.v")
	helper.Env = append(os.Environ(), helperEnv+"="+dir)
	helper.Stdout, helper.Stderr = &stderr, &stderr
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var helperErr error
	go func() { helperErr = helper.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = helper.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("helper output:\n%s", stderr.String())
		}
	})
	read := func() helperReport {
		var r helperReport
		b, err := os.ReadFile(filepath.Join(dir, fdReportName))
		if err == nil {
			_ = json.Unmarshal(b, &r)
		}
		return r
	}
	waitFor(t, "the helper agent to sample the job's 300 processes", func() bool {
		r := read()
		return r.Health["jobsight_agent_jobs_watched"] == 1 && r.Health["jobsight_agent_samples_total"] >= 3 &&
			r.Health["jobsight_agent_processes_unheld"] == fdJobProcs-fdMaxOpen
	})

	// Use up the agent's descriptors: connections that send nothing hold
	// one each (for up to the handler's 10 s deadline).
	sock := nodeFiles(filepath.Join(dir, "state"), "n1").sock
	var flood []net.Conn
	for i := 0; i < 200; i++ {
		c, err := net.DialTimeout("unix", sock, time.Second)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		flood = append(flood, c)
	}
	time.Sleep(time.Second) // the agent runs into EMFILE and backs off
	for _, c := range flood {
		c.Close()
	}

	// The job's stop, after the accept errors, is taken and ends the job.
	if !Handover(filepath.Join(dir, "state"), "n1", Request{Op: "stop", JobID: fdJobID}) {
		t.Fatal("the node agent did not take the job's stop after running out of file descriptors")
	}
	select {
	case <-exited:
		if helperErr != nil {
			t.Fatalf("helper: %v", helperErr)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the node agent did not exit after its job's stop")
	}
	r := read()
	if !r.Done || r.Err != "" {
		t.Fatalf("helper report %+v", r)
	}
	if r.Health["jobsight_agent_accept_errors_total"] < 1 {
		t.Errorf("jobsight_agent_accept_errors_total %v, want the EMFILE accepts counted", r.Health["jobsight_agent_accept_errors_total"])
	}
	if got := r.Health["jobsight_agent_processes_capped_total"]; got != fdJobProcs-fdMaxOpen {
		t.Errorf("jobsight_agent_processes_capped_total %v, want %d", got, fdJobProcs-fdMaxOpen)
	}
	if got := r.Health["jobsight_agent_processes_unheld"]; got != 0 {
		t.Errorf("jobsight_agent_processes_unheld %v after the job ended, want 0", got)
	}
	// Every process is measured, the capped ones included: each sleep
	// has one thread.
	n := r.Final
	if n == nil || n.Threads == nil || n.Threads.Peak == nil || *n.Threads.Peak != fdJobProcs ||
		n.Processes == nil || n.Processes.Peak == nil || *n.Processes.Peak != fdJobProcs {
		t.Fatalf("final node document: threads %+v processes %+v, want %d of each", threadsOf(n), processesOf(n), fdJobProcs)
	}
}

func threadsOf(n *jobmodel.Node) any {
	if n == nil {
		return nil
	}
	return n.Threads
}

func processesOf(n *jobmodel.Node) any {
	if n == nil {
		return nil
	}
	return n.Processes
}
