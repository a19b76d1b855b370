package plugin

import (
	"crypto/tls"
	"fmt"
	"strings"

	"github.com/grafana/grafana-plugin-sdk-go/backend/httpclient"

	"github.com/jobsight/jobsight/internal/config"
	"github.com/jobsight/jobsight/pkg/models"
)

// trustTLS returns the TLS configuration of the client for backend
// (models.Trust*): the system's CAs plus the settings' bundles for that
// backend (models.Settings.TrustFor). Not the SDK's TLSOptions.CACertificate,
// which trusts its bundle instead of the system's CAs: a private store CA
// would then refuse every public certificate, Grafana's own among them.
func trustTLS(s *models.Settings, backend string) (httpclient.ConfigureTLSConfigFunc, error) {
	pool, err := config.TrustPEM([]byte(strings.Join(s.TrustFor(backend), "\n")))
	if err != nil {
		return nil, fmt.Errorf("the CA certificates for %s: %w", backend, err)
	}
	return func(_ httpclient.Options, c *tls.Config) {
		c.RootCAs = pool
		if c.MinVersion < tls.VersionTLS12 {
			c.MinVersion = tls.VersionTLS12
		}
	}, nil
}
