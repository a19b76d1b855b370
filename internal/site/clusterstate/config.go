package clusterstate

import (
	"io"
	"net"
	"time"

	"github.com/jobsight/jobsight/internal/config"
	"github.com/jobsight/jobsight/internal/jobmodel"
)

// DefaultConfigPath is where `jobsight cluster-state` looks for its
// configuration.
const DefaultConfigPath = "/etc/jobsight/cluster-state.yaml"

// Config is the cluster-state collector's configuration
// (docs/cluster-state.md): one YAML file, decoded strictly, every option
// with a default.
type Config struct {
	// Cluster labels every series and document. Required.
	Cluster string `yaml:"cluster"`
	// Interval is the time between polls; each poll costs slurmctld one
	// sinfo and one squeue call. Default 30s, at least 5s.
	Interval time.Duration `yaml:"interval"`
	// DocumentInterval is the time bucket of the Elasticsearch history: one
	// document per cluster per bucket, from the bucket's first poll.
	// Default 5m; at least Interval.
	DocumentInterval time.Duration `yaml:"document_interval"`
	// QueueCPUBudget is the share of one core the queue's reading (squeue,
	// whose cost grows with the queue) may take on average: after each
	// read the next waits until its CPU time fits the budget, and the
	// polls between reuse the last answer (the series say how old:
	// jobsight_clusterstate_queue_age_seconds). Default 0.015 (1.5 %):
	// at 10,000 queued jobs the queue is read at every poll, at 100,000
	// about every other one. 0 reads it at every poll.
	QueueCPUBudget float64 `yaml:"queue_cpu_budget"`
	// NodeSeries writes the per-node series (jobsight_node_*); false keeps
	// only the partition and health series. Default true.
	NodeSeries bool `yaml:"node_series"`
	// Listen is the address serving /constants, /metrics and /healthz;
	// empty serves nothing. Default 127.0.0.1:9310.
	Listen string `yaml:"listen"`
	// ListenTokenFile names the file holding the bearer token that
	// /constants and /metrics require (Authorization: Bearer <token>);
	// /healthz stays open. Required when Listen is not a loopback address.
	ListenTokenFile string `yaml:"listen_token_file"`
	// ListenTLSCert and ListenTLSKey, both or neither, serve HTTPS.
	ListenTLSCert string `yaml:"listen_tls_cert"`
	ListenTLSKey  string `yaml:"listen_tls_key"`
	// ConstantsFile is the allocations and constants file served at
	// /constants (docs/cluster-state.md); empty serves an empty document.
	ConstantsFile string `yaml:"constants_file"`
	// Slurm says how to call Slurm.
	Slurm SlurmConfig `yaml:"slurm"`
	// Prometheus is the remote-write endpoint; no URL: no series.
	Prometheus PrometheusConfig `yaml:"prometheus"`
	// Elasticsearch is the history store; no URLs: no documents.
	Elasticsearch ElasticsearchConfig `yaml:"elasticsearch"`
	// Spool keeps what a store could not take, replayed later.
	Spool SpoolConfig `yaml:"spool"`
}

// SlurmConfig are the Slurm clients the collector runs.
type SlurmConfig struct {
	Sinfo  string `yaml:"sinfo"`  // default "sinfo" (from PATH)
	Squeue string `yaml:"squeue"` // default "squeue" (from PATH)
	// Conf, when set, is passed as SLURM_CONF to both.
	Conf string `yaml:"conf"`
	// Timeout bounds each call. Default 20s; never more than interval
	// (a poll's Slurm calls never run into the next poll).
	Timeout time.Duration `yaml:"timeout"`
}

// PrometheusConfig is a Prometheus remote-write endpoint (timeout default
// 30s).
type PrometheusConfig struct {
	config.RemoteWrite `yaml:",inline"`
}

