// Command jobsight-stack starts, on this machine, everything Jobsight runs
// against — a single-node Slurm cluster with the Jobsight SPANK plugin,
// Prometheus with the remote-write receiver, an Elasticsearch-API server, the
// cluster-state collector and, where a Grafana server is installed, Grafana
// with the Jobsight plugin, its dashboards and alert rules provisioned —
// submits sample jobs (GPU jobs on the simulated GPUs, a hogging job),
// prints the dashboard URLs and a login and stays in the foreground until
// Ctrl-C or SIGTERM, then stops everything.
//
// With --history 30d it also seeds a month of generated history (internal/demo:
// finished jobs of made-up users on the made-up clusters demo-hpc and
// demo-ai, their documents with source "generated", their series, and a
// few running jobs kept alive while the stack runs), so that every
// dashboard and job page has something to show.
//
// Grafana's server is not part of Jobsight and is never built by it: the
// stack uses a grafana binary found on PATH or given with --grafana (and
// --grafana-home where its home path is not beside it or in
// /usr/share/grafana); without one it starts everything else and says how
// to add one.
//
//	go run ./cmd/jobsight-stack up [--dir D] [--build] [--no-jobs] [--no-grafana] [--grafana BIN] [--grafana-home DIR] [--history 30d [--history-jobs-per-day N]]
//	go run ./cmd/jobsight-stack down [--dir D]
//
// It needs root (Slurm runs jobs as their users and creates cgroups).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jobsight/jobsight/internal/demo"
	"github.com/jobsight/jobsight/internal/site/clusterstate"
	"github.com/jobsight/jobsight/internal/store/elasticsearch"
	"github.com/jobsight/jobsight/internal/store/promremote"
	"github.com/jobsight/jobsight/test/stack"
)

func main() {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("component", "jobsight-stack")
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: jobsight-stack up|down [--dir D] [--slurm 26.05|25.11|25.05|22.05] [--build] [--no-jobs] [--no-grafana] [--grafana BIN] [--grafana-home DIR] [--history 30d [--history-jobs-per-day N]]")
		os.Exit(2)
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	dir := fs.String("dir", "", "directory for all state, logs and configuration (up: default a new one under $TMPDIR; down: required)")
	build := fs.Bool("build", false, "build the agent (./cmd/jobsight-agent) and the SPANK plugin first")
	noJobs := fs.Bool("no-jobs", false, "submit no sample jobs")
	noGrafana := fs.Bool("no-grafana", false, "start no Grafana even where one is installed")
	grafanaBin := fs.String("grafana", "", "the grafana executable to run (default: grafana on PATH); Jobsight never builds Grafana's server")
	grafanaHome := fs.String("grafana-home", "", "Grafana's home path, with public/ and conf/ (default: beside the binary, or /usr/share/grafana)")
	slurmRelease := fs.String("slurm", stack.SlurmRelease(), "the Slurm release to run: 26.05 (built from ../shared/slurm and cached), 25.11, 25.05, or 22.05 (Debian's packages); default $"+stack.EnvSlurm+", else "+stack.DefaultSlurmRelease)
	history := fs.String("history", "", "seed generated history of this length (e.g. 30d, 12h, 2w; at most 400d): job documents labelled source \"generated\" and their series, on the made-up clusters "+strings.Join(demo.DemoClusters, " and "))
	perDay := fs.Float64("history-jobs-per-day", demo.DefaultPerDay, "finished jobs a day in the generated history")
	_ = fs.Parse(os.Args[2:])
	var hist *historyOptions
	if *history != "" || flagSet(fs, "history-jobs-per-day") {
		h, err := parseHistory(*history, *perDay)
		if err != nil {
			fmt.Fprintf(os.Stderr, "jobsight-stack: %v\n", err)
			os.Exit(2)
		}
		hist = h
	}
	switch *slurmRelease {
	case "26.05", "25.11", "25.05", "22.05":
		// One place decides: the SPANK plugin's build and the cluster.
		_ = os.Setenv(stack.EnvSlurm, *slurmRelease)
	default:
		fmt.Fprintf(os.Stderr, "jobsight-stack: --slurm %q: want 26.05, 25.11, 25.05 or 22.05\n", *slurmRelease)
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "up":
		if *dir == "" {
			// A directory of its own, never a fixed path another user
			// could have prepared.
			if *dir, err = os.MkdirTemp("", "jobsight-stack-"); err != nil {
				break
			}
		}
		var gopts *stack.GrafanaOptions
		if !*noGrafana {
			gopts = &stack.GrafanaOptions{Binary: *grafanaBin, Home: *grafanaHome}
		}
		err = up(log, *dir, *build, *noJobs, gopts, hist)
	case "down":
		if *dir == "" {
			err = fmt.Errorf("down: give --dir, the directory `up` printed")
			break
		}
		err = down(*dir)
	default:
		err = fmt.Errorf("unknown command %q: want up or down", os.Args[1])
	}
	if err != nil {
		log.Error("failed", "err", err)
		os.Exit(1)
	}
}

