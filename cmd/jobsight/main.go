// Command jobsight is the site's post-job feedback tool, run on an admin or
// login node (never on compute nodes; they only run the agent):
//
//	jobsight report [--format text|html|markdown|json] [--reanalyse] <cluster:jobid | jobid>
//	jobsight advise [--json] [--mem 64G --cpus-per-task 16 --time 2:00:00 ...]   advice for a job about to be submitted
//	jobsight analyze --since 24h | --from T --to T     re-analyse finished jobs, store the results
//	jobsight notify [--every 5m] [--listen ADDR]       mail reports (digests) to job owners
//	jobsight history [--end T]                         roll up per-user/per-account efficiency
//	jobsight export --since 30d [--format csv|json]    efficiency scores and waste, for policy use
//	jobsight setup | check-config
//	jobsight check-stores                              each store call of the site command, one line each
//	jobsight cluster-state [--once] [--check]            the cluster-state collector (its own --config)
//	jobsight grafana-users --grafana-url URL --token-file FILE   the datasource's userIdMap for built-in accounts
//
// Every command takes --config (default /etc/jobsight/site.yaml;
// docs/site-config.md). `report` shows a job only to its owner, the PI of
// its account and admins.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	stdlog "log"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/sys/unix"

	"github.com/jobsight/jobsight/internal/config"
	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/internal/report"
	"github.com/jobsight/jobsight/internal/site/feedback"
	"github.com/jobsight/jobsight/internal/site/notify"
	"github.com/jobsight/jobsight/internal/store"
	"github.com/jobsight/jobsight/internal/store/elasticsearch"
	"github.com/jobsight/jobsight/internal/storecheck"
)

// installedConfig is the configuration file of this installation, and the
// only one a setgid run reads; a site (or a test) may build with
// -ldflags "-X main.installedConfig=/path/site.yaml".
var installedConfig = feedback.DefaultConfigPath

