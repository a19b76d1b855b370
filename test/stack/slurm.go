package stack

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// SlurmOptions configures StartSlurm. The zero value is usable.
type SlurmOptions struct {
	// ClusterName is Slurm's ClusterName; default "jobsight".
	ClusterName string
	// NodeName is the one node's name; default the short host name (which is
	// also what names the job cgroups: slurm_<node>).
	NodeName string
	// PlugstackConf is the path of a plugstack.conf (e.g. loading the
	// Jobsight SPANK plugin); empty means no SPANK plugins.
	PlugstackConf string
	// Env is extra environment (KEY=VALUE) for slurmctld and slurmd, and
	// thus for SPANK hooks.
	Env []string
	// FirstJobID is the first job id; 0 picks a random one in
	// [10000, 1000000) so that concurrent or earlier clusters on this host
	// do not share job ids (and job cgroups).
	FirstJobID int
	// GPUs is the count of fake GPUs (GresTypes=gpu, count only) on the
	// node; default 2, negative for none.
	GPUs int
	// DefMemPerCPU is Slurm's DefMemPerCPU in MiB; default 256.
	DefMemPerCPU int
	// ExtraNodes names more nodes, each its own slurmd on this host (slurmd
	// -N <name>, its own port, spool, pid and log), in partition "multi"
	// with the first node; jobs without -p stay on the first node
	// (partition "debug").
	ExtraNodes []string
	// Dense adds partition "dense" on the last node, whose cores up to 64
	// jobs share (OverSubscribe=FORCE:64): many small jobs on one node, as
	// a site packs them, on a test host with few cores.
	Dense bool
	// DeadNodes are declared in slurm.conf (in partition "multi", with the
	// same hardware) but no slurmd is ever started for them: they stay
	// NOT_RESPONDING and go DOWN after SlurmdTimeout.
	DeadNodes []string
	// SlurmdTimeout is Slurm's SlurmdTimeout (how long a silent node stays
	// up); default 60s, whole seconds.
	SlurmdTimeout time.Duration
	// GPUType, when set, types the fake GPUs (Gres=gpu:<type>:<n>, e.g.
	// "a100"); empty leaves them untyped (Gres=gpu:<n>).
	GPUType string
	// Release is the Slurm release to run ("26.05", "22.05", ...; see
	// FindSlurm); empty: SlurmRelease().
	Release string
	// ExtraConf is appended to slurm.conf (e.g. "MaxJobCount=20000\n").
	ExtraConf string
}

// Slurm is a running Slurm cluster (the release of Install) on 127.0.0.1: munged,
// slurmctld and slurmd with a generated configuration and all state under
// Dir. It uses cgroup v1 (proctrack/cgroup, task/cgroup with
// ConstrainRAMSpace, so a job exceeding its memory is OOM-killed).
//
// Starting one needs root: slurmd runs jobs as their users and creates
// cgroups, and munged must run as user munge.
type Slurm struct {
	Dir         string // state, spool, logs and configuration
	Conf        string // path of slurm.conf (SLURM_CONF)
	ClusterName string
	NodeName    string
	FirstJobID  int
	CtldLog     string // slurmctld's log file
	SlurmdLog   string // slurmd's log file

	// Install is the Slurm that runs: its programs and release.
	Install SlurmInstall

	Munge  *Munge
	Ctld   *Server
	Slurmd *Server
	// Extra are the slurmds of ExtraNodes, by name.
	Extra map[string]*Server

	opts SlurmOptions
}

// cgroupRoot is where the cgroup v1 hierarchies are mounted.
const cgroupRoot = "/sys/fs/cgroup"

