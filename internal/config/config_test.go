package config

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
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
