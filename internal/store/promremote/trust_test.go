package promremote

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

// TestRemoteWriteCAFile: prometheus.ca_file makes an endpoint with a
// private CA trusted (a real TLS handshake), in addition to the system's
// CAs, not instead of them; without it, or with another CA's file, the
// endpoint is refused with an error that names the certificate problem.
func TestRemoteWriteCAFile(t *testing.T) {
	public, private, other := testca.New(t, "public CA"), testca.New(t, "site CA"), testca.New(t, "another CA")
	testca.System(t, public)
	receiver := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
	})
	privSrv, pubSrv := private.Server(t, receiver), public.Server(t, receiver)
	series := []Series{{Name: "x", Samples: []Sample{{1, 1}}}}
	write := func(url, caFile string) error {
		rw := config.RemoteWrite{RemoteWriteURL: url + "/api/v1/write", Timeout: 5 * time.Second, CAFile: caFile}
		if errs := rw.Validate(); len(errs) > 0 {
			t.Fatalf("Validate: %v", errs)
		}
		c, err := FromConfig(rw, nil)
		if err != nil {
			t.Fatal(err)
		}
		return c.Write(context.Background(), series)
	}
	caFile := private.File(t)
	if err := write(privSrv.URL, caFile); err != nil {
		t.Errorf("endpoint with the private CA, ca_file naming it: %v", err)
	}
	if err := write(pubSrv.URL, caFile); err != nil {
		t.Errorf("endpoint with a CA of the system's, ca_file set: %v; want still trusted", err)
	}
	for name, f := range map[string]string{"no ca_file": "", "another CA's file": other.File(t)} {
		err := write(privSrv.URL, f)
		if err == nil || !strings.Contains(err.Error(), "certificate signed by unknown authority") {
			t.Errorf("endpoint with the private CA, %s: %v; want refused, certificate signed by unknown authority", name, err)
		}
	}
}
