// Command jobsight-agent measures what a Slurm job (or any command) really
// uses on one node and writes it to Elasticsearch and Prometheus.
//
//	jobsight-agent start --job-id N [--uid U]   watch a Slurm job (SPANK job prolog)
//	jobsight-agent stop  --job-id N             end it (SPANK job epilog)
//	jobsight-agent run [flags] -- CMD [ARGS]    monitor any command, print a summary
//	jobsight-agent setup                        create the Elasticsearch indices
//	jobsight-agent resend-rejected              send the spool's set-aside items again
//	jobsight-agent check-config                 validate the config file
//	jobsight-agent check-stores                 make each store call the agent makes; name what is missing
//	jobsight-agent version
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"syscall"
	"time"

	"github.com/jobsight/jobsight/agent/collector"
	"github.com/jobsight/jobsight/agent/config"
	"github.com/jobsight/jobsight/agent/deliver"
	"github.com/jobsight/jobsight/agent/jobagent"
	"github.com/jobsight/jobsight/agent/monitor"
	shared "github.com/jobsight/jobsight/internal/config"
	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/internal/slurm"
	"github.com/jobsight/jobsight/internal/store"
)

const defaultConfig = "/etc/jobsight/agent.yaml"

// cpuAtMain is the CPU the process used before main: exec and runtime
// start-up.
var cpuAtMain time.Duration

func main() {
	cpuAtMain = jobagent.ReadSelfUsage().CPU
	// The agent's work is one loop; with one P the scheduler does not wake
	// a second thread to look for work at every tick, which measurably
	// lowers the cost of each wake-up (docs/performance.md).
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(1)
	}
	code := run(os.Args[1:], os.Stdout, os.Stderr)
	if successor.exec != "" {
		execSuccessor()
	}
	os.Exit(code)
}

// successor is set when this process, the node agent, handed its jobs over
// (takeover): it execs the new executable with `resume`, keeping its pid,
// environment (the slurmd node name) and log.
var successor struct{ exec, config string }

func execSuccessor() {
	argv := []string{successor.exec, "resume"}
	if successor.config != "" {
		argv = append(argv, "--config", successor.config)
	}
	err := syscall.Exec(successor.exec, argv, os.Environ()) // #nosec G204 -- the path this agent runs from, which the package replaced (checked by the handover)
	// Only on failure: the checkpoints stay, and the next job's launch
	// on the node resumes every job from them.
	fmt.Fprintf(os.Stderr, "jobsight-agent: handover: executing %s: %v; the next launch on this node resumes the jobs\n", successor.exec, err)
	os.Exit(1)
}

