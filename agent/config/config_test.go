package config

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jobsight/jobsight/agent/gpu"
	"github.com/jobsight/jobsight/internal/testca"
)

func TestDefaultsAreValid(t *testing.T) {
	t.Parallel()
	c := Default()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestParseOverridesDefaults(t *testing.T) {
	t.Parallel()
	c, err := Parse(strings.NewReader(`
cluster: hpc1
interval: 1s
flush_interval: 10s
spool: {max_bytes: 8MiB}
elasticsearch:
  urls: [http://127.0.0.1:9200]
prometheus:
  remote_write_url: http://127.0.0.1:9090/api/v1/write
  push_interval: 2s
`))
	if err != nil {
		t.Fatal(err)
	}
	if c.Cluster != "hpc1" || c.Interval != time.Second || c.Spool.MaxBytes != 8<<20 || c.Elasticsearch.JobIndex != "jobsight-jobs" {
		t.Fatalf("unexpected config %+v", c)
	}
}

func TestBadConfigNamesTheOption(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"intervall: 5s":                              `"intervall"`,
		"spool: {maxbytes: 1}":                       `"maxbytes"`,
		"interval: 100ms":                            "interval: 100ms is outside 1s..5m",
		"interval: soon":                             "soon",
		"flush_interval: 1s":                         "flush_interval",
		"cluster: 'a b'":                             "cluster",
		"log_level: loud":                            "log_level",
		"cgroup: {version: v3}":                      "cgroup.version",
		"spool: {max_bytes: 12 parsecs}":             "size",
		"spool: {max_bytes: 10}":                     "spool.max_bytes",
		"elasticsearch: {urls: [ftp://x]}":           "elasticsearch.urls[0]",
		"elasticsearch: {job_index: Jobs}":           "elasticsearch.job_index",
		"elasticsearch: {node_index: jobsight-jobs}": "elasticsearch.node_index",
		"prometheus: {username: u}":                  "prometheus.username",
		"prometheus: {remote_write_url: 'https://p/api/v1/write', ca_file: /nonexistent/ca.pem}": "prometheus.ca_file",
		"cluster: [1, 2]":                                                  "line 1",
		"\t- nonsense":                                                     "yaml",
		"energy: {sysfs_root: ''}":                                         "energy.sysfs_root",
		"energy: {ipmi_interval: 1s}":                                      "energy.ipmi_interval: 1s is outside 5s..1h",
		"energy: {ipmi_timeout: 2m}":                                       "energy.ipmi_timeout",
		"energy: {rapl: true}":                                             `unknown option "rapl" in section energy`,
		"gpu: {activity_interval: 50ms}":                                   "gpu.activity_interval: 50ms: want 0 (off) or between 100ms",
		"gpu: {activity_interval: 2h}":                                     "gpu.activity_interval: 2h0m0s",
		"emissions: {zone: Atlantis}":                                      `emissions.zone: "Atlantis" is not in the built-in table`,
		"emissions: {factor_g_per_kwh: 120}":                               "emissions.factor_source: must cite",
		"emissions: {zone: ZZ, factor_g_per_kwh: -1, factor_source: x}":    "emissions.factor_g_per_kwh",
		"emissions: {live: {provider: electricitymaps}}":                   "emissions.zone: must be set",
		"emissions: {zone: DE, live: {provider: wattsup}}":                 "emissions.live.provider",
		"emissions: {zone: DE, live: {provider: electricitymaps, url: x}}": "emissions.live.url",
	}
	for in, want := range cases {
		_, err := Parse(strings.NewReader(in))
		if err == nil {
			t.Errorf("%q: no error, want one naming %s", in, want)
			continue
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %q does not name %s", in, err, want)
		}
	}
}

func TestGPUActivityInterval(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]time.Duration{"": 2 * time.Second, "gpu: {activity_interval: 0s}": 0, "gpu: {activity_interval: 500ms}": 500 * time.Millisecond} {
		c, err := Parse(strings.NewReader(in))
		if err != nil || c.GPU.ActivityInterval != want {
			t.Errorf("%q: activity interval %v (%v), want %v", in, c.GPU.ActivityInterval, err, want)
		}
	}
}

func TestSimulatedGPUProfiles(t *testing.T) {
	t.Parallel()
	// Every profile of the simulator, and no other (validProfile keeps its
	// own list: the config package does not import the GPU code).
	for _, prof := range gpu.Profiles {
		p := string(prof)
		in := "gpu: {backend: simulated, simulated: {profile: " + p + ", devices: 2, device_profiles: {1: " + p + "}}}"
		if _, err := Parse(strings.NewReader(in)); err != nil {
			t.Errorf("profile %s: %v", p, err)
		}
	}
	_, err := Parse(strings.NewReader("gpu: {simulated: {profile: cpu-bound}}"))
	if err == nil || !strings.Contains(err.Error(), `gpu.simulated.profile: "cpu-bound"`) || !strings.Contains(err.Error(), "input-bound") {
		t.Errorf("unknown profile: %v", err)
	}
}

func TestEmissionsZones(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"emissions: {zone: DE}", "emissions: {zone: fra}", "emissions: {zone: ZZ, factor_g_per_kwh: 120, factor_source: supplier 2025}",
		"emissions: {zone: US-CAL-CISO, live: {provider: electricitymaps, token_file: /etc/jobsight/em-token}}"} {
		if _, err := Parse(strings.NewReader(in)); err != nil {
			t.Errorf("%q: %v", in, err)
		}
	}
}

// Every option is documented in docs/agent-config.md.
func TestEveryOptionIsDocumented(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../docs/agent-config.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("config.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile("yaml:\"([a-z_]+)\"").FindAllStringSubmatch(string(src), -1) {
		if !regexp.MustCompile("[`.]" + m[1] + "[`.]").Match(doc) {
			t.Errorf("option %s is not in docs/agent-config.md", m[1])
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add("interval: 5s\nspool: {max_bytes: 1GiB}\n")
	f.Add("elasticsearch: {urls: [http://a]}\n")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := Parse(strings.NewReader(s))
		if err == nil {
			if verr := c.Validate(); verr != nil {
				t.Fatalf("Parse accepted an invalid config: %v", verr)
			}
		}
	})
}

// The remote write's ca_file: a CA bundle for an https URL is accepted;
// with an http:// URL (no TLS) it is an error naming the option.
func TestPrometheusCAFile(t *testing.T) {
	ca := testca.New(t, "site CA").File(t)
	if _, err := Parse(strings.NewReader("prometheus: {remote_write_url: 'https://p/api/v1/write', ca_file: " + ca + "}")); err != nil {
		t.Errorf("https URL with a CA file: %v", err)
	}
	_, err := Parse(strings.NewReader("prometheus: {remote_write_url: 'http://p/api/v1/write', ca_file: " + ca + "}"))
	if err == nil || !strings.Contains(err.Error(), "prometheus.ca_file") {
		t.Errorf("http URL with a CA file: %v; want an error naming prometheus.ca_file", err)
	}
}
