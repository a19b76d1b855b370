package config

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestReadSecretNeverEchoesContent(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(p, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := ReadSecret("elasticsearch.password_file", p)
	if err != nil || got != "s3cret" {
		t.Fatalf("ReadSecret = %q, %v", got, err)
	}
	_, err = ReadSecret("elasticsearch.password_file", p+"-missing")
	if err == nil || !strings.Contains(err.Error(), "elasticsearch.password_file") {
		t.Fatalf("error %v does not name the option", err)
	}
}

// A section embedded inline keeps its keys at the section's level, and an
// unknown key names the section of the type that holds it.
func TestSectionsDecodeInline(t *testing.T) {
	t.Parallel()
	var c struct {
		Elasticsearch ElasticsearchConfig `yaml:"elasticsearch"`
	}
	c.Elasticsearch = DefaultElasticsearch()
	err := DecodeStrict(strings.NewReader("elasticsearch: {urls: [http://es:9200], username: u, password_file: /pw, node_index: n}\n"), &c)
	if err != nil || c.Elasticsearch.URLs[0] != "http://es:9200" || c.Elasticsearch.Username != "u" || c.Elasticsearch.NodeIndex != "n" ||
		c.Elasticsearch.JobIndex != "jobsight-jobs" {
		t.Fatalf("decoded %+v, %v", c, err)
	}
	err = DecodeStrict(strings.NewReader("elasticsearch: {index: x}\n"), &c)
	if err == nil || !strings.Contains(err.Error(), `unknown option "index" in section elasticsearch`) {
		t.Errorf("unknown key: %v", err)
	}
}

func TestSectionsNameTheOption(t *testing.T) {
	t.Parallel()
	es := Elasticsearch{URLs: []string{"http://ok", "es:9200"}, Username: "u"}
	rw := RemoteWrite{RemoteWriteURL: "prom", PrometheusAuth: PrometheusAuth{BearerTokenFile: "/t", Username: "u", PasswordFile: "/p"}}
	var msgs []string
	for _, err := range append(es.Validate(), rw.Validate()...) {
		msgs = append(msgs, err.Error())
	}
	want := []string{
		`elasticsearch.urls[1]: "es:9200": want an http:// or https:// URL`,
		"elasticsearch.username: username and password_file go together",
		`prometheus.remote_write_url: "prom": want an http:// or https:// URL`,
		"prometheus.bearer_token_file: set either a bearer token or a username/password, not both",
		"prometheus.timeout: must be positive",
	}
	if !reflect.DeepEqual(msgs, want) {
		t.Errorf("problems\n%q\nwant\n%q", msgs, want)
	}
	dir := t.TempDir()
	rw.PasswordFile = filepath.Join(dir, "missing")
	if _, _, err := rw.Secrets(); err == nil || !strings.Contains(err.Error(), "prometheus.bearer_token_file") {
		t.Errorf("missing token file: %v", err)
	}
	es.PasswordFile = filepath.Join(dir, "missing")
	if _, err := es.Password(); err == nil || !strings.Contains(err.Error(), "elasticsearch.password_file") {
		t.Errorf("missing password file: %v", err)
	}
}

// Every option of a shared section is documented for each product that
// has the section (the products' own tests check their own options).
func TestSharedOptionsDocumented(t *testing.T) {
	t.Parallel()
	for doc, sections := range map[string][]any{
		"agent-config.md":  {ElasticsearchConfig{}, RemoteWrite{}},
		"cluster-state.md": {Elasticsearch{}, RemoteWrite{}},
		"site-config.md":   {Elasticsearch{}, PrometheusAuth{}},
	} {
		text, err := os.ReadFile("../../docs/" + doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range sections {
			for _, key := range yamlKeys(reflect.TypeOf(s)) {
				if !regexp.MustCompile("[`.]" + key + "[`.]").Match(text) {
					t.Errorf("option %s of %T is not in docs/%s", key, s, doc)
				}
			}
		}
	}
}

// yamlKeys lists the keys of a struct type, those of inline fields included.
func yamlKeys(t reflect.Type) []string {
	var keys []string
	for f := range t.Fields() {
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if opts == "inline" {
			keys = append(keys, yamlKeys(f.Type)...)
		} else if name != "" {
			keys = append(keys, name)
		}
	}
	return keys
}

// TestReadSecretRefusesOpenFiles: a secret every user may read (or write),
// or one another user owns, is refused with the fix named and the content
// never echoed; 0600 and 0640 are read.
func TestReadSecretRefusesOpenFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for mode, ok := range map[os.FileMode]bool{0o600: true, 0o640: true, 0o400: true, 0o644: false, 0o604: false, 0o602: false} {
		p := filepath.Join(dir, "pw-"+mode.String())
		if err := os.WriteFile(p, []byte("s3cret"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		_, err := ReadSecret("prometheus.bearer_token_file", p)
		switch {
		case ok && err != nil:
			t.Errorf("mode %v: %v", mode, err)
		case !ok && (err == nil || !strings.Contains(err.Error(), "chmod 0600") || !strings.Contains(err.Error(), "prometheus.bearer_token_file")):
			t.Errorf("mode %v: %v, want a refusal naming the option and the fix", mode, err)
		case err != nil && strings.Contains(err.Error(), "s3cret"):
			t.Errorf("mode %v: the error echoes the secret: %v", mode, err)
		}
	}
	if os.Geteuid() != 0 {
		t.Skip("the owner check needs root to give a file away")
	}
	p := filepath.Join(dir, "theirs")
	if err := os.WriteFile(p, []byte("s3cret"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(p, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadSecret("elasticsearch.password_file", p); err == nil || !strings.Contains(err.Error(), "uid 65534") {
		t.Errorf("a file another user owns: %v, want a refusal naming its owner", err)
	}
}

// TestRemoteWriteTenant: the tenant and its header are checked, each
// problem naming its option; a valid pair and no tenant at all pass.
func TestRemoteWriteTenant(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		tenant, header string
		want           string // "" for no problem
	}{
		{"", "", ""},
		{"team-a", "", ""},
		{"team-a", "THANOS-TENANT", ""},
		{"a|b.c_d!*'()", "X-Scope-OrgID", ""},
		{"team a", "", `prometheus.tenant: "team a": only printable ASCII without spaces is allowed (character 5 is ' ')`},
		{"a\r\nX-Evil: 1", "", `prometheus.tenant: "a\r\nX-Evil: 1": only printable ASCII without spaces is allowed (character 2 is '\r')`},
		{"tëam", "", "prometheus.tenant: \"tëam\": only printable ASCII"},
		{strings.Repeat("x", 151), "", "prometheus.tenant: is 151 characters long, at most 150 are allowed"},
		{"team-a", "X Scope", `prometheus.tenant_header: "X Scope" is not an HTTP header name`},
		{"team-a", "X-Org:", `prometheus.tenant_header: "X-Org:" is not an HTTP header name`},
		{"team-a", "authorization", `prometheus.tenant_header: "authorization" is a header the request sets itself`},
		{"", "X-Scope-OrgID", "prometheus.tenant_header: is set but prometheus.tenant is not"},
	} {
		rw := RemoteWrite{Timeout: time.Second, Tenant: tc.tenant, TenantHeader: tc.header}
		errs := rw.Validate()
		switch {
		case tc.want == "" && len(errs) > 0:
			t.Errorf("tenant %q header %q: %v, want no problem", tc.tenant, tc.header, errs)
		case tc.want != "" && (len(errs) != 1 || !strings.HasPrefix(errs[0].Error(), tc.want)):
			t.Errorf("tenant %q header %q: %v, want one problem starting %q", tc.tenant, tc.header, errs, tc.want)
		}
	}
	var c struct {
		Prometheus RemoteWrite `yaml:"prometheus"`
	}
	err := DecodeStrict(strings.NewReader("prometheus: {tenant: team-a, tenant_header: THANOS-TENANT}\n"), &c)
	if err != nil || c.Prometheus.Tenant != "team-a" || c.Prometheus.TenantHeader != "THANOS-TENANT" {
		t.Errorf("decoded %+v, %v", c.Prometheus, err)
	}
	if h := TenantHeaders("", "team-a"); h.Get("X-Scope-OrgID") != "team-a" || len(h) != 1 {
		t.Errorf("TenantHeaders default: %v", h)
	}
	if h := TenantHeaders("X-Scope-OrgID", ""); h != nil {
		t.Errorf("TenantHeaders without a tenant: %v, want none", h)
	}
}
