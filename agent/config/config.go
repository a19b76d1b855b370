// Package config is the agent's configuration: one YAML file, decoded
// strictly (an unknown key is an error naming it), where every option has a
// default, a doc line, and a validation error that names the option.
// docs/agent-config.md lists them all; a test keeps the two in step. The
// store sections, the decoding and the secret files are the ones every
// product shares (internal/config).
package config

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/jobsight/jobsight/agent/emissions"
	"github.com/jobsight/jobsight/internal/analysis"
	shared "github.com/jobsight/jobsight/internal/config"
	"github.com/jobsight/jobsight/internal/jobmodel"
)

// Config is the agent's configuration.
type Config struct {
	// Cluster is the Slurm cluster name qualifying every id. Default: the
	// SLURM_CLUSTER_NAME of the prolog environment, else Slurm's ClusterName.
	Cluster string `yaml:"cluster"`
	// Node is this host's name as Slurm knows it. Default: short host name.
	Node string `yaml:"node"`
	// Interval between samples: 1s to 5m.
	Interval time.Duration `yaml:"interval"`
	// FlushInterval between node-document updates: Interval to 10m.
	FlushInterval time.Duration `yaml:"flush_interval"`
	// ActiveThresholdCores: CPU use above this counts as active time.
	ActiveThresholdCores float64 `yaml:"active_threshold_cores"`
	// StoreJobName stores the Slurm job name in documents.
	StoreJobName bool `yaml:"store_job_name"`
	// StateDir holds lock, pid and checkpoint files.
	StateDir string `yaml:"state_dir"`
	// LogFile is where a detached agent logs; "" or "-" means stderr.
	LogFile string `yaml:"log_file"`
	// LogLevel is debug, info, warn or error.
	LogLevel string `yaml:"log_level"`
	// OutputDir is where job documents go as files when no Elasticsearch is
	// configured (the standalone run mode).
	OutputDir string `yaml:"output_dir"`
	// CPUProfileDir, when set, makes every agent process write a CPU
	// profile of its whole life there (for diagnosing the agent's own cost).
	CPUProfileDir string `yaml:"cpu_profile_dir"`

	Cgroup   CgroupConfig `yaml:"cgroup"`
	ProcRoot string       `yaml:"proc_root"`
	// ProcMaxOpenPerJob is how many of one job's processes the agent
	// keeps /proc/<pid>/stat and io open for (two descriptors each); the
	// others are read by opening and closing their files in each pass, so
	// a job of many processes cannot exhaust the agent's descriptors.
	// 0 keeps none open.
	ProcMaxOpenPerJob int         `yaml:"proc_max_open_per_job"`
	Slurm             SlurmConfig `yaml:"slurm"`
	Spool             SpoolConfig `yaml:"spool"`
	// Elasticsearch is the job-history store. No URLs: disabled.
	Elasticsearch shared.ElasticsearchConfig `yaml:"elasticsearch"`
	Prometheus    PrometheusConfig           `yaml:"prometheus"`
	GPU           GPUConfig                  `yaml:"gpu"`
	Energy        EnergyConfig               `yaml:"energy"`
	Emissions     EmissionsConfig            `yaml:"emissions"`
	// Analysis is the post-job analysis run on the job's first node when
	// its document is final (docs/analysis.md).
	Analysis analysis.Config `yaml:"analysis"`
}

// GPUConfig says how the agent reads GPUs.
type GPUConfig struct {
	// Backend is auto (NVML, then AMD SMI, then the amd-smi CLI; none when
	// none answers), nvidia, amd, simulated or none. The simulated source
	// is only used when named here.
	Backend string `yaml:"backend"`
	// ActiveThreshold is the utilisation (0-1) above which a GPU counts as
	// active, and above which a GPU's average makes it an effective GPU.
	ActiveThreshold float64 `yaml:"active_threshold"`
	// PCIe reads PCIe throughput (NVML measures it over 20 ms per call,
	// two calls per GPU per sample, so it is off unless asked for).
	PCIe bool `yaml:"pcie"`
	// ActivityInterval is the shortest window of NVIDIA's GPU Performance
	// Monitoring (SM activity, tensor, DRAM, PCIe, NVLink; Hopper and
	// later): one window per GPU at most this often. 0 turns it off.
	ActivityInterval time.Duration `yaml:"activity_interval"`
	// AMDLibrary is the path of libamd_smi.so ("" searches the usual places).
	AMDLibrary string       `yaml:"amd_library"`
	Simulated  SimGPUConfig `yaml:"simulated"`
}

