package elasticsearch

import (
	"log/slog"

	"github.com/jobsight/jobsight/internal/config"
)

// FromConfig returns a client for an elasticsearch section of a product's
// configuration (the agent's, the site command's, the cluster-state
// collector's), reading the password from its file; an error names the
// option, never the secret. It does not contact the server. log receives
// debug and warning messages; slog.Default() when nil. Each of opts
// adjusts the client's Config before it is made (a caller's own timeout or
// retries).
func FromConfig(c config.Elasticsearch, log *slog.Logger, opts ...func(*Config)) (*Client, error) {
	password, err := c.Password()
	if err != nil {
		return nil, err
	}
	cfg := Config{URLs: c.URLs, Username: c.Username, Password: password, CACertFile: c.CAFile,
		Timeout: c.Timeout, Logger: log}
	for _, o := range opts {
		o(&cfg)
	}
	return New(cfg)
}

// OncePerURL makes a client try each URL once and never wait between
// tries: for a caller someone is waiting on (`jobsight advise` in sbatch),
// a store that is down costs a refused connection per node, no backoff.
func OncePerURL(c *Config) {
	c.NoBackoff = true
	c.MaxRetries = len(c.URLs) - 1
	if c.MaxRetries == 0 {
		c.MaxRetries = -1
	}
}