func usage(w io.Writer) {
	fmt.Fprint(w, `usage: jobsight-agent COMMAND [flags]

  run [--config F] [--interval D] [--output-dir D] -- CMD [ARGS]
                    run CMD, measure what it and its children use, print a summary
  start --job-id N [--uid U] [--config F]   watch a Slurm job on this node (SPANK job prolog)
  stop  --job-id N [--config F]             finish watching it (SPANK job epilog)
  setup [--config F]                        create the Elasticsearch indices (idempotent)
  resend-rejected [--config F]              move the items the stores refused (spool.dir/rejected/)
                                            back into the spool and send them; run it once their
                                            cause is fixed
  check-config [--config F]                 validate a config file
  check-stores [--config F]                 connect to the stores as the agent does and make each of its
                                            calls: one line per call, ok or what is missing (exit 1)
  takeover [--config F] [--force]           an upgrade (the package's post-install runs it): every running
                                            node agent hands its jobs over to this executable, which
                                            resumes them; --force also when it runs this version already
  resume [--config F]                       become the node agent if none runs and resume every job an
                                            earlier agent left a checkpoint of
  spank-release PLUGIN.so                   the Slurm release a SPANK plugin was built for (its plugin_version)
  version
`)
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	cmd, args := args[0], args[1:]
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "", "config file (default "+defaultConfig+" for start/stop/setup/resend-rejected, none for run)")
	jobID := fs.Uint64("job-id", 0, "Slurm job id (start, stop)")
	uid := fs.Int("uid", -1, "the job's user id as slurmd gave it (start; -1 when unknown)")
	interval := fs.Duration("interval", 0, "sampling interval (run; default 1s)")
	outDir := fs.String("output-dir", "", "where the job document file goes when no Elasticsearch is configured (run)")
	force := fs.Bool("force", false, "takeover: also when the running agent is this version")
	switch cmd {
	case "version", "--version", "-v":
		fmt.Fprintln(stdout, "jobsight-agent", jobagent.Version)
		return 0
	case "help", "--help", "-h":
		usage(stdout)
		return 0
	case "spank-release":
		if len(args) != 1 {
			fmt.Fprintln(stderr, "usage: jobsight-agent spank-release PLUGIN.so")
			return 2
		}
		return spankRelease(args[0], stdout, stderr)
	case "run", "start", "stop", "setup", "check-config", "check-stores", "resend-rejected", "takeover", "resume":
	default:
		fmt.Fprintf(stderr, "jobsight-agent: unknown command %q\n", cmd)
		usage(stderr)
		return 2
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	path := *cfgPath
	if path == "" && cmd != "run" {
		path = defaultConfig
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			path = ""
		}
	}
	cfg, err := config.Load(path)
	if err != nil {
		fmt.Fprintln(stderr, "jobsight-agent:", err)
		return 2
	}
	if cmd == "check-config" {
		fmt.Fprintf(stdout, "config %s: ok\n", orDefaults(path))
		return 0
	}
	if cmd == "run" {
		cfg = runDefaults(cfg, *cfgPath == "", *interval, *outDir)
		if err := cfg.Validate(); err != nil {
			fmt.Fprintln(stderr, "jobsight-agent:", err)
			return 2
		}
	}
	if cfg.Node == "" {
		// slurmd's own name for this node (NodeName need not be the host
		// name): the SPANK plugin passes it from the prolog environment.
		cfg.Node = os.Getenv("SLURMD_NODENAME")
	}
	if cfg.Node == "" {
		host, _ := os.Hostname()
		cfg.Node = shortHost(host)
	}
	if cmd == "check-stores" {
		return checkStores(cfg, stdout)
	}
	if cmd == "takeover" {
		return takeover(cfg, *force, stdout, stderr)
	}
	log, closeLog := logger(cfg, cmd, stderr)
	defer closeLog()

	var req jobagent.Request
	if cmd == "start" || cmd == "stop" {
		req = jobagent.Request{Op: cmd, JobID: *jobID}
		if cmd == "start" {
			if *uid > 0 && *uid <= math.MaxUint32 {
				req.UID = uint32(*uid)
			}
			req.GPUs, req.GPUsGiven = os.LookupEnv("SLURM_JOB_GPUS")
			req.SLUID = startSLUID(log)
		}
		req.Nodes = requestNodes(log, *jobID)
		if err := req.Validate(); err != nil {
			fmt.Fprintf(stderr, "jobsight-agent %s: %v (--job-id is required)\n", cmd, err)
			return 2
		}
		// Most launches find the node's agent running: hand the job over
		// before anything costly (outputs, GPU libraries, scontrol).
		if jobagent.Handover(cfg.StateDir, cfg.Node, req) {
			log.Debug("handed over to the node agent", "op", cmd, "job_id", *jobID)
			return 0
		}
	}

	catchProfileSignal()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if cmd == "run" {
		// The command gets the signals; the agent outlives it to report.
		stop()
		ctx = context.Background()
	}

	if (cmd == "start" || cmd == "stop" || cmd == "resume") && cfg.Cluster == "" {
		if cfg.Cluster, err = clusterName(ctx, cfg); err != nil {
			log.Error("no cluster name", "err", err)
			return 1
		}
		if cfg.Cluster == "" {
			log.Error("no cluster name: set cluster in the config, or make SLURM_CLUSTER_NAME or scontrol available")
			return 1
		}
	}

	if cfg.CPUProfileDir != "" {
		stopProfile, err := startCPUProfile(cfg, cmd, *jobID)
		if err != nil {
			log.Warn("cpu_profile_dir: not profiling", "err", err)
		} else {
			defer stopProfile()
		}
	}

	health := monitor.NewHealth()
	out, err := deliver.New(ctx, cfg, health, log)
	if err != nil {
		log.Error("setting up outputs", "err", err)
		return 1
	}
	defer out.Close()
	if cmd == "setup" {
		templates := "index templates put"
		if err := out.PutTemplates(ctx); err != nil {
			if !errors.Is(err, store.ErrAccessDenied) {
				log.Error("putting index templates", "err", err)
				return 1
			}
			// An agent's own credentials: the agents make each monthly
			// index with its mapping anyway (docs/indices.md).
			log.Warn("index templates not put: these credentials lack the manage_index_templates cluster privilege (run setup once with an administrator's)", "err", err)
			templates = "index templates not put"
		}
		if err := out.EnsureIndices(ctx); err != nil {
			log.Error("creating indices", "err", err)
			return 1
		}
		fmt.Fprintf(stdout, "indices ready (monthly): %s, %s, %s; %s\n", jobmodel.IndexPattern(cfg.Elasticsearch.JobIndex),
			jobmodel.IndexPattern(cfg.Elasticsearch.NodeIndex), jobmodel.IndexPattern(cfg.Elasticsearch.ResultIndex), templates)
		return 0
	}
	if cmd == "resend-rejected" {
		return resendRejected(ctx, out, cfg, stdout, log)
	}

	agent := &jobagent.Agent{
		Config:  cfg,
		Outputs: out,
		Slurm:   &jobagent.SlurmLookup{Options: slurmOpts(cfg), StoreJobName: cfg.StoreJobName, Log: log, Phases: health.Phases},
		Sources: jobagent.CgroupSources(collector.Config{CgroupRoot: cfg.Cgroup.Root, ProcRoot: cfg.ProcRoot, Version: mustVersion(cfg.Cgroup.Version),
			MaxOpenProcesses: maxOpenProcesses(cfg.ProcMaxOpenPerJob)}, cfg.Cgroup.Wait),
		Health:    health,
		Log:       log,
		CPUAtMain: cpuAtMain,
	}
	if agent.Emissions, err = emissionsEstimator(cfg); err != nil {
		log.Error("emissions", "err", err)
		return 1
	}
	if cmd == "start" || cmd == "stop" || cmd == "resume" || cmd == "run" {
		if agent.Energy = openEnergy(cfg, log); agent.Energy != nil {
			defer agent.Energy.Close()
		}
		agent.GPU = jobagent.GPUs{Threshold: cfg.GPU.ActiveThreshold, CgroupRoot: cfg.Cgroup.Root, Version: cgroupVersion(cfg)}
		agent.GPU.Backend, agent.GPU.Unavailable = openGPU(ctx, cfg.GPU, log)
		if agent.GPU.Backend != nil {
			defer agent.GPU.Backend.Close()
		}
	}
	switch cmd {
	case "start", "stop", "resume":
		if cmd == "resume" {
			var joined bool
			if joined, err = agent.Resume(ctx); joined {
				log.Info("resume: a node agent runs already; it resumed the jobs left")
			}
		} else {
			_, err = agent.Launch(ctx, req)
		}
		if agent.Successor != "" {
			successor.exec, successor.config = agent.Successor, *cfgPath
		}
		if err != nil {
			log.Error(cmd, "err", err)
			return 1
		}
		return 0
	default: // run
		cmdArgs := fs.Args()
		res, err := agent.Run(ctx, cmdArgs)
		if err != nil {
			fmt.Fprintln(stderr, "jobsight-agent:", err)
			return 127
		}
		jobagent.Summary(stderr, cmdArgs, res, out.Where(res.Job.DocID))
		return res.ExitCode
	}
}