// StartSlurm writes a configuration under dir and starts munged, slurmctld
// and slurmd, returning once the node is idle. It needs root. On error
// everything already started is stopped.
func StartSlurm(ctx context.Context, dir string, opts SlurmOptions) (*Slurm, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("starting Slurm needs root")
	}
	if opts.ClusterName == "" {
		opts.ClusterName = "jobsight"
	}
	if opts.NodeName == "" {
		h, err := os.Hostname()
		if err != nil {
			return nil, fmt.Errorf("reading host name: %w", err)
		}
		opts.NodeName, _, _ = strings.Cut(h, ".")
	}
	if opts.FirstJobID == 0 {
		opts.FirstJobID = 10000 + rand.IntN(990000) // #nosec G404 -- test cluster job ids: only need to differ between runs
	}
	if opts.GPUs == 0 {
		opts.GPUs = 2
	}
	if opts.DefMemPerCPU == 0 {
		opts.DefMemPerCPU = 256
	}
	if opts.SlurmdTimeout <= 0 {
		opts.SlurmdTimeout = 60 * time.Second
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("resolving %s: %w", dir, err)
	}
	s := &Slurm{Dir: dir, ClusterName: opts.ClusterName, NodeName: opts.NodeName, FirstJobID: opts.FirstJobID, opts: opts}
	if s.Install, err = FindSlurm(ctx, opts.Release); err != nil {
		return nil, err
	}
	if _, _, err := TestUserIDs(); err != nil {
		return nil, err
	}
	for _, sub := range []string{"etc", "state", "spool", "log"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return nil, fmt.Errorf("creating %s: %w", sub, err)
		}
	}
	s.removeEmptyJobCgroups()

	hw, err := nodeHardware(ctx, s.Install)
	if err != nil {
		return nil, err
	}
	if s.Munge, err = StartMunge(ctx, filepath.Join(dir, "log")); err != nil {
		return nil, fmt.Errorf("starting munge for Slurm: %w", err)
	}
	if err := s.writeConfig(hw); err != nil {
		s.Stop()
		return nil, err
	}
	if err := s.startCtld(ctx); err != nil {
		s.Stop()
		return nil, err
	}
	if err := s.StartSlurmd(ctx); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// hardware is the node's line from `slurmd -C`.
type hardware struct {
	cpus, sockets, coresPerSocket, threadsPerCore, realMemory int
}

func nodeHardware(ctx context.Context, in SlurmInstall) (hardware, error) {
	out, err := exec.CommandContext(ctx, in.Bin("slurmd"), "-C").Output()
	if err != nil {
		return hardware{}, fmt.Errorf("running slurmd -C to read the node's hardware: %w", err)
	}
	var hw hardware
	fields := map[string]*int{"CPUs": &hw.cpus, "SocketsPerBoard": &hw.sockets, "CoresPerSocket": &hw.coresPerSocket,
		"ThreadsPerCore": &hw.threadsPerCore, "RealMemory": &hw.realMemory}
	for _, f := range strings.Fields(string(out)) {
		k, v, _ := strings.Cut(f, "=")
		if p, ok := fields[k]; ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				return hardware{}, fmt.Errorf("slurmd -C: bad %s %q", k, v)
			}
			*p = n
		}
	}
	if hw.cpus == 0 || hw.realMemory == 0 {
		return hardware{}, fmt.Errorf("slurmd -C printed no CPUs/RealMemory: %q", out)
	}
	return hw, nil
}