// ElasticsearchConfig is the Elasticsearch cluster holding the history
// (timeout default 30s), and the agents' job and node documents of the
// cluster, where the collector closes the jobs whose agents vanished
// (docs/cluster-state.md, "Lost jobs").
type ElasticsearchConfig struct {
	config.Elasticsearch `yaml:",inline"`
	Index                string `yaml:"index"` // default jobsight-cluster-state
	// JobIndex, NodeIndex and ResultIndex are the agents' (default
	// jobsight-jobs, jobsight-nodes and jobsight-results): the bases of
	// their monthly indices.
	JobIndex    string `yaml:"job_index"`
	NodeIndex   string `yaml:"node_index"`
	ResultIndex string `yaml:"result_index"`
	// RetentionMonths is how many whole months of job, node and result
	// documents to keep: once a day the collector deletes the monthly
	// indices older than that (the current and the last month always
	// stay). 0, the default, keeps everything (docs/indices.md).
	RetentionMonths int `yaml:"retention_months"`
	// LostAfter is how long a job Slurm no longer lists may stay without
	// any update of its documents before the collector writes it final
	// as lost. Default 30m; 0 never closes a job.
	LostAfter time.Duration `yaml:"lost_after"`
	// UnmonitoredAfter is how long a job runs before a node of it that
	// has written no node document for it counts as running it without
	// an agent (jobsight_cluster_node_unreported_jobs). Default 5m,
	// 1m-24h; 0 turns the check off.
	UnmonitoredAfter time.Duration `yaml:"unmonitored_after"`
}

// SpoolConfig bounds the collector's spool.
type SpoolConfig struct {
	Dir      string          `yaml:"dir"` // default /var/spool/jobsight-cluster-state
	MaxBytes config.ByteSize `yaml:"max_bytes"`
}

// DefaultConfig returns the configuration with every default.
func DefaultConfig() Config {
	return Config{
		Interval:         30 * time.Second,
		DocumentInterval: 5 * time.Minute,
		QueueCPUBudget:   0.015,
		NodeSeries:       true,
		Listen:           "127.0.0.1:9310",
		Slurm:            SlurmConfig{Sinfo: "sinfo", Squeue: "squeue", Timeout: 20 * time.Second},
		Prometheus:       PrometheusConfig{config.RemoteWrite{Timeout: 30 * time.Second}},
		Elasticsearch: ElasticsearchConfig{Elasticsearch: config.Elasticsearch{Timeout: 30 * time.Second}, Index: DefaultIndex,
			JobIndex: "jobsight-jobs", NodeIndex: "jobsight-nodes", ResultIndex: "jobsight-results", LostAfter: DefaultLostAfter,
			UnmonitoredAfter: DefaultUnmonitoredAfter},
		Spool: SpoolConfig{Dir: "/var/spool/jobsight-cluster-state", MaxBytes: 64 << 20},
	}
}

// LoadConfig reads a configuration file over the defaults.
func LoadConfig(path string) (Config, error) {
	return config.LoadFile(path, ParseConfig)
}

// ParseConfig decodes YAML over the defaults, strictly, and validates it.
func ParseConfig(r io.Reader) (Config, error) {
	return config.Parse(r, DefaultConfig())
}