// resendRejected moves the spool's rejected/ items back and sends them.
// It exits 0 when nothing was set aside again; 1 when some were (their
// store still names them at fault: see the log) or the send failed.
func resendRejected(ctx context.Context, out *deliver.Outputs, cfg config.Config, stdout io.Writer, log *slog.Logger) int {
	r, err := out.ResendRejected(ctx)
	fmt.Fprintf(stdout, "spool %s: %d set-aside items moved back, %d delivered, %d set aside again, %d waiting in the spool\n",
		cfg.Spool.Dir, r.Restored, r.Delivered, r.SetAside, r.Waiting)
	if r.Busy {
		fmt.Fprintln(stdout, "another agent is sending the spool now; it sends them")
	}
	if r.Waiting > 0 && !r.Busy {
		fmt.Fprintln(stdout, "waiting items are sent by the node's agents (or a later resend-rejected) once the store takes them; jobsight_agent_spool_waiting_items says why they wait")
	}
	if err != nil {
		log.Error("resend-rejected", "err", err)
		return 1
	}
	if r.SetAside > 0 {
		return 1
	}
	return 0
}

// runDefaults adapts the config for a standalone run: 1 s sampling, logs on
// stderr, state and spool in a per-user directory when no file was given.
func runDefaults(cfg config.Config, noFile bool, interval time.Duration, outDir string) config.Config {
	if noFile {
		cfg.Interval = time.Second
		cfg.LogFile = "-"
		cfg.LogLevel = "warn"
		base := filepath.Join(os.TempDir(), fmt.Sprintf("jobsight-%d", os.Getuid()))
		if dir, err := os.UserCacheDir(); err == nil {
			base = filepath.Join(dir, "jobsight")
		}
		cfg.StateDir = filepath.Join(base, "state")
		cfg.Spool.Dir = filepath.Join(base, "spool")
	}
	if interval > 0 {
		cfg.Interval = interval
	}
	if cfg.FlushInterval < cfg.Interval {
		cfg.FlushInterval = cfg.Interval
	}
	if cfg.Prometheus.PushInterval < cfg.Interval {
		cfg.Prometheus.PushInterval = cfg.Interval
	}
	if outDir != "" {
		cfg.OutputDir = outDir
	}
	return cfg
}