func (s *Slurm) writeConfig(hw hardware) error {
	ports := make([]int, 1+len(s.declared()))
	for i := range ports {
		p, err := daemonPort()
		if err != nil {
			return err
		}
		ports[i] = p
	}
	etc := filepath.Join(s.Dir, "etc")
	s.Conf = filepath.Join(etc, "slurm.conf")
	s.CtldLog = filepath.Join(s.Dir, "log", "slurmctld.log")
	s.SlurmdLog = filepath.Join(s.Dir, "log", "slurmd-"+s.NodeName+".log")
	plugstack := s.opts.PlugstackConf
	if plugstack == "" {
		plugstack = filepath.Join(etc, "plugstack.conf")
		if err := os.WriteFile(plugstack, nil, 0o644); err != nil {
			return fmt.Errorf("writing empty plugstack.conf: %w", err)
		}
	}
	// Leave some memory for the OS so the node never drains as "low RealMemory".
	realMem := hw.realMemory * 9 / 10
	gres, gresConf := "", ""
	if s.opts.GPUs > 0 {
		gres = fmt.Sprintf(" Gres=gpu:%d", s.opts.GPUs)
		typ := ""
		if s.opts.GPUType != "" {
			gres = fmt.Sprintf(" Gres=gpu:%s:%d", s.opts.GPUType, s.opts.GPUs)
			typ = " Type=" + s.opts.GPUType
		}
		// Slurm ignores a bare Count for gpu: give it character devices
		// (copies of /dev/null, major 1 minor 3) standing in for GPUs,
		// a directory of them per node.
		for _, node := range s.declared() {
			devDir := filepath.Join(etc, "fakegpu", node)
			if err := os.MkdirAll(devDir, 0o755); err != nil {
				return fmt.Errorf("creating %s: %w", devDir, err)
			}
			for i := range s.opts.GPUs {
				p := filepath.Join(devDir, fmt.Sprintf("gpu%d", i))
				_ = os.Remove(p)
				if err := syscall.Mknod(p, syscall.S_IFCHR|0o666, 1<<8|3); err != nil {
					return fmt.Errorf("creating fake GPU device %s: %w", p, err)
				}
			}
			gresConf += fmt.Sprintf("NodeName=%s Name=gpu%s File=%s/gpu[0-%d]\n", node, typ, devDir, s.opts.GPUs-1)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, `# Generated by test/stack for a single-node test cluster.
ClusterName=%[1]s
SlurmctldHost=%[18]s(127.0.0.1)
SlurmctldPort=%[3]d
SlurmdPort=%[4]d
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=%[5]s
StateSaveLocation=%[6]s/state
SlurmdSpoolDir=%[6]s/spool/%%n
SlurmctldPidFile=%[6]s/state/slurmctld.pid
SlurmdPidFile=%[6]s/spool/%%n/slurmd.pid
SlurmctldLogFile=%[7]s
SlurmdLogFile=%[6]s/log/slurmd-%%n.log
SlurmctldDebug=info
SlurmdDebug=verbose
PlugStackConfig=%[9]s
FirstJobId=%[10]d
MailProg=/bin/true
ProctrackType=proctrack/cgroup
TaskPlugin=task/cgroup,task/affinity
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=%[11]d
GresTypes=gpu
JobAcctGatherType=jobacct_gather/cgroup
JobAcctGatherFrequency=30
AccountingStorageType=accounting_storage/none
ReturnToService=2
SchedulerType=sched/backfill
InactiveLimit=0
KillWait=5
MinJobAge=600
OverTimeLimit=0
SlurmdTimeout=%[19]d
`, s.ClusterName, s.NodeName, ports[0], ports[1], s.Munge.Socket, s.Dir, s.CtldLog, s.SlurmdLog, plugstack,
		s.FirstJobID, s.opts.DefMemPerCPU, hw.cpus, max(hw.sockets, 1), max(hw.coresPerSocket, 1), max(hw.threadsPerCore, 1), realMem, gres, shortHostname(), int(s.opts.SlurmdTimeout.Seconds()))
	for i, node := range s.declared() {
		fmt.Fprintf(&b, "NodeName=%s NodeAddr=127.0.0.1 NodeHostname=%s Port=%d CPUs=%d SocketsPerBoard=%d CoresPerSocket=%d ThreadsPerCore=%d RealMemory=%d%s State=UNKNOWN\n",
			node, shortHostname(), ports[1+i], hw.cpus, max(hw.sockets, 1), max(hw.coresPerSocket, 1), max(hw.threadsPerCore, 1), realMem, gres)
	}
	b.WriteString(s.opts.ExtraConf)
	fmt.Fprintf(&b, "PartitionName=debug Nodes=%s Default=YES MaxTime=INFINITE State=UP\n", s.NodeName)
	if len(s.opts.ExtraNodes)+len(s.opts.DeadNodes) > 0 {
		fmt.Fprintf(&b, "PartitionName=multi Nodes=%s MaxTime=INFINITE State=UP\n", strings.Join(s.declared(), ","))
	}
	if s.opts.Dense {
		nodes := s.nodes()
		fmt.Fprintf(&b, "PartitionName=dense Nodes=%s OverSubscribe=FORCE:64 MaxTime=INFINITE State=UP\n", nodes[len(nodes)-1])
	}
	files := map[string]string{
		"slurm.conf": b.String(),
		"cgroup.conf": "CgroupPlugin=cgroup/v1\nCgroupMountpoint=" + cgroupRoot +
			"\nConstrainCores=yes\nConstrainRAMSpace=yes\nAllowedRAMSpace=100\nConstrainSwapSpace=no\n",
		"gres.conf": gresConf,
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(etc, name), []byte(content), 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", name, err)
		}
	}
	return nil
}

// nodes are the cluster's node names, the first node first.
func (s *Slurm) nodes() []string { return append([]string{s.NodeName}, s.opts.ExtraNodes...) }

// declared are the nodes slurm.conf names: the running ones, then DeadNodes.
func (s *Slurm) declared() []string { return append(s.nodes(), s.opts.DeadNodes...) }