func main() {
	if privileged() {
		// The Go runtime and net/http read the environment before main
		// (GODEBUG=http2debug=2 makes the HTTP/2 client log every request
		// header, the stores' credentials included): a privileged run
		// starts again with only the allow-listed variables.
		if err := execCleanEnv(os.Environ()); err != nil {
			fmt.Fprintln(os.Stderr, "jobsight:", err)
			os.Exit(2)
		}
		// And whatever writes to the standard logger (net/http's debug
		// output among it) writes nothing.
		stdlog.SetOutput(io.Discard)
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `usage: jobsight <command> [--config FILE] [options]
commands:
  report JOB       a job's report (JOB: cluster:jobid, or a job id on the configured cluster)
  advise [sbatch options]   what your comparable finished jobs used, and the request that would have served them (--json; docs/advise.md)
  analyze          re-analyse finished jobs (--since DURATION, or --from/--to RFC 3339 times)
  notify           mail reports to job owners (--every DURATION keeps running; --listen ADDR serves /metrics)
  history          roll up per-user and per-account efficiency (--end TIME)
  export           efficiency scores and waste (--since DURATION or --from/--to; --format csv|json)
  setup            create the results and history indices
  check-config     validate the configuration
  check-stores     make each store call the site command makes, with its credentials; one line each (exit 1: something is missing)
  cluster-state    the cluster-state collector (--config /etc/jobsight/cluster-state.yaml; docs/cluster-state.md)
  grafana-users    print the datasource's userIdMap for Grafana's built-in accounts (--grafana-url, --token-file; docs/datasource.md)
  version          print the version`

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprintln(stderr, usage)
		return 2
	}
	cmd := args[0]
	if cmd == "version" || cmd == "--version" {
		fmt.Fprintln(stdout, "jobsight", version)
		return 0
	}
	if cmd == "cluster-state" {
		return clusterStateCmd(args[1:], stdout, stderr)
	}
	if cmd == "grafana-users" {
		return grafanaUsersCmd(args[1:], stdout, stderr)
	}
	if cmd == "advise" {
		return adviseCmd(args[1:], stdout, stderr)
	}
	fs := flag.NewFlagSet("jobsight "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", installedConfig, "configuration file")
	format := fs.String("format", "", "report: text, html, markdown or json; export: csv or json")
	reanalyse := fs.Bool("reanalyse", false, "report: analyse again with the current rules")
	since := fs.Duration("since", 0, "analyze/export: jobs that ended this long ago until now")
	fromS := fs.String("from", "", "analyze/export: start (RFC 3339)")
	toS := fs.String("to", "", "analyze/export: end (RFC 3339)")
	endS := fs.String("end", "", "history: end of the period (RFC 3339; default now)")
	every := fs.Duration("every", 0, "notify: run every interval until stopped (0: once)")
	listen := fs.String("listen", "", "notify: serve Prometheus metrics on this address")
	verbose := fs.Bool("v", false, "log debug messages")
	switch cmd {
	case "report", "analyze", "notify", "history", "export", "setup", "check-config", "check-stores":
	default:
		fmt.Fprintf(stderr, "jobsight: unknown command %q\n%s\n", cmd, usage)
		return 2
	}
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	if privileged() {
		if err := restrict(cmd, fs); err != nil {
			fmt.Fprintln(stderr, "jobsight:", err)
			return 2
		}
	}
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})).With("cmd", cmd)
	cfg, err := feedback.LoadConfig(*cfgPath)
	if err != nil {
		fmt.Fprintln(stderr, "jobsight:", err)
		return 2
	}
	esCfg := cfg.Elasticsearch.Elasticsearch
	if cmd == "report" || privileged() {
		// Reports read with their own read-only credential; a setgid run
		// never touches the elasticsearch section's (writing) one.
		if esCfg, err = cfg.ReportElasticsearch(privileged()); err != nil {
			fmt.Fprintln(stderr, "jobsight:", err)
			return 2
		}
	}
	if cmd == "check-config" {
		fmt.Fprintf(stdout, "config %s: ok\n", *cfgPath)
		return 0
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if cmd == "check-stores" {
		return reportStores(checkSiteStores(ctx, cfg, storecheck.Options{}), stdout)
	}

	reg := prometheus.NewRegistry()
	site, err := newSite(cfg, esCfg, reg, log)
	if err != nil {
		fmt.Fprintln(stderr, "jobsight:", err)
		return 1
	}
	switch cmd {
	case "setup":
		templates := "index templates put"
		if err = site.Store.PutTemplates(ctx); errors.Is(err, store.ErrAccessDenied) {
			log.Warn("index templates not put: these credentials lack the manage_index_templates cluster privilege (run setup once with an administrator's)", "err", err)
			templates, err = "index templates not put", nil
		}
		if err == nil {
			err = site.Store.EnsureIndices(ctx)
		}
		if err == nil {
			fmt.Fprintf(stdout, "indices ready: %s, %s (monthly), %s; %s\n", jobmodel.IndexPattern(cfg.Elasticsearch.JobIndex),
				jobmodel.IndexPattern(cfg.Elasticsearch.ResultIndex), cfg.History.Index, templates)
		}
	case "report":
		if fs.NArg() != 1 {
			fmt.Fprintln(stderr, "jobsight report: give one job: cluster:jobid, or a job id on the configured cluster")
			return 2
		}
		err = reportCmd(ctx, site, fs.Arg(0), *format, *reanalyse, stdout)
		if errors.Is(err, feedback.ErrForbidden) || errors.Is(err, feedback.ErrNotFound) {
			// The same answer for another user's job and a job that does
			// not exist: a user cannot probe for other users' jobs.
			fmt.Fprintf(stderr, "jobsight: no job %s of yours\n", fs.Arg(0))
			return 1
		}
	case "analyze":
		var from, to time.Time
		if from, to, err = window(*since, *fromS, *toS); err == nil {
			var n int
			n, err = site.Reanalyse(ctx, from, to)
			fmt.Fprintf(stdout, "analysed %d jobs that ended between %s and %s\n", n, from.Format(time.RFC3339), to.Format(time.RFC3339))
		}
	case "export":
		var from, to time.Time
		if from, to, err = window(*since, *fromS, *toS); err == nil {
			err = exportCmd(ctx, site, from, to, *format, stdout)
		}
	case "history":
		end := time.Now()
		if *endS != "" {
			if end, err = time.Parse(time.RFC3339, *endS); err != nil {
				err = fmt.Errorf("--end: %w", err)
			}
		}
		if err == nil {
			var hs []jobmodel.History
			hs, err = site.History(ctx, end)
			flagged := 0
			for _, h := range hs {
				if h.Advisory {
					flagged++
				}
			}
			fmt.Fprintf(stdout, "history: %d entries for the %s ending %s, %d with the advisory flag\n", len(hs), cfg.History.Period, end.UTC().Format(time.RFC3339), flagged)
		}
	case "notify":
		err = notifyCmd(ctx, site, cfg, reg, *every, *listen, log, stdout)
	}
	if err != nil {
		fmt.Fprintln(stderr, "jobsight:", err)
		return 1
	}
	return 0
}

