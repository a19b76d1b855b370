package config

import (
	"fmt"
	"time"
)

// Elasticsearch is how a product reaches an Elasticsearch-API store: the
// options every product's elasticsearch section has, embedded inline in
// it (ElasticsearchConfig here, the cluster-state collector's own section
// with its index). No URLs: no store (or, for the site command, an
// error).
type Elasticsearch struct {
	// URLs are the nodes' base URLs, http:// or https://.
	URLs []string `yaml:"urls"`
	// Username and PasswordFile are the basic-auth user and the file
	// holding the password; both or neither.
	Username     string `yaml:"username"`
	PasswordFile string `yaml:"password_file"`
	// CAFile is a PEM bundle of CAs trusted for https in addition to the
	// system's (a private CA); empty for the system's alone.
	CAFile string `yaml:"ca_file"`
	// Timeout bounds each request.
	Timeout time.Duration `yaml:"timeout"`
}

// Password reads the password file; an error names
// elasticsearch.password_file, never the content.
func (e *Elasticsearch) Password() (string, error) {
	return ReadSecret("elasticsearch.password_file", e.PasswordFile)
}

// Validate checks the URLs and that username and password_file go
// together; each problem names its option (elasticsearch.urls[0]). The
// timeout and the index names are each product's to check.
func (e *Elasticsearch) Validate() []error {
	var errs []error
	for i, u := range e.URLs {
		if !HTTPURL(u) {
			errs = append(errs, problem(fmt.Sprintf("elasticsearch.urls[%d]", i), "%q: want an http:// or https:// URL", u))
		}
	}
	if (e.Username == "") != (e.PasswordFile == "") {
		errs = append(errs, problem("elasticsearch.username", "username and password_file go together"))
	}
	return errs
}

// ElasticsearchConfig is the job-history store, the elasticsearch section
// of the agent (docs/agent-config.md) and of the site command
// (docs/site-config.md): the connection and the indices of job, node and
// result documents. Its type name makes "section elasticsearch" in
// decoding errors.
type ElasticsearchConfig struct {
	Elasticsearch `yaml:",inline"`
	JobIndex      string `yaml:"job_index"`
	NodeIndex     string `yaml:"node_index"`
	ResultIndex   string `yaml:"result_index"`
}

// DefaultElasticsearch is the job-history store's defaults: no URLs, the
// jobsight-jobs, jobsight-nodes and jobsight-results indices, 10s per
// request.
func DefaultElasticsearch() ElasticsearchConfig {
	return ElasticsearchConfig{
		Elasticsearch: Elasticsearch{Timeout: 10 * time.Second},
		JobIndex:      "jobsight-jobs", NodeIndex: "jobsight-nodes", ResultIndex: "jobsight-results",
	}
}