// Env returns the environment a Slurm command needs to talk to this
// cluster: SLURM_CONF, and a PATH with this release's programs first.
func (s *Slurm) Env() []string {
	return append(slices.Clone(s.opts.Env), "SLURM_CONF="+s.Conf, s.Install.PathEnv())
}

func (s *Slurm) startCtld(ctx context.Context) error {
	var err error
	s.Ctld, err = startProcess("slurmctld", filepath.Join(s.Dir, "log"), s.Env(), s.Install.Bin("slurmctld"), "-D", "-c", "-f", s.Conf)
	if err != nil {
		return err
	}
	return s.waitFor(ctx, s.Ctld, "slurmctld to answer", func() bool {
		_, err := s.run(ctx, "scontrol", "ping")
		return err == nil
	})
}

// StartSlurmd starts slurmd (after StopSlurmd, to reload SPANK plugins: the
// job_prolog/job_epilog hooks are only picked up when slurmd starts) and
// waits until the node is idle.
func (s *Slurm) StartSlurmd(ctx context.Context) error {
	for _, node := range s.nodes() {
		if err := os.MkdirAll(filepath.Join(s.Dir, "spool", node), 0o755); err != nil {
			return err
		}
		srv, err := s.startNode(ctx, node)
		if err != nil {
			return err
		}
		if node == s.NodeName {
			s.Slurmd = srv
			continue
		}
		if s.Extra == nil {
			s.Extra = map[string]*Server{}
		}
		s.Extra[node] = srv
	}
	return nil
}

// startNode starts the slurmd of one node and waits until it is idle.
func (s *Slurm) startNode(ctx context.Context, node string) (*Server, error) {
	srv, err := startProcess("slurmd-"+node, filepath.Join(s.Dir, "log"), s.Env(), s.Install.Bin("slurmd"), "-D", "-N", node, "-f", s.Conf)
	if err != nil {
		return nil, err
	}
	last := ""
	err = s.waitFor(ctx, srv, "node "+node+" to be idle", func() bool {
		out, err := s.run(ctx, "sinfo", "-h", "-n", node, "-o", "%T %E")
		last = strings.TrimSpace(out)
		if strings.HasPrefix(last, "inval") || strings.HasPrefix(last, "drain") {
			return true // fail at once, below
		}
		return err == nil && last == "idle none"
	})
	if err == nil && last != "idle none" {
		err = errors.New("node is not usable")
	}
	if err != nil {
		_ = srv.Stop()
		return nil, fmt.Errorf("%w; node %s state %q; slurmd log ends:\n%s", err, node, last,
			tail(filepath.Join(s.Dir, "log", "slurmd-"+node+".log"), 2000))
	}
	return srv, nil
}

// StopSlurmd stops every slurmd, leaving running job steps alone.
func (s *Slurm) StopSlurmd() error {
	var errs []error
	if s.Slurmd != nil {
		errs = append(errs, s.Slurmd.Stop())
	}
	for _, srv := range s.Extra {
		errs = append(errs, srv.Stop())
	}
	s.Slurmd, s.Extra = nil, nil
	return errors.Join(errs...)
}

// RestartSlurmd stops and starts slurmd, e.g. after changing plugstack.conf.
func (s *Slurm) RestartSlurmd(ctx context.Context) error {
	if err := s.StopSlurmd(); err != nil {
		return err
	}
	return s.StartSlurmd(ctx)
}

func (s *Slurm) waitFor(ctx context.Context, srv *Server, what string, ok func() bool) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for !ok() {
		if srv.Exited() {
			return fmt.Errorf("%s exited while waiting for %s; see %s and %s", srv.Name, what, srv.Log, s.Dir+"/log")
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w (logs in %s)", what, ctx.Err(), filepath.Join(s.Dir, "log"))
		case <-time.After(200 * time.Millisecond):
		}
	}
	return nil
}

// tail returns the last n bytes of a file, for error messages.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	return string(b[max(0, len(b)-n):])
}

// Command returns a command running a Slurm client (sbatch, scontrol, ...)
// of this cluster's release against this cluster.
func (s *Slurm) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, s.Install.Bin(name), args...)
	cmd.Env = append(os.Environ(), s.Env()...)
	return cmd
}

