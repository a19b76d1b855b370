package stack

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestStartZincAnswersTheESAPIWithCredentials(t *testing.T) {
	if testing.Short() {
		t.Skip("builds (once) and starts ZincSearch")
	}
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	dir := t.TempDir()
	z, err := StartZinc(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer z.Stop()

	if !strings.HasPrefix(z.URL, "http://127.0.0.1:") || !strings.HasSuffix(z.URL, "/es") {
		t.Errorf("URL %q, want http://127.0.0.1:PORT/es", z.URL)
	}
	if z.User == "" || len(z.Password) < 16 {
		t.Errorf("credentials %q/%d chars, want a user and a generated password", z.User, len(z.Password))
	}
	if info, err := os.Stat(filepath.Join(dir, "zinc.credentials")); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("credentials file: %v, mode %v; want mode 0600", err, info)
	}

	// The info endpoint says Elasticsearch 8, with the product header the
	// Go client checks.
	resp, err := http.Get(z.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	var info struct {
		Version struct {
			Number string `json:"number"`
		} `json:"version"`
	}
	err = json.NewDecoder(resp.Body).Decode(&info)
	resp.Body.Close()
	if err != nil || !strings.HasPrefix(info.Version.Number, "8.") || resp.Header.Get("X-Elastic-Product") != "Elasticsearch" {
		t.Errorf("info: version %q, product %q, err %v; want 8.x and Elasticsearch",
			info.Version.Number, resp.Header.Get("X-Elastic-Product"), err)
	}

	// The generated credentials open the API; others do not.
	for _, tc := range []struct {
		password string
		want     int
	}{{z.Password, http.StatusOK}, {"wrong", http.StatusUnauthorized}} {
		req, _ := http.NewRequest(http.MethodGet, z.URL+"/_alias", nil)
		req.SetBasicAuth(z.User, tc.password)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("GET _alias with password %q: %s, want %d", tc.password, resp.Status, tc.want)
		}
	}

	if err := z.Stop(); err != nil {
		t.Fatal(err)
	}
	if !z.Exited() {
		t.Error("ZincSearch still runs after Stop")
	}
}

func TestStartElasticsearchUsesTheGivenCluster(t *testing.T) {
	pw := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pw, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvTestESURL, "https://es.example:9200/")
	t.Setenv(EnvTestESUser, "elastic")
	t.Setenv(EnvTestESPasswordFile, pw)
	t.Setenv(EnvTestESCAFile, "/etc/ca.pem")
	es, err := StartElasticsearch(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if !es.External || es.URL != "https://es.example:9200" || es.User != "elastic" || es.Password != "s3cret" || es.CACertFile != "/etc/ca.pem" {
		t.Errorf("got %+v %+v, want the external cluster's settings", es, es.Server)
	}
	if err := es.Stop(); err != nil {
		t.Errorf("Stop of an external cluster: %v", err)
	}

	t.Setenv(EnvTestESPasswordFile, filepath.Join(t.TempDir(), "missing"))
	if _, err := StartElasticsearch(context.Background(), t.TempDir()); err == nil || !strings.Contains(err.Error(), EnvTestESPasswordFile) {
		t.Errorf("missing password file: %v; want an error naming %s", err, EnvTestESPasswordFile)
	}
}

func TestZincCredentialsAreKeptPerDirectory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "zinc.credentials")
	u1, p1, err := zincCredentials(path)
	if err != nil {
		t.Fatal(err)
	}
	u2, p2, err := zincCredentials(path)
	if err != nil || u1 != u2 || p1 != p2 {
		t.Errorf("second read gave %q/%q (%v), want the first %q/%q", u2, p2, err, u1, p1)
	}
	_, p3, _ := zincCredentials(filepath.Join(t.TempDir(), "zinc.credentials"))
	if p3 == p1 {
		t.Error("two directories got the same generated password")
	}
	if err := os.WriteFile(path, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := zincCredentials(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("malformed credentials file: %v; want an error naming it", err)
	}
}
