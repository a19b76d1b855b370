package clusterstate

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseConstants(t *testing.T) {
	t.Parallel()
	yamlIn := `# allocations of the site
allocations:
  - cluster: c
    account: a
    resource: gpu
    hours: 8766
    periodDays: 365
    start: 2026-01-01
  - {cluster: c, resource: cpu, hours: 1000000}
constants:
  users: 120
  grid_zone: DE
`
	want := `{"allocations":[{"cluster":"c","account":"a","resource":"gpu","hours":8766,"periodDays":365,"start":"2026-01-01"},` +
		`{"cluster":"c","resource":"cpu","hours":1000000,"periodDays":365}],"constants":{"grid_zone":"DE","users":120}}`
	for name, in := range map[string]string{"yaml": yamlIn, "json": want} {
		c, err := ParseConstants(strings.NewReader(in))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		b, _ := json.Marshal(c)
		if string(b) != want {
			t.Errorf("%s:\n%s\nwant\n%s", name, b, want)
		}
	}
	c, err := ParseConstants(strings.NewReader(""))
	if b, _ := json.Marshal(c); err != nil || string(b) != `{"allocations":[],"constants":{}}` {
		t.Errorf("empty file: %s %v", b, err)
	}
}

// Every problem is named by its field.
func TestParseConstantsErrors(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"allocation: []": "allocation: unknown field",
		"allocations: [{cluster: c, resource: gpu, hours: 1, hour: 2}]":                               "allocations[0]: hour: unknown field",
		"allocations: [{cluster: c, resource: gpu, hours: 0}]":                                        "allocations[0].hours must be positive",
		"allocations: [{resource: gpu, hours: 1}]":                                                    "allocations[0].cluster is required",
		"allocations: [{cluster: c, resource: tpu, hours: 1}]":                                        `allocations[0].resource must be cpu or gpu, got "tpu"`,
		"allocations: [{cluster: c, resource: gpu, hours: many}]":                                     "allocations[0]: hours: want float64, got string",
		"allocations: [{cluster: c, resource: gpu, hours: 1, start: soon}]":                           `allocations[0].start "soon" is not a date`,
		"allocations: [{cluster: c, resource: gpu, hours: 1, periodDays: 9999}]":                      "allocations[0].periodDays must be between",
		"allocations: [{cluster: c, resource: gpu, hours: 1}, {cluster: c, resource: gpu, hours: 2}]": "allocations[1]: the same cluster",
		"constants: {'has space': 1}":                                                                 "constants.has space: a name is",
		"allocations: {cluster: c}":                                                                   "allocations: want []json.RawMessage",
		"[1, 2":                                                                                       "not YAML or JSON",
	} {
		_, err := ParseConstants(strings.NewReader(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseConstants(%q) = %v, want %q", in, err, want)
		}
	}
}

// The file is re-read when it changes; a broken change keeps the last good
// content.
func TestConstantsFileReload(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "constants.yaml")
	write := func(s string, mod time.Time) {
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, mod, mod); err != nil {
			t.Fatal(err)
		}
	}
	write("constants: {users: 1}\n", time.Unix(1000, 0))
	f, err := OpenConstants(path, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	get := func() string {
		rec := httptest.NewRecorder()
		f.ServeHTTP(rec, httptest.NewRequest("GET", "/constants", nil))
		if ct := rec.Header().Get("Content-Type"); ct != "application/json" || rec.Code != 200 {
			t.Errorf("status %d content type %q", rec.Code, ct)
		}
		return rec.Body.String()
	}
	if got := get(); got != `{"allocations":[],"constants":{"users":1}}` {
		t.Errorf("first: %s", got)
	}
	write("constants: {users: 2}\n", time.Unix(2000, 0))
	if got := get(); got != `{"allocations":[],"constants":{"users":2}}` {
		t.Errorf("after a change: %s", got)
	}
	write("constants: {users: 3\n", time.Unix(3000, 0))
	if got := get(); got != `{"allocations":[],"constants":{"users":2}}` {
		t.Errorf("after a broken change: %s", got)
	}
	write("allocations: [{cluster: c, resource: gpu, hours: -1}]\n", time.Unix(4000, 0))
	if _, err := OpenConstants(path, nil); err == nil || !strings.Contains(err.Error(), "allocations[0].hours must be positive") ||
		!strings.Contains(err.Error(), path) {
		t.Errorf("a bad file at start: %v", err)
	}
	rec := httptest.NewRecorder()
	f.ServeHTTP(rec, httptest.NewRequest("POST", "/constants", nil))
	if rec.Code != 405 {
		t.Errorf("POST: %d", rec.Code)
	}
}

