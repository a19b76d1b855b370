package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jobsight/jobsight/internal/site/advise"
	"github.com/jobsight/jobsight/internal/site/feedback"
	"github.com/jobsight/jobsight/internal/slurm"
	"github.com/jobsight/jobsight/internal/store/elasticsearch"
)

// adviseCmd is `jobsight advise`: for a job about to be submitted (sbatch's
// options, as the site's cli_filter.lua passes them), what the caller's
// own comparable finished jobs used and the request that would have served
// them (internal/site/advise). Nothing on stdout when there is nothing to
// say; --json always answers, with why it is quiet. Only the caller's own
// jobs (by real uid) are ever read: no option names another user.
func adviseCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("jobsight advise", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", installedConfig, "configuration file")
	asJSON := fs.Bool("json", false, "answer in JSON, also when there is no advice (with why)")
	verbose := fs.Bool("v", false, "log debug messages")
	var o sbatchOptions
	fs.StringVar(&o.cpusPerTask, "cpus-per-task", "", "sbatch --cpus-per-task")
	fs.StringVar(&o.ntasks, "ntasks", "", "sbatch --ntasks")
	fs.StringVar(&o.nodes, "nodes", "", "sbatch --nodes (N or MIN-MAX)")
	fs.StringVar(&o.mem, "mem", "", "sbatch --mem (per node)")
	fs.StringVar(&o.memPerCPU, "mem-per-cpu", "", "sbatch --mem-per-cpu")
	fs.StringVar(&o.gpus, "gpus", "", "sbatch --gpus ([type:]N)")
	fs.StringVar(&o.gres, "gres", "", "sbatch --gres (gpu[:type]:N,...)")
	fs.StringVar(&o.time, "time", "", "sbatch --time")
	fs.StringVar(&o.partition, "partition", "", "sbatch --partition")
	fs.StringVar(&o.account, "account", "", "sbatch --account")
	fs.StringVar(&o.name, "job-name", "", "sbatch --job-name")
	fs.StringVar(&o.script, "script", "", "the batch script's path")
	// sbatch's short options, for people typing the command.
	for short, long := range map[string]string{"c": "cpus-per-task", "n": "ntasks", "N": "nodes", "G": "gpus", "t": "time",
		"p": "partition", "A": "account", "J": "job-name"} {
		f := fs.Lookup(long)
		fs.Var(f.Value, short, "sbatch -"+short+" (--"+long+")")
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 0 {
		fmt.Fprintf(stderr, "jobsight advise: unexpected argument %q: the request is given as sbatch's options\n", fs.Arg(0))
		return 2
	}
	if privileged() {
		if err := restrict("advise", fs); err != nil {
			fmt.Fprintln(stderr, "jobsight:", err)
			return 2
		}
	}
	req, err := o.request()
	if err != nil {
		fmt.Fprintln(stderr, "jobsight advise:", err)
		return 2
	}
	cfg, err := feedback.LoadConfig(*cfgPath)
	if err != nil {
		fmt.Fprintln(stderr, "jobsight:", err)
		return 2
	}
	answer := func(a advise.Advice) int {
		if *asJSON {
			a.Changes = nonNil(a.Changes)
			b, _ := json.Marshal(struct {
				advise.Advice
				SBATCH []string `json:"sbatch"`
			}{a, nonNil(a.SBATCH())})
			fmt.Fprintln(stdout, string(b))
			return 0
		}
		io.WriteString(stdout, advise.Text(a))
		return 0
	}
	if !cfg.Advise.Enabled {
		return answer(advise.Advice{Quiet: "advice is off for this site (advise.enabled: false)"})
	}
	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})).With("cmd", "advise")
	caller, err := feedback.CurrentCaller()
	if err != nil && caller.UID == 0 && caller.User == "" {
		fmt.Fprintln(stderr, "jobsight advise:", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Advise.Timeout)
	defer cancel()
	// A PI of the request's account, where the site allows it, is advised
	// from the account's jobs of every user. Who is PI comes from the
	// site's configuration (access.pis), never from the caller.
	accountWide := cfg.Advise.PIHistory && req.Account != "" && caller.User != "" &&
		slices.Contains(cfg.Access.PIs[req.Account], caller.User)
	history, err := adviseHistory(ctx, cfg, caller.UID, req, accountWide, log)
	if err != nil {
		fmt.Fprintln(stderr, "jobsight advise:", err)
		return 1
	}
	a := advise.Advise(req, history, cfg.Advise)
	if accountWide {
		a.Account = req.Account
	}
	return answer(a)
}