// newSite builds the command's clients; esCfg is the store connection with
// the credential the command uses (ReportElasticsearch for reports).
func newSite(cfg feedback.Config, esCfg config.Elasticsearch, reg prometheus.Registerer, log *slog.Logger) (*feedback.Site, error) {
	es, err := elasticsearch.FromConfig(esCfg, log)
	if err != nil {
		return nil, err
	}
	series, err := feedback.NewSeries(cfg.Prometheus)
	if err != nil {
		return nil, err
	}
	return &feedback.Site{Cfg: cfg, Store: &feedback.Store{ES: es, Indices: cfg.Indices(), Cluster: cfg.Cluster}, Series: series,
		Metrics: feedback.NewMetrics(reg), Log: log}, nil
}

// jobDocID qualifies a bare job id with the configured cluster.
func jobDocID(cfg feedback.Config, arg string) (string, error) {
	if strings.Contains(arg, ":") {
		return arg, nil
	}
	if cfg.Cluster == "" {
		return "", fmt.Errorf("job %q has no cluster: write cluster:jobid, or set cluster in the configuration", arg)
	}
	return cfg.Cluster + ":" + arg, nil
}

func reportCmd(ctx context.Context, site *feedback.Site, arg, format string, reanalyse bool, w io.Writer) error {
	id, err := jobDocID(site.Cfg, arg)
	if err != nil {
		return err
	}
	caller, err := feedback.CurrentCaller()
	if err != nil {
		return err
	}
	job, err := site.Store.Job(ctx, id)
	if err != nil {
		return err
	}
	if err := site.Cfg.Access.Allowed(caller, job); err != nil {
		return err
	}
	in := site.ReportInput(ctx, job, reanalyse)
	switch format {
	case "", "text":
		_, err = io.WriteString(w, report.Text(in, isTerminal(w)))
	case "markdown":
		_, err = io.WriteString(w, report.Markdown(in))
	case "html":
		var html string
		if html, err = report.HTML(in); err == nil {
			_, err = io.WriteString(w, html)
		}
	case "json":
		a := in.Analysis
		if a == nil {
			a = job.Analysis
		}
		err = feedback.WriteJSON(w, []jobmodel.Result{jobmodel.NewResult(job, *a, *jobmodel.At(time.Now()))})
	default:
		return fmt.Errorf("--format %q: want text, html, markdown or json", format)
	}
	return err
}

func exportCmd(ctx context.Context, site *feedback.Site, from, to time.Time, format string, w io.Writer) error {
	rs, err := site.Store.Results(ctx, from, to)
	if err != nil {
		return err
	}
	switch format {
	case "", "csv":
		return feedback.WriteCSV(w, rs)
	case "json":
		return feedback.WriteJSON(w, rs)
	}
	return fmt.Errorf("--format %q: want csv or json", format)
}

func notifyCmd(ctx context.Context, site *feedback.Site, cfg feedback.Config, reg *prometheus.Registry, every time.Duration,
	listen string, log *slog.Logger, w io.Writer) error {
	if !cfg.Notify.Enabled {
		return errors.New("notify.enabled is false: nothing to do")
	}
	n, err := notify.New(cfg.Notify, notify.Options{Registerer: reg, Logger: log})
	if err != nil {
		return err
	}
	if listen != "" {
		srv := &http.Server{Addr: listen, Handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), ReadHeaderTimeout: 10 * time.Second}
		go func() {
			if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error("metrics listener", "err", err)
			}
		}()
		defer srv.Close()
	}
	for {
		queued, sent, err := site.Notify(ctx, n)
		if err != nil {
			log.Warn("notify pass", "queued", queued, "sent", sent, "err", err)
		} else {
			log.Info("notify pass", "queued", queued, "sent", sent, "pending", n.Pending())
		}
		if every <= 0 {
			if err == nil {
				fmt.Fprintf(w, "queued %d reports, sent %d digests, %d reports pending\n", queued, sent, n.Pending())
			}
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(every):
		}
	}
}