func TestConfig(t *testing.T) {
	t.Parallel()
	c, err := ParseConfig(strings.NewReader("cluster: c1\n"))
	if err != nil || c.Interval != 30*time.Second || c.Elasticsearch.Index != DefaultIndex || !c.NodeSeries ||
		c.Elasticsearch.LostAfter != DefaultLostAfter || c.Elasticsearch.JobIndex != "jobsight-jobs" ||
		c.Elasticsearch.UnmonitoredAfter != DefaultUnmonitoredAfter {
		t.Fatalf("defaults: %+v %v", c, err)
	}
	for in, want := range map[string]string{
		"":                                                                   "cluster: required",
		"cluster: c1\nintervall: 5s\n":                                       `unknown option "intervall" at the top level`,
		"cluster: c1\nslurm: {sqeue: x}\n":                                   `unknown option "sqeue" in section slurm`,
		"cluster: c1\ninterval: 1s\n":                                        "interval: 1s is below 5s",
		"cluster: c1\ndocument_interval: 10s\n":                              "document_interval: 10s is shorter than interval",
		"cluster: c1\nlisten: nowhere\n":                                     "listen:",
		"cluster: c1\nlisten: 0.0.0.0:9310\n":                                "listen: \"0.0.0.0:9310\" is reachable from other hosts: set listen_token_file",
		"cluster: c1\nlisten: ':9310'\n":                                     "listen: \":9310\" is reachable from other hosts",
		"cluster: c1\nlisten: cs.example.org:9310\n":                         "is reachable from other hosts",
		"cluster: c1\nlisten_tls_cert: /c.pem\n":                             "listen_tls_cert: listen_tls_cert and listen_tls_key go together",
		"cluster: c1\nlisten: ''\nlisten_token_file: /t\n":                   "listen: empty (nothing is served)",
		"cluster: 'a b'\n":                                                   "cluster:",
		"cluster: c1\nelasticsearch: {index: X}\n":                           "elasticsearch.index:",
		"cluster: c1\nelasticsearch: {urls: [es]}\n":                         "elasticsearch.urls[0]:",
		"cluster: c1\nprometheus: {remote_write_url: x, username: u}\n":      "prometheus.remote_write_url:",
		"cluster: c1\nelasticsearch: {lost_after: 5m}\n":                     "elasticsearch.lost_after: 5m0s is below 15m",
		"cluster: c1\nelasticsearch: {job_index: Jobs}\n":                    "elasticsearch.job_index:",
		"cluster: c1\nelasticsearch: {node_index: jobsight-cluster-state}\n": "elasticsearch.node_index: must differ",
		"cluster: c1\nelasticsearch: {unmonitored_after: 30s}\n":             "elasticsearch.unmonitored_after: 30s is outside 1m-24h",
		"cluster: c1\nelasticsearch: {unmonitored_after: 25h}\n":             "elasticsearch.unmonitored_after: 25h0m0s is outside 1m-24h",
		"cluster: c1\nelasticsearch: {unmonitored_after: -5m}\n":             "elasticsearch.unmonitored_after: -5m0s is outside 1m-24h",
		"cluster: c1\nelasticsearch: {unmonitored_after: soon}\n":            "line 2: cannot unmarshal !!str `soon` into time.Duration",
	} {
		_, err := ParseConfig(strings.NewReader(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseConfig(%q) = %v, want %q", in, err, want)
		}
	}
}

func TestListenAcceptsLoopbackOrAToken(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		"cluster: c1\n", // the default, 127.0.0.1:9310
		"cluster: c1\nlisten: '[::1]:9310'\n",
		"cluster: c1\nlisten: localhost:9310\n",
		"cluster: c1\nlisten: 0.0.0.0:9310\nlisten_token_file: /etc/jobsight/collector-token\n",
		"cluster: c1\nlisten: 0.0.0.0:9310\nlisten_token_file: /t\nlisten_tls_cert: /c.pem\nlisten_tls_key: /k.pem\n",
	} {
		if _, err := ParseConfig(strings.NewReader(in)); err != nil {
			t.Errorf("ParseConfig(%q): %v", in, err)
		}
	}
}
