package models_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/jobsight/jobsight/internal/testca"
	"github.com/jobsight/jobsight/pkg/models"
)

// Each backend trusts the shared tlsCaCert and its own bundle; Grafana's
// signing keys only grafanaTlsCaCert (the system's CAs are added by the
// plugin's clients).
func TestTrustForIsPerBackend(t *testing.T) {
	s := &models.Settings{TLSCACert: "shared", ElasticsearchTLSCACert: "es", PrometheusTLSCACert: "prom",
		AllocationsTLSCACert: "alloc", GrafanaTLSCACert: "grafana"}
	for backend, want := range map[string][]string{
		models.TrustElasticsearch: {"shared", "es"}, models.TrustPrometheus: {"shared", "prom"},
		models.TrustAllocations: {"shared", "alloc"}, models.TrustGrafana: {"grafana"},
	} {
		if got := s.TrustFor(backend); !reflect.DeepEqual(got, want) {
			t.Errorf("TrustFor(%s) = %q, want %q", backend, got, want)
		}
	}
	if got := (&models.Settings{TLSCACert: "shared"}).TrustFor(models.TrustGrafana); got != nil {
		t.Errorf("Grafana's keys with tlsCaCert only: %q; want the system's CAs alone", got)
	}
}

// A CA setting must hold a certificate that parses; a real one passes.
func TestCASettingsValidated(t *testing.T) {
	good := string(testca.New(t, "site CA").PEM)
	for _, key := range []string{"tlsCaCert", "elasticsearchTlsCaCert", "prometheusTlsCaCert", "allocationsTlsCaCert", "grafanaTlsCaCert"} {
		for value, want := range map[string]string{
			good:         "",
			"not a cert": "setting " + key + ": must be a PEM certificate bundle (-----BEGIN CERTIFICATE-----)",
			"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n": "setting " + key + ": must be a PEM certificate bundle: holds no PEM certificate",
		} {
			s, err := models.ParseJSONData([]byte(`{"elasticsearchUrl":"https://es:9200","prometheusUrl":"https://p:9090"}`))
			if err != nil {
				t.Fatal(err)
			}
			switch key {
			case "tlsCaCert":
				s.TLSCACert = value
			case "elasticsearchTlsCaCert":
				s.ElasticsearchTLSCACert = value
			case "prometheusTlsCaCert":
				s.PrometheusTLSCACert = value
			case "allocationsTlsCaCert":
				s.AllocationsTLSCACert = value
			case "grafanaTlsCaCert":
				s.GrafanaTLSCACert = value
			}
			err = s.Validate()
			switch {
			case want == "" && err != nil:
				t.Errorf("%s with a real certificate: %v", key, err)
			case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
				t.Errorf("%s = %.20q: %v; want %q", key, value, err, want)
			}
		}
	}
}