// EnergyConfig says how the agent reads the node's energy (docs/energy.md).
type EnergyConfig struct {
	// Enabled reads RAPL, /proc/stat and IPMI power and apportions them
	// to jobs; off, no energy is measured and none is named missing.
	Enabled bool `yaml:"enabled"`
	// SysfsRoot is where sysfs is mounted (RAPL under class/powercap).
	SysfsRoot string `yaml:"sysfs_root"`
	// IPMITool is the ipmitool to run for the node's DCMI power reading;
	// "" reads no node power.
	IPMITool string `yaml:"ipmitool"`
	// IPMIInterval is the time between power readings; IPMITimeout bounds
	// one reading.
	IPMIInterval time.Duration `yaml:"ipmi_interval"`
	IPMITimeout  time.Duration `yaml:"ipmi_timeout"`
}

// EmissionsConfig turns job energy into CO2e (docs/energy.md).
type EmissionsConfig struct {
	// Zone is the cluster's grid zone: an ISO 3166-1 country code of the
	// built-in table, or a live provider's zone; "" computes no emissions.
	Zone string `yaml:"zone"`
	// FactorGPerKWh replaces the table's factor (gCO2e/kWh) with the
	// site's own; FactorSource must then cite it.
	FactorGPerKWh float64             `yaml:"factor_g_per_kwh"`
	FactorSource  string              `yaml:"factor_source"`
	Live          LiveEmissionsConfig `yaml:"live"`
}

// LiveEmissionsConfig is an optional live carbon-intensity provider.
type LiveEmissionsConfig struct {
	// Provider is "" (none) or electricitymaps.
	Provider  string        `yaml:"provider"`
	URL       string        `yaml:"url"`
	TokenFile string        `yaml:"token_file"`
	Timeout   time.Duration `yaml:"timeout"`
}

// SimGPUConfig describes the simulated GPUs (backend: simulated).
type SimGPUConfig struct {
	Devices        int             `yaml:"devices"`
	MemoryBytes    shared.ByteSize `yaml:"memory_bytes"`
	Profile        string          `yaml:"profile"`
	DeviceProfiles map[int]string  `yaml:"device_profiles"`
	DropAfter      time.Duration   `yaml:"drop_after"`
}

// CgroupConfig says where the cgroup filesystem is.
type CgroupConfig struct {
	Root    string `yaml:"root"`    // default /sys/fs/cgroup
	Version string `yaml:"version"` // auto, v1, v2 or hybrid
	// Wait is how long to wait for the job's cgroup to appear after start.
	Wait time.Duration `yaml:"wait"`
}

// SlurmConfig says how the agent asks Slurm about the job.
type SlurmConfig struct {
	Scontrol string        `yaml:"scontrol"` // path of scontrol (the cluster name only)
	Squeue   string        `yaml:"squeue"`   // path of squeue (job metadata, as JSON)
	Timeout  time.Duration `yaml:"timeout"`  // per scontrol call
	// FinalStateWait is how long the agent waits after the job ends for
	// Slurm to report the final state and for the other nodes' documents.
	FinalStateWait time.Duration `yaml:"final_state_wait"`
}

// SpoolConfig bounds the on-disk spool.
type SpoolConfig struct {
	Dir      string          `yaml:"dir"`
	MaxBytes shared.ByteSize `yaml:"max_bytes"`
	// Linger is how long an agent whose job has ended keeps delivering
	// what waits in the spool (a store that was down) before it exits,
	// so final documents arrive even if no other job starts on the node.
	Linger time.Duration `yaml:"linger"`
}

// PrometheusConfig is the time-series store: a remote-write endpoint (no
// URL: disabled) and how often the agent pushes to it.
type PrometheusConfig struct {
	shared.RemoteWrite `yaml:",inline"`
	PushInterval       time.Duration `yaml:"push_interval"`
}

