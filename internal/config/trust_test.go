package config_test

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jobsight/jobsight/internal/config"
	"github.com/jobsight/jobsight/internal/testca"
)

// TestTrustTransportAddsToTheSystemCAs: a CA file is trusted in addition
// to the system's CAs, not instead of them. Real TLS handshakes: a server
// whose certificate the private CA signed, one signed by a CA in the
// (test's stand-in) system pool, and one signed by neither, which is
// refused as signed by an unknown authority.
func TestTrustTransportAddsToTheSystemCAs(t *testing.T) {
	public, private, other := testca.New(t, "public CA"), testca.New(t, "site CA"), testca.New(t, "unknown CA")
	testca.System(t, public)
	pubSrv := public.Server(t, testca.OK(`{}`))
	privSrv := private.Server(t, testca.OK(`{}`))
	otherSrv := other.Server(t, testca.OK(`{}`))

	tr, err := config.TrustTransport("prometheus.ca_file", private.File(t))
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	defer tr.CloseIdleConnections()
	for name, url := range map[string]string{"private CA": privSrv.URL, "system CA": pubSrv.URL} {
		resp, err := c.Get(url)
		if err != nil {
			t.Errorf("%s server: %v; want it trusted", name, err)
			continue
		}
		resp.Body.Close()
	}
	_, err = c.Get(otherSrv.URL)
	if err == nil || !strings.Contains(err.Error(), "certificate signed by unknown authority") {
		t.Errorf("server of a CA neither named nor in the system pool: %v; want refused, signed by unknown authority", err)
	}

	// No file: the system's CAs alone.
	tr, err = config.TrustTransport("prometheus.ca_file", "")
	if err != nil {
		t.Fatal(err)
	}
	c = &http.Client{Transport: tr, Timeout: 10 * time.Second}
	if resp, err := c.Get(pubSrv.URL); err != nil {
		t.Errorf("system CA without a CA file: %v", err)
	} else {
		resp.Body.Close()
	}
	if _, err := c.Get(privSrv.URL); err == nil {
		t.Error("private CA without a CA file: trusted; want refused")
	}
}

// A CA file that is missing or holds no certificate is an error naming
// the option.
func TestTrustFileErrorsNameTheOption(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.pem")
	if err := os.WriteFile(junk, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{junk, filepath.Join(dir, "missing.pem")} {
		if _, err := config.TrustFile("elasticsearch.ca_file", p); err == nil || !strings.HasPrefix(err.Error(), "elasticsearch.ca_file: ") {
			t.Errorf("TrustFile(%s): %v; want an error naming elasticsearch.ca_file", p, err)
		}
		if err := config.CheckCAFile("prometheus.ca_file", p); err == nil || !strings.HasPrefix(err.Error(), "prometheus.ca_file: ") {
			t.Errorf("CheckCAFile(%s): %v; want an error naming prometheus.ca_file", p, err)
		}
	}
	if _, err := config.TrustPEM([]byte("junk")); !errors.Is(err, config.ErrNoPEMCertificate) {
		t.Errorf("TrustPEM(junk): %v", err)
	}
}

// The remote-write section's ca_file is checked: readable, a PEM bundle,
// and with an https URL (an http:// URL uses no TLS).
func TestRemoteWriteCAFileValidated(t *testing.T) {
	ca := testca.New(t, "site CA").File(t)
	junk := filepath.Join(t.TempDir(), "junk.pem")
	if err := os.WriteFile(junk, []byte("junk"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		url, file string
		ok        bool
	}{
		{"https://prom:9090/api/v1/write", ca, true},
		{"https://prom:9090/api/v1/write", junk, false},
		{"https://prom:9090/api/v1/write", "/nonexistent/ca.pem", false},
		{"http://prom:9090/api/v1/write", ca, false},
	} {
		rw := config.RemoteWrite{RemoteWriteURL: tc.url, Timeout: time.Second, CAFile: tc.file}
		errs := rw.Validate()
		switch {
		case tc.ok && len(errs) > 0:
			t.Errorf("%s with %s: %v", tc.url, tc.file, errs)
		case !tc.ok && (len(errs) != 1 || !strings.HasPrefix(errs[0].Error(), "prometheus.ca_file: ")):
			t.Errorf("%s with %s: %v; want one error naming prometheus.ca_file", tc.url, tc.file, errs)
		}
	}
}