// Validate checks every option; each problem names its option.
func (c *Config) Validate() error {
	var errs config.Problems
	bad := errs.Add
	switch {
	case c.Cluster == "":
		bad("cluster", "required: the cluster name every series and document carries")
	case !config.ValidClusterName(c.Cluster):
		bad("cluster", "%q: use 1-64 letters, digits, '.', '_' or '-'", c.Cluster)
	}
	if c.Interval < 5*time.Second {
		bad("interval", "%s is below 5s: each poll is a call to slurmctld", c.Interval)
	}
	if c.QueueCPUBudget < 0 || c.QueueCPUBudget > 1 || c.QueueCPUBudget != c.QueueCPUBudget {
		bad("queue_cpu_budget", "%v: a share of one core from 0 (read the queue at every poll) to 1", c.QueueCPUBudget)
	}
	if c.DocumentInterval < c.Interval {
		bad("document_interval", "%s is shorter than interval (%s)", c.DocumentInterval, c.Interval)
	}
	if c.Listen != "" {
		if host, _, err := net.SplitHostPort(c.Listen); err != nil {
			bad("listen", "%q: want host:port (e.g. 127.0.0.1:9310)", c.Listen)
		} else if !loopback(host) && c.ListenTokenFile == "" {
			bad("listen", "%q is reachable from other hosts: set listen_token_file, the bearer token Grafana (the datasource's allocations token) and Prometheus send; a loopback address needs none", c.Listen)
		}
	}
	if (c.ListenTLSCert == "") != (c.ListenTLSKey == "") {
		bad("listen_tls_cert", "listen_tls_cert and listen_tls_key go together: set both or neither")
	}
	if c.Listen == "" && (c.ListenTokenFile != "" || c.ListenTLSCert != "") {
		bad("listen", "empty (nothing is served), yet listen_token_file or listen_tls_cert is set")
	}
	if c.Slurm.Sinfo == "" {
		bad("slurm.sinfo", "must not be empty")
	}
	if c.Slurm.Squeue == "" {
		bad("slurm.squeue", "must not be empty")
	}
	if c.Slurm.Timeout <= 0 {
		bad("slurm.timeout", "must be positive")
	}
	errs = append(errs, c.Prometheus.Validate()...)
	errs = append(errs, c.Elasticsearch.Validate()...)
	if !config.ValidIndexName(c.Elasticsearch.Index) {
		bad("elasticsearch.index", "%q: index names are lowercase letters, digits, '.', '_' or '-'", c.Elasticsearch.Index)
	}
	for _, ix := range [][2]string{{"elasticsearch.job_index", c.Elasticsearch.JobIndex}, {"elasticsearch.node_index", c.Elasticsearch.NodeIndex}, {"elasticsearch.result_index", c.Elasticsearch.ResultIndex}} {
		if !config.ValidIndexName(ix[1]) {
			bad(ix[0], "%q: index names are lowercase letters, digits, '.', '_' or '-'", ix[1])
		}
		if ix[1] == c.Elasticsearch.Index {
			bad(ix[0], "must differ from elasticsearch.index (%q)", ix[1])
		}
	}
	if a, b, ok := jobmodel.OverlappingBases(c.Elasticsearch.JobIndex, c.Elasticsearch.NodeIndex, c.Elasticsearch.ResultIndex, c.Elasticsearch.Index); ok {
		bad("elasticsearch", "index %q starts with %q: the monthly indices of %q (%s) would include it", b, a+"-", a, jobmodel.IndexPattern(a))
	}
	if r := c.Elasticsearch.RetentionMonths; r < 0 || r > MaxRetentionMonths {
		bad("elasticsearch.retention_months", "%d is outside 0-%d (0 keeps every month)", r, MaxRetentionMonths)
	}
	if l := c.Elasticsearch.LostAfter; l != 0 && l < MinLostAfter {
		bad("elasticsearch.lost_after", "%s is below %s: an agent updates a running job's node documents up to 10m apart, and finalizes an ended job within minutes (0 turns closing lost jobs off)", l, MinLostAfter)
	}
	if u := c.Elasticsearch.UnmonitoredAfter; u != 0 && (u < MinUnmonitoredAfter || u > MaxUnmonitoredAfter) {
		bad("elasticsearch.unmonitored_after", "%s is outside 1m-24h: an agent writes a running job's first node document one flush_interval (at most 10m) after the job starts, and a job without a report should show within a day (0 turns the check off)", u)
	}
	if c.Elasticsearch.Timeout <= 0 {
		bad("elasticsearch.timeout", "must be positive")
	}
	if (c.Prometheus.RemoteWriteURL != "" || len(c.Elasticsearch.URLs) > 0) && c.Spool.Dir == "" {
		bad("spool.dir", "must not be empty")
	}
	if c.Spool.MaxBytes < 0 {
		bad("spool.max_bytes", "must not be negative")
	}
	return errs.Err()
}

// loopback reports whether a listen host is reachable from this host only.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