// privileged reports whether the command runs with more rights than its
// caller: installed setgid (or setuid) so that users can read their own
// reports through a configuration they cannot read themselves.
func privileged() bool { return os.Getegid() != os.Getgid() || os.Geteuid() != os.Getuid() }

// restrict is what a privileged run allows: only `report` (which checks
// that the job is the caller's), `advise` (which reads only the caller's
// jobs) and `check-config`, only with the
// installed configuration (a caller's own file could make them an admin or
// send the stored password to a server of theirs), and only with the
// allow-listed environment that main started it with.
func restrict(cmd string, fs *flag.FlagSet) error {
	if cmd != "report" && cmd != "advise" && cmd != "check-config" {
		return fmt.Errorf("%s: only `jobsight report` and `jobsight advise` may be run through the setgid installation; admins run %s with their own access to the configuration", cmd, cmd)
	}
	var err error
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "config" && f.Value.String() != installedConfig {
			err = fmt.Errorf("--config: the setgid installation reads only %s", installedConfig)
		}
	})
	if !envClean(os.Environ()) {
		err = errors.Join(err, errors.New("the environment holds variables off the setgid allow-list"))
	}
	return err
}

// setgidPath is the PATH of a privileged run (it starts no programs; a
// caller's PATH is not kept all the same).
const setgidPath = "PATH=/usr/bin:/bin"

// setgidTraceback is what the Go runtime itself sets in a setgid process
// (it forces GOTRACEBACK=none there).
const setgidTraceback = "GOTRACEBACK=none"

// setgidEnvKeep are the variables a privileged run keeps from its caller:
// none of them redirects connections or TLS trust (SSL_CERT_*, *_PROXY,
// resolver overrides are all dropped) or changes the runtime (GODEBUG,
// GOMAXPROCS, ...).
var setgidEnvKeep = []string{"TERM", "LANG", "LC_ALL"}

// cleanEnv is the environment a privileged run keeps of env: setgidPath,
// the first value of each allow-listed variable, and setgidTraceback.
func cleanEnv(env []string) []string {
	out := []string{setgidPath}
	for _, k := range setgidEnvKeep {
		for _, kv := range env {
			if strings.HasPrefix(kv, k+"=") {
				out = append(out, kv)
				break
			}
		}
	}
	return append(out, setgidTraceback)
}

// envClean reports whether env holds only what cleanEnv keeps, each
// variable once (in any order: the runtime may move GOTRACEBACK).
func envClean(env []string) bool {
	seen := map[string]bool{}
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		ok := slices.Contains(setgidEnvKeep, k) || kv == setgidPath || kv == setgidTraceback
		if !ok || seen[k] {
			return false
		}
		seen[k] = true
	}
	return true
}

// execCleanEnv runs this program again (/proc/self/exe, the same
// arguments) with cleanEnv(env), unless env is clean already; it returns
// nil only in that case, else the error that stopped the restart (the run
// must then not go on).
func execCleanEnv(env []string) error {
	if envClean(env) {
		return nil
	}
	// #nosec G702 -- runs this same program again (a fixed path) with the caller's own
	// arguments; only the environment changes, to the allow-list.
	err := syscall.Exec("/proc/self/exe", os.Args, cleanEnv(env))
	return fmt.Errorf("restarting with the setgid allow-listed environment: %w", err)
}

// window turns --since or --from/--to into a time range.
func window(since time.Duration, from, to string) (time.Time, time.Time, error) {
	now := time.Now()
	switch {
	case since > 0 && (from != "" || to != ""):
		return time.Time{}, time.Time{}, errors.New("give --since or --from/--to, not both")
	case since > 0:
		return now.Add(-since), now, nil
	case from == "":
		return time.Time{}, time.Time{}, errors.New("give --since DURATION or --from TIME [--to TIME]")
	}
	f, err := time.Parse(time.RFC3339, from)
	if err != nil {
		return time.Time{}, time.Time{}, fmt.Errorf("--from: %w", err)
	}
	t := now
	if to != "" {
		if t, err = time.Parse(time.RFC3339, to); err != nil {
			return time.Time{}, time.Time{}, fmt.Errorf("--to: %w", err)
		}
	}
	if !t.After(f) {
		return time.Time{}, time.Time{}, errors.New("--to must be after --from")
	}
	return f, t, nil
}

// isTerminal reports whether w is a terminal (colour on), not a pipe.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
