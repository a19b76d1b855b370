package stack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// Options configures Up.
type Options struct {
	// Slurm configures the cluster (cluster name, SPANK plugstack, ...).
	Slurm SlurmOptions
	// NoSlurm leaves Slurm out (for machines without root or Slurm).
	NoSlurm bool
	// Agent, when set, loads the Jobsight SPANK plugin into slurmd with an
	// agent configuration pointing at this stack.
	Agent *AgentOptions
	// Prometheus configures Prometheus (its retention).
	Prometheus PrometheusOptions
}

// Stack is everything Jobsight runs against: a Slurm cluster, Prometheus
// with the remote-write receiver and an Elasticsearch-API server, all under
// one directory.
type Stack struct {
	Dir           string
	Slurm         *Slurm // nil with Options.NoSlurm
	Prometheus    *Server
	Elasticsearch *ESServer
	Agent         *Agent // nil without Options.Agent
}

// Up starts Elasticsearch (ZincSearch unless JOBSIGHT_TEST_ES_URL names a
// real cluster), Prometheus and Slurm under dir (es/, prometheus/, slurm/).
// On error everything already started is stopped. Slurm needs root.
func Up(ctx context.Context, dir string, opts Options) (*Stack, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("resolving %s: %w", dir, err)
	}
	// A directory someone else prepared (a symlink, or owned by another
	// user) is refused: the stack chmods and writes below it as root.
	if fi, err := os.Lstat(dir); err == nil {
		st, _ := fi.Sys().(*syscall.Stat_t)
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			return nil, fmt.Errorf("%s is a symbolic link: give the stack a directory of its own", dir)
		case !fi.IsDir():
			return nil, fmt.Errorf("%s is not a directory", dir)
		case st != nil && int(st.Uid) != os.Geteuid():
			return nil, fmt.Errorf("%s belongs to uid %d, not to this user: give the stack a directory of its own", dir, st.Uid)
		}
	}
	// Jobs of other users (sbatch --uid) must reach their batch scripts in
	// slurmd's spool below dir: a 0700 temporary directory would fail them.
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, err
	}
	s := &Stack{Dir: dir}
	if s.Elasticsearch, err = StartElasticsearch(ctx, filepath.Join(dir, "es")); err != nil {
		return nil, fmt.Errorf("starting the Elasticsearch-API server: %w", err)
	}
	if s.Prometheus, err = StartPrometheusWith(ctx, filepath.Join(dir, "prometheus"), opts.Prometheus); err != nil {
		s.Down()
		return nil, fmt.Errorf("starting Prometheus: %w", err)
	}
	var in SlurmInstall
	if !opts.NoSlurm {
		if in, err = FindSlurm(ctx, opts.Slurm.Release); err != nil {
			s.Down()
			return nil, err
		}
	}
	if opts.Agent != nil {
		if s.Agent, err = writeAgent(filepath.Join(dir, "agent"), *opts.Agent, in, s.Elasticsearch, s.Prometheus); err != nil {
			s.Down()
			return nil, fmt.Errorf("configuring the agent: %w", err)
		}
		opts.Slurm.PlugstackConf = s.Agent.Plugstack
	}
	if !opts.NoSlurm {
		if s.Slurm, err = StartSlurm(ctx, filepath.Join(dir, "slurm"), opts.Slurm); err != nil {
			s.Down()
			return nil, fmt.Errorf("starting Slurm: %w", err)
		}
	}
	return s, nil
}

// Down stops everything Up started (Slurm first, so that agents of ending
// jobs can still write). Safe to call more than once.
func (s *Stack) Down() error {
	var errs []error
	if s.Slurm != nil {
		errs = append(errs, s.Slurm.Stop())
	}
	s.Agent.StopNodeAgents(30 * time.Second)
	if s.Prometheus != nil {
		errs = append(errs, s.Prometheus.Stop())
	}
	if s.Elasticsearch != nil && !s.Elasticsearch.External {
		errs = append(errs, s.Elasticsearch.Stop())
	}
	return errors.Join(errs...)
}

// Describe writes where the data is: URLs, credentials, configuration and
// log files.
func (s *Stack) Describe(w io.Writer) {
	fmt.Fprintf(w, "Jobsight stack in %s\n", s.Dir)
	if es := s.Elasticsearch; es != nil {
		if es.External {
			fmt.Fprintf(w, "  Elasticsearch API: %s (external cluster, user %q)\n", es.URL, es.User)
		} else {
			fmt.Fprintf(w, "  Elasticsearch API: %s  credentials (user:password) in %s\n    data in %s, log %s\n",
				es.URL, filepath.Join(es.Dir, "zinc.credentials"), es.Dir, es.Log)
		}
	}
	if p := s.Prometheus; p != nil {
		fmt.Fprintf(w, "  Prometheus:        %s  (remote write %s/api/v1/write), log %s\n", p.URL, p.URL, p.Log)
	}
	if a := s.Agent; a != nil {
		fmt.Fprintf(w, "  Agents: config %s, log %s, state %s\n", a.Config, a.Log, a.StateDir)
	}
	if sl := s.Slurm; sl != nil {
		fmt.Fprintf(w, "  %s cluster %q, node %s: export SLURM_CONF=%s\n", sl.Install, sl.ClusterName, sl.NodeName, sl.Conf)
		if sl.Install.Prefix != "" {
			fmt.Fprintf(w, "    its commands: export PATH=%s/bin:$PATH\n", sl.Install.Prefix)
		}
		fmt.Fprintf(w, "    logs: %s, %s, %s\n", sl.CtldLog, sl.SlurmdLog, filepath.Join(sl.Dir, "log"))
	}
}