func pidFile(dir string) string { return filepath.Join(dir, "jobsight-stack.pid") }

func up(log *slog.Logger, dir string, build, noJobs bool, grafana *stack.GrafanaOptions, hist *historyOptions) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if b, err := os.ReadFile(pidFile(dir)); err == nil {
		if pid, _ := strconv.Atoi(strings.TrimSpace(string(b))); pid > 0 && syscall.Kill(pid, 0) == nil {
			return fmt.Errorf("a stack (pid %d) already runs in %s: run down first", pid, dir)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil { // #nosec G703 -- the developer's own -dir
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	opts := stack.Options{Slurm: stack.SlurmOptions{ClusterName: "jobsight-dev", GPUs: 8}}
	if hist != nil {
		// Prometheus keeps 15 days by default: the history's older part
		// would be deleted.
		opts.Prometheus.Retention = hist.span + 7*24*time.Hour
	}
	if agent, err := prepareAgent(ctx, log, dir, build); err != nil {
		log.Warn("no agent: jobs run unmonitored", "reason", err)
	} else {
		opts.Agent = agent
	}
	startCtx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	st, err := stack.Up(startCtx, dir, opts)
	cancel()
	if err != nil {
		return err
	}
	defer func() {
		if err := st.Down(); err != nil {
			log.Error("stopping the stack", "err", err)
		}
		_ = os.Remove(pidFile(dir))
	}()
	if err := os.WriteFile(pidFile(dir), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
		return fmt.Errorf("writing pid file: %w", err)
	}
	// The history goes first: Prometheus takes old samples only while it
	// holds nothing newer (the collector and the agents write now).
	if hist != nil {
		seeded, err := seedHistory(ctx, log, st, *hist)
		if err != nil {
			return fmt.Errorf("seeding the generated history: %w", err)
		}
		go seeded.Feed(ctx)
	}
	// The cluster-state collector: the contention the hogging dashboard
	// and alert rules weigh by.
	cs, err := startClusterState(ctx, log, dir, st)
	if err != nil {
		log.Warn("no cluster-state collector", "err", err)
	} else {
		defer cs()
	}
	var gf *stack.Grafana
	if grafana != nil {
		grafana.Env = st.GrafanaEnv()
		gctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		gf, err = stack.StartGrafana(gctx, filepath.Join(dir, "grafana"), *grafana)
		cancel()
		switch {
		case errors.Is(err, stack.ErrNoGrafana):
			log.Warn("no Grafana: everything else runs", "reason", err,
				"add one", "install Grafana 11-13, then run up again with --grafana /path/to/grafana, or provision the plugin and provisioning/ into your own Grafana (README, Deploying)")
		case err != nil:
			return fmt.Errorf("starting Grafana: %w", err)
		default:
			defer func() { _ = gf.Stop() }()
		}
	}
	if !noJobs {
		for _, args := range [][]string{
			{"-J", "sample-sleep", "--wrap", "sleep 60"},
			{"-J", "sample-busy", "-c", "1", "--mem=200M", "--wrap", "timeout 60 sh -c 'while :; do :; done'"},
			{"-J", "sample-gpu1", "--gres=gpu:1", "--wrap", "sleep 60"},
			{"-J", "sample-gpu4-uses-1", "--gres=gpu:4", "--wrap", "sleep 120"},
			{"-J", "sample-fail", "--wrap", "sleep 5; exit 1"},
			// Holds four GPUs and uses one for an hour, while the next
			// job waits for GPUs: the hogging dashboard and alert rules
			// show it after 30 minutes.
			{"-J", "sample-hogging", "--gres=gpu:4", "--wrap", "sleep 3600"},
			{"-J", "sample-waiting-for-gpus", "--gres=gpu:8", "--wrap", "sleep 60"},
		} {
			id, err := st.Slurm.Sbatch(ctx, append([]string{"--output=/dev/null", "--chdir=/tmp"}, args...)...)
			if err != nil {
				log.Warn("submitting a sample job", "err", err)
				continue
			}
			log.Info("submitted sample job", "job_id", id, "name", args[1])
		}
	}
	st.Describe(os.Stdout)
	if gf != nil {
		fmt.Printf("  %s\n", gf.Describe())
		for _, d := range []struct{ uid, title string }{
			{"jobsight-my-jobs", "My jobs"}, {"jobsight-job-detail", "Job detail"},
			{"jobsight-cluster-efficiency", "Cluster efficiency"}, {"jobsight-hogging", "Hogging now"},
			{"jobsight-allocations", "Allocations"}, {"jobsight-agent-health", "Agent health"},
		} {
			fmt.Printf("    %-19s %s/d/%s\n", d.title, gf.URL, d.uid)
		}
		fmt.Printf("    %-19s %s/alerting/list\n", "Alert rules", gf.URL)
	}
	fmt.Printf("  stop with Ctrl-C, or: go run ./cmd/jobsight-stack down --dir %s\n", dir)
	<-ctx.Done()
	log.Info("stopping")
	return nil
}

// prepareAgent finds (or with build, builds) the agent and the SPANK plugin.
func prepareAgent(ctx context.Context, log *slog.Logger, dir string, build bool) (*stack.AgentOptions, error) {
	bin := filepath.Join(dir, "bin")
	agent, plugin := filepath.Join(bin, "jobsight-agent"), filepath.Join(bin, "jobsight.so")
	if build {
		var err error
		if agent, plugin, err = stack.BuildAgent(ctx, ".", bin); err != nil {
			return nil, err
		}
		log.Info("built the agent and the SPANK plugin", "dir", bin)
	}
	for _, p := range []string{agent, plugin} {
		if _, err := os.Stat(p); err != nil { // #nosec G703 -- a binary under the developer's own -dir
			return nil, fmt.Errorf("%s is missing (use --build): %w", p, err)
		}
	}
	// The node's 8 GPUs are simulated (there is no GPU here): every
	// document and series they produce says so.
	return &stack.AgentOptions{Binary: agent, Plugin: plugin,
		Extra: "gpu: {backend: simulated, simulated: {devices: 8, profile: one-of-n}}\n"}, nil
}

// down sends SIGTERM to the stack running in dir and waits for it to stop.
func down(dir string) error {
	b, err := os.ReadFile(pidFile(dir))
	if err != nil {
		return fmt.Errorf("no stack runs in %s: %w", dir, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return fmt.Errorf("bad pid file %s: %q", pidFile(dir), b)
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			_ = os.Remove(pidFile(dir))
			return nil
		}
		return fmt.Errorf("signalling stack pid %d: %w", pid, err)
	}
	for range 600 {
		if syscall.Kill(pid, 0) != nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("stack pid %d did not stop within 60 s", pid)
}

// startClusterState runs the cluster-state collector against the stack,
// polling every 15 s, until the returned stop is called.
func startClusterState(ctx context.Context, log *slog.Logger, dir string, st *stack.Stack) (func(), error) {
	cfg := clusterstate.DefaultConfig()
	cfg.Cluster, cfg.Listen, cfg.Interval = st.Slurm.ClusterName, "", 15*time.Second
	cfg.Slurm.Conf = st.Slurm.Conf
	cfg.Slurm.Sinfo, cfg.Slurm.Squeue = st.Slurm.Install.Bin("sinfo"), st.Slurm.Install.Bin("squeue")
	cfg.Prometheus.RemoteWriteURL = st.Prometheus.URL + "/api/v1/write"
	cfg.Spool.Dir = filepath.Join(dir, "cluster-state-spool")
	return clusterstate.Background(ctx, cfg, clusterstate.Options{Logger: log.With("component", "cluster-state")})
}

// historyOptions are --history and --history-jobs-per-day, checked.
type historyOptions struct {
	span   time.Duration
	perDay float64
}

// parseHistory checks --history and --history-jobs-per-day.
func parseHistory(span string, perDay float64) (*historyOptions, error) {
	if span == "" {
		return nil, fmt.Errorf("--history-jobs-per-day needs --history (e.g. --history 30d)")
	}
	d, err := demo.ParseSpan(span)
	if err != nil {
		return nil, fmt.Errorf("--history: %w", err)
	}
	if _, err := demo.HistoryJobs(d, perDay); err != nil {
		return nil, fmt.Errorf("--history %s --history-jobs-per-day %v: %w", span, perDay, err)
	}
	return &historyOptions{span: d, perDay: perDay}, nil
}

func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// seedHistory seeds the generated history into the stack's
// Elasticsearch-API server and Prometheus.
func seedHistory(ctx context.Context, log *slog.Logger, st *stack.Stack, h historyOptions) (*demo.Seeded, error) {
	es := st.Elasticsearch
	c, err := elasticsearch.New(elasticsearch.Config{URLs: []string{es.URL}, Username: es.User, Password: es.Password, CACertFile: es.CACertFile, Timeout: 2 * time.Minute})
	if err != nil {
		return nil, err
	}
	w, err := promremote.New(promremote.Config{URL: st.Prometheus.URL + "/api/v1/write", Timeout: time.Minute})
	if err != nil {
		return nil, err
	}
	s, err := demo.SeedHistory(ctx, demo.HistoryOptions{ES: c, PromWrite: w, Span: h.span, PerDay: h.perDay, Log: log.With("part", "history")})
	if err != nil {
		return nil, err
	}
	log.Info("generated history seeded: the Elasticsearch-API server makes the documents searchable in the background (ZincSearch: some minutes for some thousands)",
		"jobs", len(s.Jobs), "clusters", strings.Join(demo.DemoClusters, ","), "source", demo.Source)
	return s, nil
}
