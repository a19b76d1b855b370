package plugin

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
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

// trustHints say, per backend, which CAs its client trusts and where a
// missing one goes.
var trustHints = map[string]struct{ what, trusted, add string }{
	models.TrustElasticsearch: {"Elasticsearch", "tlsCaCert, elasticsearchTlsCaCert", "elasticsearchTlsCaCert (or tlsCaCert)"},
	models.TrustPrometheus:    {"Prometheus", "tlsCaCert, prometheusTlsCaCert", "prometheusTlsCaCert (or tlsCaCert)"},
	models.TrustAllocations:   {"allocationsUrl", "tlsCaCert, allocationsTlsCaCert", "allocationsTlsCaCert (or tlsCaCert)"},
	models.TrustGrafana:       {"Grafana's signing keys", "grafanaTlsCaCert; not tlsCaCert", "grafanaTlsCaCert"},
}

// untrustedError is a TLS handshake that failed because no trusted CA
// signed the server's certificate; its message names the settings that
// would add one.
type untrustedError struct {
	err     error
	host    string
	backend string
}

func (e *untrustedError) Error() string {
	h := trustHints[e.backend]
	return fmt.Sprintf("%v: no CA the plugin trusts for %s (the system's, %s) signed the certificate of %s: add its CA's PEM to %s",
		e.err, h.what, h.trusted, e.host, h.add)
}

func (e *untrustedError) Unwrap() error { return e.err }

// untrustedHint is the client middleware that turns an untrusted-CA
// handshake failure into an untrustedError for backend.
func untrustedHint(backend string) httpclient.Middleware {
	return httpclient.NamedMiddlewareFunc("jobsight-untrusted-ca", func(_ httpclient.Options, next http.RoundTripper) http.RoundTripper {
		return httpclient.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
			resp, err := next.RoundTrip(req)
			var unknown x509.UnknownAuthorityError
			var verify *tls.CertificateVerificationError
			if err != nil && (errors.As(err, &unknown) || errors.As(err, &verify)) {
				err = &untrustedError{err: err, host: req.URL.Host, backend: backend}
			}
			return resp, err
		})
	})
}

// withTrustHint is mws (the SDK's defaults when nil) with untrustedHint
// for backend added.
func withTrustHint(backend string, mws []httpclient.Middleware) []httpclient.Middleware {
	if mws == nil {
		mws = httpclient.DefaultMiddlewares()
	}
	return append(mws, untrustedHint(backend))
}