// Default returns the configuration with every default filled in.
func Default() Config {
	return Config{
		Interval:             5 * time.Second,
		FlushInterval:        30 * time.Second,
		ActiveThresholdCores: 0.05,
		StateDir:             "/var/lib/jobsight",
		LogFile:              "/var/log/jobsight/agent.log",
		LogLevel:             "info",
		OutputDir:            ".",
		Cgroup:               CgroupConfig{Root: "/sys/fs/cgroup", Version: "auto", Wait: 60 * time.Second},
		ProcRoot:             "/proc",
		ProcMaxOpenPerJob:    256,
		Slurm:                SlurmConfig{Scontrol: "scontrol", Squeue: "squeue", Timeout: 10 * time.Second, FinalStateWait: 2 * time.Minute},
		Spool:                SpoolConfig{Dir: "/var/spool/jobsight", MaxBytes: 64 << 20, Linger: 15 * time.Minute},
		Elasticsearch:        shared.DefaultElasticsearch(),
		Prometheus:           PrometheusConfig{RemoteWrite: shared.RemoteWrite{Timeout: 10 * time.Second}, PushInterval: 10 * time.Second},
		Analysis:             analysis.Default(),
		Energy: EnergyConfig{Enabled: true, SysfsRoot: "/sys", IPMITool: "ipmitool",
			IPMIInterval: time.Minute, IPMITimeout: 10 * time.Second},
		Emissions: EmissionsConfig{Live: LiveEmissionsConfig{URL: "https://api.electricitymap.org/v3", Timeout: 5 * time.Second}},
		GPU: GPUConfig{Backend: "auto", ActiveThreshold: 0.10, ActivityInterval: 2 * time.Second,
			Simulated: SimGPUConfig{Devices: 4, MemoryBytes: 80 << 30, Profile: "one-of-n", DropAfter: time.Minute}},
	}
}

// Load reads a configuration file over the defaults. An empty path gives
// the defaults.
func Load(path string) (Config, error) {
	if path == "" {
		c := Default()
		return c, c.Validate()
	}
	return shared.LoadFile(path, Parse)
}

// Parse decodes YAML over the defaults, strictly, and validates it.
func Parse(r io.Reader) (Config, error) {
	return shared.Parse(r, Default())
}

