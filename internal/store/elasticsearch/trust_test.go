package elasticsearch

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jobsight/jobsight/internal/config"
	"github.com/jobsight/jobsight/internal/testca"
)

// TestCAFileAddsToTheSystemCAs: elasticsearch.ca_file makes a store with
// a private CA trusted (a real TLS handshake) in addition to the system's
// CAs: with the file set, a node whose certificate a CA of the system's
// signed is still trusted (the client library's own CA option would trust
// the file alone). Another CA's file is refused with the certificate
// problem named.
func TestCAFileAddsToTheSystemCAs(t *testing.T) {
	public, private, other := testca.New(t, "public CA"), testca.New(t, "site CA"), testca.New(t, "another CA")
	testca.System(t, public)
	es := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Elastic-Product", "Elasticsearch")
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"cluster_name":"tls","version":{"number":"8.19.0"}}`)
	})
	privSrv, pubSrv := private.Server(t, es), public.Server(t, es)
	info := func(url, caFile string) error {
		c, err := FromConfig(config.Elasticsearch{URLs: []string{url}, CAFile: caFile, Timeout: 5 * time.Second}, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Info(context.Background())
		return err
	}
	caFile := private.File(t)
	if err := info(privSrv.URL, caFile); err != nil {
		t.Errorf("store with the private CA, ca_file naming it: %v", err)
	}
	if err := info(pubSrv.URL, caFile); err != nil {
		t.Errorf("store with a CA of the system's, ca_file set: %v; want still trusted", err)
	}
	if err := info(privSrv.URL, other.File(t)); err == nil || !strings.Contains(err.Error(), "certificate signed by unknown authority") {
		t.Errorf("store with the private CA, another CA's file: %v; want refused, certificate signed by unknown authority", err)
	}
	if _, err := FromConfig(config.Elasticsearch{URLs: []string{privSrv.URL}, CAFile: "/nonexistent/ca.pem"}, nil); err == nil || !strings.Contains(err.Error(), "elasticsearch.ca_file") {
		t.Errorf("missing CA file: %v; want an error naming elasticsearch.ca_file", err)
	}
}
