package models

import (
	"fmt"
	"strings"

	"github.com/jobsight/jobsight/internal/config"
)

// Backends whose TLS trust the settings configure (TrustFor).
const (
	TrustElasticsearch = "elasticsearch"
	TrustPrometheus    = "prometheus"
	TrustAllocations   = "allocations"
	TrustGrafana       = "grafana"
)

// TrustFor returns the PEM bundles trusted for backend, in addition to
// the system's CAs: the shared tlsCaCert and the backend's own for
// Elasticsearch, Prometheus and allocationsUrl; grafanaTlsCaCert alone
// for Grafana's signing keys.
func (s *Settings) TrustFor(backend string) []string {
	var own string
	switch backend {
	case TrustElasticsearch:
		own = s.ElasticsearchTLSCACert
	case TrustPrometheus:
		own = s.PrometheusTLSCACert
	case TrustAllocations:
		own = s.AllocationsTLSCACert
	case TrustGrafana:
		return nonEmpty(s.GrafanaTLSCACert)
	}
	return nonEmpty(s.TLSCACert, own)
}

func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// tlsProblems checks that each CA setting holds PEM certificates that
// parse.
func (s *Settings) tlsProblems() []error {
	var errs []error
	for _, f := range []struct{ key, pem string }{
		{"tlsCaCert", s.TLSCACert},
		{"elasticsearchTlsCaCert", s.ElasticsearchTLSCACert},
		{"prometheusTlsCaCert", s.PrometheusTLSCACert},
		{"allocationsTlsCaCert", s.AllocationsTLSCACert},
		{"grafanaTlsCaCert", s.GrafanaTLSCACert},
	} {
		switch {
		case f.pem == "":
		case !strings.Contains(f.pem, "-----BEGIN CERTIFICATE-----"):
			errs = append(errs, &FieldError{Field: f.key, Problem: "must be a PEM certificate bundle (-----BEGIN CERTIFICATE-----)"})
		case config.CheckPEM([]byte(f.pem)) != nil:
			errs = append(errs, &FieldError{Field: f.key, Problem: fmt.Sprintf("must be a PEM certificate bundle: %v", config.ErrNoPEMCertificate)})
		}
	}
	return errs
}