// Validate checks every option; each problem found is named by its option.
func (c *Config) Validate() error {
	var errs shared.Problems
	bad := errs.Add
	if c.Cluster != "" && !shared.ValidClusterName(c.Cluster) {
		bad("cluster", "%q: use 1-64 letters, digits, '.', '_' or '-'", c.Cluster)
	}
	if c.Interval < time.Second || c.Interval > 5*time.Minute {
		bad("interval", "%s is outside 1s..5m", c.Interval)
	}
	if c.FlushInterval < c.Interval || c.FlushInterval > 10*time.Minute {
		bad("flush_interval", "%s must be between interval (%s) and 10m", c.FlushInterval, c.Interval)
	}
	if c.ActiveThresholdCores < 0 || c.ActiveThresholdCores > 1024 {
		bad("active_threshold_cores", "%v is outside 0..1024", c.ActiveThresholdCores)
	}
	for _, d := range [][2]string{{"state_dir", c.StateDir}, {"cgroup.root", c.Cgroup.Root}, {"proc_root", c.ProcRoot}, {"spool.dir", c.Spool.Dir}, {"output_dir", c.OutputDir}} {
		if d[1] == "" {
			bad(d[0], "must not be empty")
		}
	}
	if c.ProcMaxOpenPerJob < 0 || c.ProcMaxOpenPerJob > 1<<16 {
		bad("proc_max_open_per_job", "%d is outside 0..65536", c.ProcMaxOpenPerJob)
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		bad("log_level", "%q: want debug, info, warn or error", c.LogLevel)
	}
	switch c.Cgroup.Version {
	case "auto", "v1", "v2", "hybrid":
	default:
		bad("cgroup.version", "%q: want auto, v1, v2 or hybrid", c.Cgroup.Version)
	}
	if c.Cgroup.Wait < 0 || c.Cgroup.Wait > 10*time.Minute {
		bad("cgroup.wait", "%s is outside 0..10m", c.Cgroup.Wait)
	}
	if c.Slurm.Squeue == "" {
		bad("slurm.squeue", "must not be empty")
	}
	if c.Slurm.Scontrol == "" {
		bad("slurm.scontrol", "must not be empty")
	}
	if c.Slurm.Timeout <= 0 || c.Slurm.Timeout > 5*time.Minute {
		bad("slurm.timeout", "%s is outside (0, 5m]", c.Slurm.Timeout)
	}
	if c.Slurm.FinalStateWait < 0 || c.Slurm.FinalStateWait > time.Hour {
		bad("slurm.final_state_wait", "%s is outside 0..1h", c.Slurm.FinalStateWait)
	}
	if c.Spool.Linger < 0 || c.Spool.Linger > 24*time.Hour {
		bad("spool.linger", "%s is outside 0..24h", c.Spool.Linger)
	}
	if c.Spool.MaxBytes < 1<<20 {
		bad("spool.max_bytes", "%d bytes is below the minimum 1MiB", c.Spool.MaxBytes)
	}
	errs = append(errs, c.Elasticsearch.Validate()...)
	for _, ix := range [][2]string{{"elasticsearch.job_index", c.Elasticsearch.JobIndex}, {"elasticsearch.node_index", c.Elasticsearch.NodeIndex}, {"elasticsearch.result_index", c.Elasticsearch.ResultIndex}} {
		if !shared.ValidIndexName(ix[1]) {
			bad(ix[0], "%q: index names are lowercase letters, digits, '.', '_' or '-'", ix[1])
		}
	}
	if c.Elasticsearch.JobIndex == c.Elasticsearch.NodeIndex {
		bad("elasticsearch.node_index", "must differ from job_index (%q)", c.Elasticsearch.JobIndex)
	}
	if c.Elasticsearch.ResultIndex == c.Elasticsearch.JobIndex || c.Elasticsearch.ResultIndex == c.Elasticsearch.NodeIndex {
		bad("elasticsearch.result_index", "must differ from job_index and node_index (%q)", c.Elasticsearch.ResultIndex)
	}
	if a, b, ok := jobmodel.OverlappingBases(c.Elasticsearch.JobIndex, c.Elasticsearch.NodeIndex, c.Elasticsearch.ResultIndex); ok {
		bad("elasticsearch", "index %q starts with %q: the monthly indices of %q (%s) would include it", b, a+"-", a, jobmodel.IndexPattern(a))
	}
	if c.Elasticsearch.Timeout <= 0 {
		bad("elasticsearch.timeout", "must be positive")
	}
	errs = append(errs, c.Prometheus.RemoteWrite.Validate()...)
	if c.Prometheus.PushInterval < c.Interval || c.Prometheus.PushInterval > 10*time.Minute {
		bad("prometheus.push_interval", "%s must be between interval (%s) and 10m", c.Prometheus.PushInterval, c.Interval)
	}
	switch c.GPU.Backend {
	case "auto", "nvidia", "amd", "simulated", "none":
	default:
		bad("gpu.backend", "%q: want auto, nvidia, amd, simulated or none", c.GPU.Backend)
	}
	if !(c.GPU.ActiveThreshold > 0 && c.GPU.ActiveThreshold < 1) {
		bad("gpu.active_threshold", "%v: want a utilisation ratio between 0 and 1 (e.g. 0.1)", c.GPU.ActiveThreshold)
	}
	if d := c.GPU.ActivityInterval; d != 0 && (d < 100*time.Millisecond || d > time.Hour) {
		bad("gpu.activity_interval", "%s: want 0 (off) or between 100ms (NVML's own refresh) and 1h", d)
	}
	if n := c.GPU.Simulated.Devices; n < 1 || n > 64 {
		bad("gpu.simulated.devices", "%d is outside 1..64", n)
	}
	if c.GPU.Simulated.MemoryBytes < 1<<20 {
		bad("gpu.simulated.memory_bytes", "%d bytes is below 1MiB", c.GPU.Simulated.MemoryBytes)
	}
	if !validProfile(c.GPU.Simulated.Profile) {
		bad("gpu.simulated.profile", "%q: want %s", c.GPU.Simulated.Profile, profileNames)
	}
	for i, p := range c.GPU.Simulated.DeviceProfiles {
		if i < 0 || i >= c.GPU.Simulated.Devices {
			bad(fmt.Sprintf("gpu.simulated.device_profiles[%d]", i), "no such device (devices: %d)", c.GPU.Simulated.Devices)
		} else if !validProfile(p) {
			bad(fmt.Sprintf("gpu.simulated.device_profiles[%d]", i), "%q: want %s", p, profileNames)
		}
	}
	if c.GPU.Simulated.DropAfter <= 0 {
		bad("gpu.simulated.drop_after", "must be positive")
	}
	errs = append(errs, c.validateEnergy()...)
	if err := c.Analysis.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errs.Err()
}