func (s *Slurm) run(ctx context.Context, name string, args ...string) (string, error) {
	cmd := s.Command(ctx, name, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}

// Sbatch submits a batch job with the given sbatch arguments (e.g. "--wrap",
// "sleep 5") and returns its job id.
func (s *Slurm) Sbatch(ctx context.Context, args ...string) (string, error) {
	out, err := s.run(ctx, "sbatch", append([]string{"--parsable"}, args...)...)
	if err != nil {
		return "", err
	}
	id, _, _ := strings.Cut(strings.TrimSpace(out), ";")
	if _, err := strconv.Atoi(id); err != nil {
		return "", fmt.Errorf("sbatch printed %q, not a job id", out)
	}
	return id, nil
}

// Scontrol runs scontrol with args and returns its standard output.
func (s *Slurm) Scontrol(ctx context.Context, args ...string) (string, error) {
	return s.run(ctx, "scontrol", args...)
}

// Squeue runs squeue with args and returns its standard output.
func (s *Slurm) Squeue(ctx context.Context, args ...string) (string, error) {
	return s.run(ctx, "squeue", args...)
}

// Scancel runs scancel with args (e.g. a job id).
func (s *Slurm) Scancel(ctx context.Context, args ...string) error {
	_, err := s.run(ctx, "scancel", args...)
	return err
}

// JobState returns a job's state as scontrol shows it (e.g. "RUNNING",
// "COMPLETED", "CANCELLED", "TIMEOUT", "FAILED", "OUT_OF_MEMORY").
func (s *Slurm) JobState(ctx context.Context, jobID string) (string, error) {
	out, err := s.Scontrol(ctx, "show", "job", "-o", jobID)
	if err != nil {
		return "", err
	}
	for _, f := range strings.Fields(out) {
		if v, ok := strings.CutPrefix(f, "JobState="); ok {
			return v, nil
		}
	}
	return "", fmt.Errorf("scontrol show job %s printed no JobState: %q", jobID, out)
}

// WaitJobState polls until the job is in one of states and returns that
// state. It fails if ctx ends first or if the job reaches a terminal state
// not in states.
func (s *Slurm) WaitJobState(ctx context.Context, jobID string, states ...string) (string, error) {
	terminal := []string{"COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL", "PREEMPTED", "BOOT_FAIL", "DEADLINE"}
	last := ""
	for {
		st, err := s.JobState(ctx, jobID)
		if err == nil {
			last = st
			if slices.Contains(states, st) {
				return st, nil
			}
			if slices.Contains(terminal, st) {
				return st, fmt.Errorf("job %s ended %s while waiting for %v", jobID, st, states)
			}
		}
		select {
		case <-ctx.Done():
			return last, fmt.Errorf("waiting for job %s to be %v (last %q): %w", jobID, states, last, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// Stop cancels all jobs, stops slurmd, slurmctld and munged by PID, kills
// leftover slurmstepd processes of this cluster and removes the empty job
// cgroups it left. Safe to call more than once.
func (s *Slurm) Stop() error {
	if s == nil {
		return nil
	}
	var errs []error
	if s.Ctld != nil && !s.Ctld.Exited() && s.Slurmd != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		if out, err := s.Squeue(ctx, "-h", "-o", "%i"); err == nil && strings.TrimSpace(out) != "" {
			_ = s.Scancel(ctx, strings.Fields(out)...)
			for ctx.Err() == nil {
				out, err := s.Squeue(ctx, "-h", "-t", "PD,R,CG,S", "-o", "%i")
				if err != nil || strings.TrimSpace(out) == "" {
					break
				}
				time.Sleep(250 * time.Millisecond)
			}
		}
		cancel()
	}
	errs = append(errs, s.StopSlurmd())
	if s.Ctld != nil {
		errs = append(errs, s.Ctld.Stop())
	}
	s.killStepds()
	if s.Munge != nil {
		errs = append(errs, s.Munge.Stop())
	}
	s.removeEmptyJobCgroups()
	return errors.Join(errs...)
}

// killStepds kills slurmstepd processes whose environment names this
// cluster's SLURM_CONF (they inherit it from slurmd).
func (s *Slurm) killStepds() {
	if s.Conf == "" {
		return
	}
	want := []byte("SLURM_CONF=" + s.Conf + "\x00")
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		comm, err := os.ReadFile(filepath.Join("/proc", p.Name(), "comm"))
		if err != nil || strings.TrimSpace(string(comm)) != "slurmstepd" {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", p.Name(), "environ"))
		if err == nil && bytes.Contains(env, want) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// CrashNodes simulates the nodes going down hard: every slurmd is
// stopped, this cluster's job steps and every process in its job cgroups
// are killed and the emptied job cgroups removed. No epilog runs. Start
// the nodes again with StartSlurmd.
func (s *Slurm) CrashNodes() error {
	err := s.StopSlurmd()
	s.killStepds()
	for _, node := range s.nodes() {
		jobs, _ := filepath.Glob(filepath.Join(cgroupRoot, "freezer", "slurm_"+node, "uid_*", "job_*"))
		for _, j := range jobs {
			killCgroupTree(j)
		}
	}
	time.Sleep(200 * time.Millisecond) // let the kernel reap them
	s.removeEmptyJobCgroups()
	return err
}

// killCgroupTree SIGKILLs every process in dir and its sub-cgroups.
func killCgroupTree(dir string) {
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "cgroup.procs" {
			return nil
		}
		b, _ := os.ReadFile(path) // #nosec G122 -- the test cluster's own cgroup tree, which only root and the test write
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil && pid > 1 {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		return nil
	})
}

// ResetController restarts slurmctld with its state cleared, as after a
// lost StateSaveLocation: it forgets every job and numbers new jobs from
// FirstJobID again, so ids are reused.
func (s *Slurm) ResetController(ctx context.Context) error {
	if err := s.Ctld.Stop(); err != nil {
		return err
	}
	// -c clears the jobs but not the id counter: remove the saved state.
	state := filepath.Join(s.Dir, "state")
	entries, _ := os.ReadDir(state)
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(state, e.Name())); err != nil {
			return err
		}
	}
	return s.startCtld(ctx)
}

// JobCgroupDirs returns the cgroup v1 directories of a job on this node, one
// per hierarchy that has it (memory, cpuacct, cpuset, freezer).
func (s *Slurm) JobCgroupDirs(jobID string) []string {
	var dirs []string
	for _, c := range []string{"memory", "cpuacct", "cpuset", "freezer"} {
		m, _ := filepath.Glob(filepath.Join(cgroupRoot, c, "slurm_"+s.NodeName, "uid_*", "job_"+jobID))
		dirs = append(dirs, m...)
	}
	return dirs
}

// removeEmptyJobCgroups removes empty job cgroups (and their empty step and
// task children) under slurm_<node> in each v1 hierarchy. Left behind by an
// earlier cluster, they would collide with a new job of the same id.
// Non-empty cgroups (live jobs) cannot be removed and are left alone.
func (s *Slurm) removeEmptyJobCgroups() {
	for _, node := range s.nodes() {
		for _, c := range []string{"memory", "cpuacct", "cpuset", "freezer", "devices"} {
			jobs, _ := filepath.Glob(filepath.Join(cgroupRoot, c, "slurm_"+node, "uid_*", "job_*"))
			for _, j := range jobs {
				removeCgroupTree(j)
			}
		}
	}
}

// removeCgroupTree rmdirs dir's subdirectories depth first, then dir; rmdir
// fails harmlessly on cgroups that still have processes.
func removeCgroupTree(dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.IsDir() {
			removeCgroupTree(filepath.Join(dir, e.Name()))
		}
	}
	_ = syscall.Rmdir(dir)
}

// shortHostname is this machine's host name up to the first dot: slurmctld
// runs only where SlurmctldHost names it, whatever the node is called.
func shortHostname() string {
	h, _ := os.Hostname()
	h, _, _ = strings.Cut(h, ".")
	return h
}

// rpcLine is one "<MESSAGE_TYPE> (<id>) count:<n>" line of sdiag.
var rpcLine = regexp.MustCompile(`(?m)^\s*(\w+)\s+\(\s*\d+\)\s+count:(\d+)`)

// RPCCounts reads slurmctld's RPC counters by message type from sdiag
// (for tests and benchmarks counting the load a product puts on the
// controller; sdiag prints text, though none of this section is a user's).
func (s *Slurm) RPCCounts(ctx context.Context) (map[string]int, error) {
	out, err := s.Command(ctx, "sdiag").Output()
	if err != nil {
		return nil, fmt.Errorf("sdiag: %w", err)
	}
	text := string(out)
	if i := strings.Index(text, "Remote Procedure Call statistics by message type"); i >= 0 {
		text = text[i:]
	}
	if i := strings.Index(text, "Remote Procedure Call statistics by user"); i >= 0 {
		text = text[:i]
	}
	m := map[string]int{}
	for _, sub := range rpcLine.FindAllStringSubmatch(text, -1) {
		m[sub[1]], _ = strconv.Atoi(sub[2])
	}
	return m, nil
}