func orDefaults(path string) string {
	if path == "" {
		return "(built-in defaults)"
	}
	return path
}

// cgroupVersion resolves the configured cgroup layout (auto: detected).
func cgroupVersion(cfg config.Config) collector.Version {
	v := mustVersion(cfg.Cgroup.Version)
	if v == collector.VersionAuto {
		if d, err := collector.Detect(cfg.Cgroup.Root); err == nil {
			return d
		}
	}
	return v
}

func mustVersion(s string) collector.Version {
	v, err := collector.ParseVersion(s)
	if err != nil {
		return collector.VersionAuto
	}
	return v
}

func shortHost(h string) string {
	for i := range h {
		if h[i] == '.' {
			return h[:i]
		}
	}
	return h
}

// clusterName finds the cluster's name: the prolog environment's
// SLURM_CLUSTER_NAME, else Slurm's configured ClusterName.
// clusterName is the cluster of a job when the config names none: the
// prolog's SLURM_CLUSTER_NAME, else scontrol's ClusterName ("" when
// neither is there). It goes into document ids and file names (the CPU
// profile's), so a name the config would refuse ("../x") is an error
// naming it, as in the config.
func clusterName(ctx context.Context, cfg config.Config) (string, error) {
	c, from := os.Getenv("SLURM_CLUSTER_NAME"), "SLURM_CLUSTER_NAME"
	if c == "" {
		c, _ = jobagent.ClusterName(ctx, slurmOpts(cfg))
		from = "scontrol's ClusterName"
	}
	if c != "" && !shared.ValidClusterName(c) {
		return "", fmt.Errorf("%s %q: use 1-64 letters, digits, '.', '_' or '-', or set cluster in the config", from, c)
	}
	return c, nil
}

func slurmOpts(cfg config.Config) slurm.Options {
	return slurm.Options{Scontrol: cfg.Slurm.Scontrol, Squeue: cfg.Slurm.Squeue, Timeout: cfg.Slurm.Timeout}
}

