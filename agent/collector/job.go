package collector

import (
	"errors"
	"fmt"
	"os"
)

// Defaults for Config.
const (
	DefaultCgroupRoot  = "/sys/fs/cgroup"
	DefaultProcRoot    = "/proc"
	DefaultRescanEvery = 60
)

// Config says where the kernel's file systems are and which cgroup layout
// to assume. The zero value means the defaults.
type Config struct {
	// CgroupRoot is where the cgroup file systems are mounted
	// (default /sys/fs/cgroup).
	CgroupRoot string
	// ProcRoot is where procfs is mounted (default /proc).
	ProcRoot string
	// Version forces a cgroup layout; VersionAuto (default) detects it
	// from CgroupRoot. Forcing it is meant for tests on fixture trees.
	Version Version
	// RescanEvery is how many passes may go by before the step and task
	// cgroups are listed again even though no change was seen (default 60;
	// negative: only on change).
	RescanEvery int
	// MaxOpenProcesses is how many of the job's processes the proc
	// collector keeps /proc/<pid>/stat and io open for (default
	// DefaultMaxOpenProcesses; negative: none). Processes beyond it are
	// read by opening and closing their files in each pass.
	MaxOpenProcesses int
}

// withDefaults fills in unset fields and resolves VersionAuto.
func (c Config) withDefaults() (Config, error) {
	if c.CgroupRoot == "" {
		c.CgroupRoot = DefaultCgroupRoot
	}
	if c.ProcRoot == "" {
		c.ProcRoot = DefaultProcRoot
	}
	switch {
	case c.RescanEvery == 0:
		c.RescanEvery = DefaultRescanEvery
	case c.RescanEvery < 0:
		c.RescanEvery = 0
	}
	if c.Version > VersionHybrid {
		return c, fmt.Errorf("config: cgroup version %d: want auto, v1, v2 or hybrid", c.Version)
	}
	if c.Version == VersionAuto {
		v, err := Detect(c.CgroupRoot)
		if err != nil {
			return c, fmt.Errorf("config: %w", err)
		}
		c.Version = v
	}
	return c, nil
}

// Target names the Slurm job to follow on this node.
type Target struct {
	JobID uint64
	UID   uint32 // the job's owner (the v1 layout names it)
	// SLUID is the job's SLUID ("sBX9M87FEJGA00"; empty when unknown), by
	// which Slurm 26.05's cgroup/v2 names the job's directory unless
	// cgroup.conf sets CgroupJobIdPaths=yes. It must be empty or valid
	// (ValidSLUID).
	SLUID string
	Host  string // the slurmd node name, needed only with several slurmd per host
}

// Set is the collectors of one job, in the order they must run in a pass
// (the proc collector uses the pids the cgroup collector just listed). A
// Set is itself a Collector; a sampler that wants per-collector error
// counts ranges over it instead.
type Set []Collector

// Name implements Collector.
func (s Set) Name() string { return "job" }

// Collect runs every collector in order; the error joins theirs.
func (s Set) Collect(smp *Sample) error {
	var errs []error
	for _, c := range s {
		if err := c.Collect(smp); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Close closes every collector.
func (s Set) Close() error {
	var errs []error
	for _, c := range s {
		if err := c.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// ErrIncomplete says that only some of a job's cgroup v1 controller
// directories exist yet: Slurm creates them one after another when the job
// starts, so a caller should retry for a moment, then settle with
// NewIncomplete. It wraps os.ErrNotExist.
var ErrIncomplete = fmt.Errorf("some of the job's cgroup controllers are not created yet: %w", os.ErrNotExist)

// New builds the collectors for a Slurm job: the cgroup collector for the
// host's layout, then the proc collector for its processes. A job with no
// cgroup on this node gives an error wrapping os.ErrNotExist; one whose v1
// memory, cpuacct and cpuset directories do not all exist yet gives
// ErrIncomplete.
func New(cfg Config, job Target) (Set, error) { return newJob(cfg, job, false) }

// NewIncomplete is New that accepts a job whose v1 controllers are not all
// there (a host without a cpuset hierarchy): what is absent stays missing.
func NewIncomplete(cfg Config, job Target) (Set, error) { return newJob(cfg, job, true) }

func newJob(cfg Config, job Target, partial bool) (Set, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	dirs, err := FindJobDirs(cfg.CgroupRoot, cfg.Version, job)
	if err != nil {
		return nil, err
	}
	if !partial && dirs.Version != VersionV2 && (dirs.Memory == "" || dirs.CPUAcct == "" || dirs.CPUSet == "") {
		return nil, fmt.Errorf("job %d: memory %q, cpuacct %q, cpuset %q: %w", job.JobID, dirs.Memory, dirs.CPUAcct, dirs.CPUSet, ErrIncomplete)
	}
	return newSet(cfg, dirs, false)
}

// NewCgroupDir builds collectors for an arbitrary cgroup and everything
// below it (not a Slurm layout): dirs.Unified for v2, or the per-controller
// directories for v1 and hybrid hosts. cfg.Version must match dirs.
func NewCgroupDir(cfg Config, dirs JobDirs) (Set, error) {
	if cfg.Version == VersionAuto {
		cfg.Version = dirs.Version
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	dirs.Version = cfg.Version
	return newSet(cfg, dirs, true)
}

func newSet(cfg Config, dirs JobDirs, tree bool) (Set, error) {
	switch cfg.Version {
	case VersionV1, VersionHybrid:
		l := layoutSlurmV1
		if tree {
			l = layoutTree
		}
		cg, err := newCgroupV1(dirs, l, cfg.RescanEvery)
		if err != nil {
			return nil, err
		}
		return Set{cg, NewProcCollector(cfg.ProcRoot, cg, cfg.MaxOpenProcesses)}, nil
	case VersionV2:
		if dirs.Unified == "" {
			return nil, fmt.Errorf("cgroup v2 collector: no cgroup directory given")
		}
		l := layoutSlurmV2
		if tree {
			l = layoutTree
		}
		cg, err := newCgroupV2(dirs.Unified, l, cfg.RescanEvery)
		if err != nil {
			return nil, err
		}
		return Set{cg, NewProcCollector(cfg.ProcRoot, cg, cfg.MaxOpenProcesses)}, nil
	}
	return nil, fmt.Errorf("cgroup version %s not supported", cfg.Version)
}
