package feedback

import (
	"errors"
	"io"
	"time"

	"github.com/jobsight/jobsight/internal/analysis"
	"github.com/jobsight/jobsight/internal/config"
	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/internal/site/advise"
	"github.com/jobsight/jobsight/internal/site/notify"
)

// DefaultConfigPath is where `jobsight` looks for its configuration.
const DefaultConfigPath = "/etc/jobsight/site.yaml"

// Config is the site command's configuration (docs/site-config.md): one
// YAML file, decoded strictly, every option with a default.
type Config struct {
	// Cluster qualifies bare job ids given on the command line.
	Cluster string `yaml:"cluster"`
	// Elasticsearch is where job documents and results are (the same
	// options as the agent's).
	Elasticsearch config.ElasticsearchConfig `yaml:"elasticsearch"`
	// Report is the credential `jobsight report` reads the store with: a
	// read-only user of its own, and the only one a setgid run uses.
	Report ReportConfig `yaml:"report"`
	// Prometheus is queried for the report charts; no URL: charts come
	// from the documents' summaries.
	Prometheus PrometheusQuery `yaml:"prometheus"`
	// Analysis holds the rules reports and re-analyses use.
	Analysis analysis.Config `yaml:"analysis"`
	// Notify is email delivery of reports.
	Notify notify.Config `yaml:"notify"`
	// History is the per-user and per-account roll-up.
	History HistoryConfig `yaml:"history"`
	// Access says who may read which job's report.
	Access AccessConfig `yaml:"access"`
	// JobURL is a link to a job's page put in reports, with {cluster},
	// {job_id} and {doc_id} replaced (URL-escaped); empty for none.
	JobURL string `yaml:"job_url"`
	// StateDir keeps the notify command's progress.
	StateDir string `yaml:"state_dir"`
	// Advise is `jobsight advise`, the advice sbatch shows through the
	// site's cli_filter.lua (docs/advise.md).
	Advise advise.Config `yaml:"advise"`
}

// PrometheusQuery is how to query Prometheus (the HTTP API, not remote write).
type PrometheusQuery struct {
	URL                   string `yaml:"url"`
	config.PrometheusAuth `yaml:",inline"`
	// CAFile is a PEM bundle of CAs trusted for https in addition to the
	// system's; empty for the system's alone (a setgid run ignores SSL_CERT_FILE, so a private CA is
	// named here).
	CAFile  string        `yaml:"ca_file"`
	Timeout time.Duration `yaml:"timeout"`
	// Tenant, when set, is sent in TenantHeader (X-Scope-OrgID when
	// empty) on every query, for a multi-tenant store.
	Tenant       string `yaml:"tenant"`
	TenantHeader string `yaml:"tenant_header"`
}

// ReportConfig is the report command's own Elasticsearch credential
// (docs/site-config.md, "A read-only credential for reports"): the user
// and its password file, both or neither. The connection (URLs, CA,
// timeout, indices) is the elasticsearch section's. Reports only read job
// documents, so the user needs read on the job index and nothing else.
type ReportConfig struct {
	Username     string `yaml:"username"`
	PasswordFile string `yaml:"password_file"`
}

// ErrNoReportCredential says that a setgid run would have to read with
// the elasticsearch section's (writing) credential.
var ErrNoReportCredential = errors.New("the setgid installation reads only with a read-only credential of its own: set report.username and report.password_file (docs/site-config.md); it never uses the elasticsearch section's credential")

// ReportElasticsearch is the connection `jobsight report` reads with: the
// elasticsearch section with the report credential in place of its own.
// With privileged (a setgid run) the elasticsearch section's credential
// is never used: without a report credential it is ErrNoReportCredential,
// unless the store takes no credential at all.
func (c *Config) ReportElasticsearch(privileged bool) (config.Elasticsearch, error) {
	es := c.Elasticsearch.Elasticsearch
	switch {
	case c.Report.Username != "":
		es.Username, es.PasswordFile = c.Report.Username, c.Report.PasswordFile
	case privileged && (es.Username != "" || es.PasswordFile != ""):
		return config.Elasticsearch{}, ErrNoReportCredential
	}
	return es, nil
}