// validateEnergy checks the energy and emissions sections.
func (c *Config) validateEnergy() []error {
	var errs shared.Problems
	bad := errs.Add
	e := c.Energy
	if e.SysfsRoot == "" {
		bad("energy.sysfs_root", "must not be empty (default /sys)")
	}
	if e.IPMIInterval < 5*time.Second || e.IPMIInterval > time.Hour {
		bad("energy.ipmi_interval", "%s is outside 5s..1h", e.IPMIInterval)
	}
	if e.IPMITimeout <= 0 || e.IPMITimeout > e.IPMIInterval {
		bad("energy.ipmi_timeout", "%s must be positive and at most energy.ipmi_interval (%s)", e.IPMITimeout, e.IPMIInterval)
	}
	m := c.Emissions
	if m.FactorGPerKWh < 0 || m.FactorGPerKWh > 3000 {
		bad("emissions.factor_g_per_kwh", "%v is outside 0..3000 gCO2e/kWh", m.FactorGPerKWh)
	}
	if m.FactorGPerKWh > 0 && strings.TrimSpace(m.FactorSource) == "" {
		bad("emissions.factor_source", "must cite where emissions.factor_g_per_kwh comes from (e.g. \"supplier contract 2025\")")
	}
	if m.FactorSource != "" && m.FactorGPerKWh == 0 {
		bad("emissions.factor_source", "is set but emissions.factor_g_per_kwh is not")
	}
	if m.Zone == "" && (m.FactorGPerKWh > 0 || m.Live.Provider != "") {
		bad("emissions.zone", "must be set (an ISO 3166-1 country code, e.g. DE) when a factor or a live provider is configured")
	}
	if m.Zone != "" && m.FactorGPerKWh == 0 && !emissionZone(m.Zone) {
		bad("emissions.zone", "%q is not in the built-in table of grid emission factors (ISO 3166-1 codes such as DE, FRA, US; see docs/energy.md): set emissions.factor_g_per_kwh and factor_source for it", m.Zone)
	}
	switch m.Live.Provider {
	case "":
	case "electricitymaps":
		if !strings.HasPrefix(m.Live.URL, "http://") && !strings.HasPrefix(m.Live.URL, "https://") {
			bad("emissions.live.url", "%q: want an http:// or https:// URL", m.Live.URL)
		}
		if m.Live.Timeout <= 0 || m.Live.Timeout > time.Minute {
			bad("emissions.live.timeout", "%s is outside (0, 1m]", m.Live.Timeout)
		}
	default:
		bad("emissions.live.provider", "%q: want electricitymaps or nothing", m.Live.Provider)
	}
	return errs
}

func emissionZone(zone string) bool {
	_, ok := emissions.Lookup(zone)
	return ok
}

// profileNames are the simulated GPU load profiles (gpu.Profiles; the
// config package does not import the GPU code).
const profileNames = "idle, steady, one-of-n, dropping, memory-heavy, launch-bound or input-bound"

func validProfile(p string) bool {
	switch p {
	case "idle", "steady", "one-of-n", "dropping", "memory-heavy", "launch-bound", "input-bound":
		return true
	}
	return false
}