// startCPUProfile profiles this agent process at 5 kHz (its whole life is
// tens of milliseconds of CPU) into cpu_profile_dir.
func startCPUProfile(cfg config.Config, cmd string, jobID uint64) (func(), error) {
	// Like every file the agent writes: 0600, in a directory made 0700
	// when the agent creates it (an existing one keeps its mode).
	if err := os.MkdirAll(cfg.CPUProfileDir, 0o700); err != nil {
		return nil, err
	}
	// #nosec G703 -- the directory is the admin's cpu_profile_dir; the name joins a
	// checked cluster name (config or clusterName), a number and a fixed command.
	f, err := os.OpenFile(filepath.Join(cfg.CPUProfileDir, fmt.Sprintf("%s_%d_%s.pprof", cfg.Cluster, jobID, cmd)),
		os.O_CREATE|os.O_WRONLY|os.O_TRUNC|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, err
	}
	if err := f.Chmod(0o600); err != nil { // a profile an older agent left 0644
		f.Close()
		return nil, err
	}
	runtime.SetCPUProfileRate(5000)
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// logger logs to the configured file (detached agents) or stderr.
func logger(cfg config.Config, cmd string, stderr io.Writer) (*slog.Logger, func()) {
	level := map[string]slog.Level{"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError}[cfg.LogLevel]
	var w io.Writer = stderr
	closeFn := func() {}
	if cfg.LogFile != "" && cfg.LogFile != "-" && cmd != "check-config" {
		// The log names jobs and users: 0600, in a directory made 0700 when
		// the agent creates it, and never through a symbolic link.
		// SIGHUP reopens it (log rotation: examples/logrotate.d).
		if err := os.MkdirAll(filepath.Dir(cfg.LogFile), 0o700); err == nil {
			if f, err := openLogFile(cfg.LogFile); err == nil {
				stop := f.reopenOnHangup()
				w, closeFn = f, func() { stop(); f.Close() }
			}
		}
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level})).With("component", "agent", "cmd", cmd), closeFn
}

// maxOpenProcesses turns proc_max_open_per_job (0: keep none open) into
// the collector's MaxOpenProcesses (0 there means its default).
func maxOpenProcesses(n int) int {
	if n == 0 {
		return -1
	}
	return n
}

// requestNodes is the job's node list as slurmd named it to the prolog or
// epilog: the SPANK plugin passes SLURM_JOB_NODELIST to a spawned agent
// (without SLURM_JOB_ID). A list of another job — a command typed in an
// salloc shell, whose SLURM_JOB_ID is that shell's job — is left out, and
// so is one too long or not a host list (with a warning): the agent then
// takes the job's nodes from Slurm's answer.
func requestNodes(log *slog.Logger, jobID uint64) string {
	nodes := os.Getenv("SLURM_JOB_NODELIST")
	if own := os.Getenv("SLURM_JOB_ID"); nodes == "" || own != "" && own != strconv.FormatUint(jobID, 10) {
		return ""
	}
	req := jobagent.Request{Op: "start", JobID: jobID, Nodes: nodes}
	if err := req.Validate(); err != nil {
		log.Warn("leaving SLURM_JOB_NODELIST out; Slurm's answer names the job's nodes", "err", err)
		return ""
	}
	return nodes
}

// startSLUID is the job's SLURM_JOB_SLUID (Slurm 26.05 on), which the
// SPANK plugin passes a spawned agent from the prolog's environment: its
// cgroup v2 directory is named by it. One that is not a SLUID is left out
// with a warning (the job is still watched; its cgroup is then looked for
// by its job id and squeue's SLUID).
func startSLUID(log *slog.Logger) string {
	v := os.Getenv("SLURM_JOB_SLUID")
	if v != "" && !collector.ValidSLUID(v) {
		log.Warn("SLURM_JOB_SLUID is not a SLUID; leaving it out", "value", fmt.Sprintf("%.40q", v))
		return ""
	}
	return v
}

// catchProfileSignal catches SIGUSR1 and drops it: it asks the node agent
// for a profile (which listens once it runs), and every other agent
// process, and the node agent before then, must not die of it. Caught,
// not ignored: an ignored signal stays ignored across exec, and `run`
// starts the job's own command, which may use SIGUSR1.
func catchProfileSignal() {
	signal.Notify(make(chan os.Signal, 1), syscall.SIGUSR1)
}