// HistoryConfig is the history roll-up.
type HistoryConfig struct {
	Index    string        `yaml:"index"`
	Period   time.Duration `yaml:"period"`
	Advisory AdvisoryRule  `yaml:"advisory"`
}

// AccessConfig says who may read reports beyond the job's owner.
type AccessConfig struct {
	// Admins and AdminGroups may read every job's report.
	Admins      []string `yaml:"admins"`
	AdminGroups []string `yaml:"admin_groups"`
	// PIs maps an account to the users who lead it and may read its jobs.
	PIs map[string][]string `yaml:"pis"`
}

// DefaultConfig returns the configuration with every default.
func DefaultConfig() Config {
	return Config{
		Elasticsearch: config.DefaultElasticsearch(),
		Prometheus:    PrometheusQuery{Timeout: 10 * time.Second},
		Analysis:      analysis.Default(),
		Notify:        notify.Default(),
		History:       HistoryConfig{Index: jobmodel.DefaultHistoryIndex, Period: 24 * time.Hour, Advisory: DefaultAdvisory},
		StateDir:      "/var/lib/jobsight-site",
		Advise:        advise.Default(),
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
	if c.Cluster != "" && !config.ValidClusterName(c.Cluster) {
		bad("cluster", "%q: use 1-64 letters, digits, '.', '_' or '-'", c.Cluster)
	}
	if len(c.Elasticsearch.URLs) == 0 {
		bad("elasticsearch.urls", "at least one URL is needed")
	}
	indices := [][2]string{{"elasticsearch.job_index", c.Elasticsearch.JobIndex}, {"elasticsearch.result_index", c.Elasticsearch.ResultIndex},
		{"history.index", c.History.Index}}
	for i, ix := range indices {
		if !config.ValidIndexName(ix[1]) {
			bad(ix[0], "%q: index names are lowercase letters, digits, '.', '_' or '-'", ix[1])
		}
		for _, other := range indices[:i] {
			if ix[1] == other[1] {
				bad(ix[0], "must differ from %s (%q): one would overwrite the other's documents", other[0], ix[1])
			}
		}
	}
	errs = append(errs, c.Elasticsearch.Validate()...)
	if u := c.Prometheus.URL; u != "" && !config.HTTPURL(u) {
		bad("prometheus.url", "%q: want an http:// or https:// URL", u)
	}
	if c.Prometheus.BearerTokenFile != "" && c.Prometheus.PasswordFile != "" {
		bad("prometheus.bearer_token_file", "set either a bearer token or a username/password, not both")
	}
	c.Advise.Validate(bad)
	if (c.Report.Username == "") != (c.Report.PasswordFile == "") {
		bad("report.username", "username and password_file go together")
	}
	if c.Report.Username != "" && c.Report.Username == c.Elasticsearch.Username {
		bad("report.username", "%q is also elasticsearch.username: reports need a read-only user of their own", c.Report.Username)
	}
	errs = append(errs, config.ValidateTenant(c.Prometheus.Tenant, c.Prometheus.TenantHeader)...)
	if c.Prometheus.Timeout <= 0 {
		bad("prometheus.timeout", "must be positive")
	}
	if c.History.Period < time.Hour || c.History.Period > 366*24*time.Hour {
		bad("history.period", "%s is outside 1h..366d", c.History.Period)
	}
	if u := c.JobURL; u != "" && !config.HTTPURL(u) {
		bad("job_url", "%q: want an http:// or https:// URL template", u)
	}
	if c.StateDir == "" {
		bad("state_dir", "must not be empty")
	}
	for _, err := range []error{c.Analysis.Validate(), c.Notify.Validate(), c.History.Advisory.Validate()} {
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errs.Err()
}

// Indices are the indices the configuration names.
func (c *Config) Indices() Indices {
	return Indices{Job: c.Elasticsearch.JobIndex, Result: c.Elasticsearch.ResultIndex, History: c.History.Index}
}
