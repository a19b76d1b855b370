package promremote

import (
	"fmt"
	"log/slog"

	"github.com/jobsight/jobsight/internal/config"
)

// FromConfig returns a client for a prometheus section of a product's
// configuration (the agent's, the cluster-state collector's), reading the
// bearer token and the password from their files; an error names the
// option (prometheus.password_file, prometheus.ca_file,
// prometheus.remote_write_url), never a
// secret. It does not contact the server. log receives retry messages;
// slog.Default() when nil.
func FromConfig(c config.RemoteWrite, log *slog.Logger) (*Client, error) {
	token, password, err := c.Secrets()
	if err != nil {
		return nil, err
	}
	cfg := Config{URL: c.RemoteWriteURL, BearerToken: token, Username: c.Username, Password: password,
		Tenant: c.Tenant, TenantHeader: c.TenantHeader, Timeout: c.Timeout, Logger: log}
	if c.CAFile != "" {
		// The private CA is trusted in addition to the system's.
		if cfg.Transport, err = config.TrustTransport("prometheus.ca_file", c.CAFile); err != nil {
			return nil, err
		}
	}
	client, err := New(cfg)
	if err != nil {
		return nil, fmt.Errorf("prometheus.remote_write_url: %w", err)
	}
	return client, nil
}
