package notify

import (
	"strings"
	"testing"
	"time"
)

func validConfig() Config {
	c := Default()
	c.Enabled = true
	c.SMTP.Host = "smtp.example.org"
	c.SMTP.Username = "jobsight"
	c.SMTP.PasswordFile = "/etc/jobsight/smtp-password"
	c.From = "Jobsight <jobsight@example.org>"
	c.Recipients.AddressTemplate = "{user}@example.org"
	return c
}

func TestDefaults(t *testing.T) {
	t.Parallel()
	d := Default()
	if d.Enabled || d.GPUJobsOnly || d.BatchWindow != 24*time.Hour || d.SMTP.TLS != TLSStartTLS || d.MaxReportsPerDigest != 50 {
		t.Fatalf("unexpected defaults: %+v", d)
	}
	if err := d.Validate(); err != nil {
		t.Fatalf("disabled default config: %v", err)
	}
	c := validConfig()
	if err := c.Validate(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	for mode, port := range map[string]int{TLSStartTLS: 587, TLSImplicit: 465, TLSNone: 25} {
		s := SMTPConfig{TLS: mode}
		if s.port() != port {
			t.Errorf("port for %s = %d, want %d", mode, s.port(), port)
		}
	}
}

func TestValidateNamesOptions(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		change func(*Config)
		want   string
	}{
		{"no host", func(c *Config) { c.SMTP.Host = "" }, "notify.smtp.host: must be set"},
		{"bad host", func(c *Config) { c.SMTP.Host = "smtp.example.org\r\nX" }, "notify.smtp.host:"},
		{"bad port", func(c *Config) { c.SMTP.Port = 70000 }, "notify.smtp.port:"},
		{"bad tls", func(c *Config) { c.SMTP.TLS = "ssl" }, "notify.smtp.tls: \"ssl\""},
		{"none remote", func(c *Config) { c.SMTP.TLS = TLSNone }, "only allowed to a loopback host"},
		{"none with ca", func(c *Config) { c.SMTP.Host = "localhost"; c.SMTP.TLS = TLSNone; c.SMTP.CAFile = "/ca.pem" }, "notify.smtp.ca_file:"},
		{"user without password", func(c *Config) { c.SMTP.PasswordFile = "" }, "notify.smtp.username: username and password_file go together"},
		{"no from", func(c *Config) { c.From = "" }, "notify.from: must be set"},
		{"bad from", func(c *Config) { c.From = "not an address" }, "notify.from:"},
		{"injected from", func(c *Config) { c.From = "a@example.org\r\nBcc: b@example.org" }, "notify.from: contains control characters"},
		{"no recipients", func(c *Config) { c.Recipients = RecipientsConfig{} }, "notify.recipients: set address_template, mapping_file or both"},
		{"template without user", func(c *Config) { c.Recipients.AddressTemplate = "all@example.org" }, "does not contain {user}"},
		{"bad template", func(c *Config) { c.Recipients.AddressTemplate = "{user}@@example.org" }, "notify.recipients.address_template:"},
		{"bad class", func(c *Config) { c.Classes = []string{"wasted", "awful"} }, "notify.classes[1]: \"awful\""},
		{"negative window", func(c *Config) { c.BatchWindow = -time.Second }, "notify.batch_window:"},
		{"huge window", func(c *Config) { c.BatchWindow = 1000 * time.Hour }, "notify.batch_window:"},
		{"zero digest", func(c *Config) { c.MaxReportsPerDigest = 0 }, "notify.max_reports_per_digest:"},
		{"no spool", func(c *Config) { c.SpoolDir = "" }, "notify.spool_dir: must be set"},
		{"timeouts", func(c *Config) { c.SMTP.ConnectTimeout = 0 }, "notify.smtp.connect_timeout:"},
		{"send timeout", func(c *Config) { c.SMTP.SendTimeout = time.Hour }, "notify.smtp.send_timeout:"},
		{"helo", func(c *Config) { c.SMTP.HeloName = "a b" }, "notify.smtp.helo_name:"},
	} {
		cfg := validConfig()
		c.change(&cfg)
		err := cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Validate() = %v, want it to contain %q", c.name, err, c.want)
		}
	}
	// tls none is fine to loopback hosts.
	for _, h := range []string{"localhost", "127.0.0.1", "127.0.0.2", "::1"} {
		cfg := validConfig()
		cfg.SMTP.Host, cfg.SMTP.TLS = h, TLSNone
		if err := cfg.Validate(); err != nil {
			t.Errorf("tls none to %s: %v", h, err)
		}
	}
}

func TestPasswordNeverInErrors(t *testing.T) {
	t.Parallel()
	p := writeFile(t, "pw", "")
	if _, err := readPassword(p); err == nil || !strings.Contains(err.Error(), "notify.smtp.password_file") {
		t.Fatalf("empty password file: %v", err)
	}
	err := redact(errAt("535 bad password hunter2, token AGpvYnNpZ2h0AGh1bnRlcjI="), "jobsight", "hunter2")
	if strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "AGpvYnNpZ2h0AGh1bnRlcjI=") {
		t.Fatalf("redact left the secret: %v", err)
	}
}

type errAt string

func (e errAt) Error() string { return string(e) }

func TestParseMapping(t *testing.T) {
	t.Parallel()
	m, err := parseMapping([]byte("# comment\nalice: alice@example.org # trailing\n\nbob : Bob <bob@example.org>\ncarol: -\ndan: dan#1@example.org\n"))
	if err != nil {
		t.Fatal(err)
	}
	if m["alice"].addr.Address != "alice@example.org" || m["bob"].addr.Name != "Bob" || m["carol"].addr != nil || m["dan"].addr.Address != "dan#1@example.org" {
		t.Fatalf("mapping %+v", m)
	}
	for _, bad := range []string{"alice alice@example.org\n", "alice:\n", "alice: a@x.org\nalice: b@x.org\n", "alice: jörg@example.org\n", "alice: a@example.org, b@example.org\n"} {
		if _, err := parseMapping([]byte(bad)); err == nil {
			t.Errorf("parseMapping(%q) accepted", bad)
		}
	}
}
