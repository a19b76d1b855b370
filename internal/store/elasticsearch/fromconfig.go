package elasticsearch

import (
	"log/slog"

	"github.com/jobsight/jobsight/internal/config"
)

// FromConfig returns a client for an elasticsearch section of a product's
// configuration (the agent's, the site command's, the cluster-state
// collector's), reading the password from its file; an error names the
// option, never the secret. It does not contact the server. log receives
// debug and warning messages; slog.Default() when nil.
func FromConfig(c config.Elasticsearch, log *slog.Logger) (*Client, error) {
	password, err := c.Password()
	if err != nil {
		return nil, err
	}
	return New(Config{URLs: c.URLs, Username: c.Username, Password: password, CACertFile: c.CAFile,
		Timeout: c.Timeout, Logger: log})
}