// adviseHistory is the caller's finished jobs the advice compares with:
// from their runtime directory's cache when it is fresh, else from one
// store search (cached afterwards).
func adviseHistory(ctx context.Context, cfg feedback.Config, uid uint32, req advise.Request, accountWide bool, log *slog.Logger) ([]advise.Past, error) {
	now := time.Now()
	// The store selects the jobs that may compare with this request (its
	// name first, then a similar CPU, memory and GPU request), so that one
	// search reads tens of documents, not the caller's whole history.
	like := feedback.LikeRequest(req, cfg.Advise)
	q := feedback.UserJobs{UID: uid, Account: req.Account, Partitions: req.Partitions(),
		Since: now.Add(-cfg.Advise.Lookback), Size: cfg.Advise.Reads(), AccountWide: accountWide, Like: like}
	key := strings.Join([]string{strconv.FormatUint(uint64(uid), 10), cfg.Cluster, q.Account, strings.Join(q.Partitions, ","),
		strconv.Itoa(q.Size), cfg.Advise.Lookback.String(), strconv.FormatBool(accountWide),
		like.Key()}, "\x00")
	cache := advise.Cache{Dir: advise.RunDir(uid), UID: uid, TTL: cfg.Advise.CacheTTL}
	if jobs, ok := cache.Get(key, now); ok {
		log.Debug("history from the cache", "jobs", len(jobs), "dir", cache.Dir)
		return jobs, nil
	}
	esCfg, err := cfg.ReportElasticsearch(privileged())
	if err != nil {
		return nil, err
	}
	es, err := elasticsearch.FromConfig(esCfg, log, elasticsearch.OncePerURL)
	if err != nil {
		return nil, err
	}
	st := &feedback.Store{ES: es, Indices: cfg.Indices(), Cluster: cfg.Cluster}
	docs, err := st.UserFinalJobs(ctx, q)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("the store did not answer within advise.timeout (%s)", cfg.Advise.Timeout)
		}
		return nil, err
	}
	jobs := make([]advise.Past, 0, len(docs))
	for _, d := range docs {
		jobs = append(jobs, advise.PastOf(d, cfg.Analysis))
	}
	if err := cache.Put(key, jobs, now); err != nil {
		log.Debug("history not cached", "err", err)
	}
	return jobs, nil
}

// sbatchOptions are the request's options as sbatch spells them.
type sbatchOptions struct {
	cpusPerTask, ntasks, nodes, mem, memPerCPU, gpus, gres, time, partition, account, name, script string
}

// request parses the options; an empty value, or one Slurm prints for
// "not set" ("0" CPUs per task), is not given.
func (o sbatchOptions) request() (advise.Request, error) {
	var r advise.Request
	var errs []error
	count := func(opt, v string) int64 {
		if v == "" {
			return 0
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n < 0 || n > 1<<24 {
			errs = append(errs, fmt.Errorf("--%s %q: want a whole number", opt, clipArg(v)))
			return 0
		}
		return n
	}
	size := func(opt, v string) int64 {
		if v == "" || v == "0" {
			return 0
		}
		n, err := slurm.ParseSize(strings.TrimSpace(v))
		if err != nil {
			errs = append(errs, fmt.Errorf("--%s: %w", opt, err))
		}
		return n
	}
	r.CPUsPerTask = count("cpus-per-task", o.cpusPerTask)
	r.Tasks = count("ntasks", o.ntasks)
	nodes, _, _ := strings.Cut(o.nodes, "-")
	r.Nodes = count("nodes", nodes)
	r.MemPerNodeBytes = size("mem", o.mem)
	r.MemPerCPUBytes = size("mem-per-cpu", o.memPerCPU)
	if o.gpus != "" {
		r.GPUs = count("gpus", lastField(o.gpus))
	} else if n, ok := gresGPUs(o.gres); ok {
		// --gres counts per node.
		r.GPUs, r.GPUsFromGres = n*max(1, r.Nodes), n > 0
	} else if o.gres != "" && !ok {
		errs = append(errs, fmt.Errorf("--gres %q: the GPU count is not a whole number", clipArg(o.gres)))
	}
	if o.time != "" {
		t, err := slurm.ParseTimeLimit(o.time)
		if err != nil {
			errs = append(errs, fmt.Errorf("--time: %w", err))
		}
		r.TimeLimitSeconds = t
	}
	for _, s := range []struct {
		opt string
		v   string
		to  *string
	}{{"partition", o.partition, &r.Partition}, {"account", o.account, &r.Account}, {"job-name", o.name, &r.Name}, {"script", o.script, &r.Script}} {
		if len(s.v) > 4096 || strings.ContainsRune(s.v, 0) {
			errs = append(errs, fmt.Errorf("--%s: longer than 4096 bytes or holds a NUL", s.opt))
			continue
		}
		*s.to = s.v
	}
	return r, errors.Join(errs...)
}

// lastField is what follows the last ':' ("a100:2" → "2").
func lastField(v string) string {
	if i := strings.LastIndexByte(v, ':'); i >= 0 {
		return v[i+1:]
	}
	return v
}

// gresGPUs is the GPU count of a --gres value ("gpu:2", "gres/gpu:a100:2",
// "gpu:a100:2,shard:1"; "gpu" alone is one); ok false when the gpu entry's
// count is not a number.
func gresGPUs(gres string) (int64, bool) {
	for _, e := range strings.Split(gres, ",") {
		e = strings.TrimPrefix(strings.TrimSpace(e), "gres/")
		name, rest, _ := strings.Cut(e, ":")
		if name != "gpu" {
			continue
		}
		if rest == "" {
			return 1, true
		}
		f := lastField(rest)
		if n, err := strconv.ParseInt(f, 10, 64); err == nil && n >= 0 && n <= 1<<16 {
			return n, true
		}
		if !strings.Contains(rest, ":") { // gpu:a100 (a type, one GPU)
			return 1, true
		}
		return 0, false
	}
	return 0, true
}

// clipArg shortens a value for an error message.
func clipArg(v string) string {
	if len(v) > 64 {
		return v[:64] + "…"
	}
	return v
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
