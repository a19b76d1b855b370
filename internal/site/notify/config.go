package notify

import (
	"errors"
	"fmt"
	"net"
	"net/mail"
	"regexp"
	"slices"
	"strings"
	"time"
)

// TLS modes of Config.SMTP.TLS.
const (
	// TLSStartTLS connects in plain text and upgrades with STARTTLS before
	// anything else is sent; a server that does not offer STARTTLS is
	// refused.
	TLSStartTLS = "starttls"
	// TLSImplicit speaks TLS from the first byte (SMTPS, usually port 465).
	TLSImplicit = "tls"
	// TLSNone sends in plain text. It is only allowed to a loopback host.
	TLSNone = "none"
)

// knownClasses are the efficiency classes of the analysis, worst first.
var knownClasses = []string{"wasted", "inefficient", "acceptable", "efficient", "short", "unknown"}

// Classes returns the efficiency classes a report can carry and that
// Config.Classes may name, worst first (the order used in subjects).
func Classes() []string { return slices.Clone(knownClasses) }

// optionPrefix names this section in validation errors.
const optionPrefix = "notify."

// Config is the configuration of email delivery (the "notify" section).
type Config struct {
	// Enabled turns email delivery on. Default false: reports are dropped
	// without being spooled.
	Enabled bool `yaml:"enabled"`
	// SMTP is the mail server to submit to.
	SMTP SMTPConfig `yaml:"smtp"`
	// From is the sender, "jobsight@example.org" or
	// "Jobsight <jobsight@example.org>" (ASCII address).
	From string `yaml:"from"`
	// Recipients says how a Slurm user name becomes an email address.
	Recipients RecipientsConfig `yaml:"recipients"`
	// OptOutFile lists users (one per line, '#' comments) who get no mail.
	// It is re-read when it changes; a missing file is an empty list.
	OptOutFile string `yaml:"opt_out_file"`
	// GPUJobsOnly mails reports of GPU jobs only. Default false: owners of
	// CPU jobs get their reports too unless the site narrows it.
	GPUJobsOnly bool `yaml:"gpu_jobs_only"`
	// Classes, when not empty, mails only reports of these efficiency
	// classes (for example [wasted, inefficient]).
	Classes []string `yaml:"classes"`
	// BatchWindow is how long a user's reports are collected into one
	// digest, counted from the user's oldest pending report. 0 sends each
	// report alone at the next flush. Default 24h, at most 720h.
	BatchWindow time.Duration `yaml:"batch_window"`
	// MaxReportsPerDigest caps the reports in one message; a user with
	// more pending gets several messages. Default 50.
	MaxReportsPerDigest int `yaml:"max_reports_per_digest"`
	// SpoolDir holds pending reports, one file each (0700 directory, 0600
	// files). Default /var/spool/jobsight/notify.
	SpoolDir string `yaml:"spool_dir"`
}

// SMTPConfig is the mail server and how to talk to it.
type SMTPConfig struct {
	// Host is the server's name or address; the TLS certificate is checked
	// against it.
	Host string `yaml:"host"`
	// Port is the server's port; 0 takes the mode's usual one (starttls
	// 587, tls 465, none 25).
	Port int `yaml:"port"`
	// TLS is starttls (default), tls (implicit TLS) or none (loopback
	// hosts only).
	TLS string `yaml:"tls"`
	// Username for AUTH PLAIN; empty sends no AUTH. Goes with PasswordFile.
	Username string `yaml:"username"`
	// PasswordFile holds the password (one line; a trailing newline is
	// ignored). It is read for each session and never logged.
	PasswordFile string `yaml:"password_file"`
	// CAFile is a PEM bundle of CAs to trust instead of the system's.
	CAFile string `yaml:"ca_file"`
	// HeloName is the name given in EHLO. Default: this host's name.
	HeloName string `yaml:"helo_name"`
	// ConnectTimeout bounds connecting (TCP and implicit TLS). Default 10s.
	ConnectTimeout time.Duration `yaml:"connect_timeout"`
	// SendTimeout bounds the session set-up (greeting, STARTTLS, AUTH) and,
	// separately, each message's transaction. Default 1m.
	SendTimeout time.Duration `yaml:"send_timeout"`
}

// RecipientsConfig maps Slurm user names to addresses. The mapping file
// is consulted first; users it does not list get the template's address.
type RecipientsConfig struct {
	// AddressTemplate makes an address from a user name, with {user}
	// replaced, e.g. "{user}@example.org".
	AddressTemplate string `yaml:"address_template"`
	// MappingFile has "user: address" lines ('#' comments); the address
	// "-" opts the user out. Re-read when it changes.
	MappingFile string `yaml:"mapping_file"`
}

// Default returns the configuration with every default filled in.
func Default() Config {
	return Config{
		Enabled: false,
		SMTP: SMTPConfig{
			TLS:            TLSStartTLS,
			ConnectTimeout: 10 * time.Second,
			SendTimeout:    time.Minute,
		},
		BatchWindow:         24 * time.Hour,
		MaxReportsPerDigest: 50,
		SpoolDir:            "/var/spool/jobsight/notify",
	}
}

var (
	hostName      = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]{0,62})?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,62})?)*\.?$`)
	maxBatch      = 720 * time.Hour
	maxDigestSize = 1000
)

// Validate checks the configuration. Each problem is reported with the
// option's name ("notify.smtp.host: ..."); all problems are joined. A
// disabled configuration is not checked further.
func (c *Config) Validate() error {
	if !c.Enabled {
		return nil
	}
	var errs []error
	bad := func(option, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s%s: "+format, append([]any{optionPrefix, option}, args...)...))
	}

	s := &c.SMTP
	switch {
	case s.Host == "":
		bad("smtp.host", "must be set")
	case !validHost(s.Host):
		bad("smtp.host", "%q is not a host name or IP address", s.Host)
	}
	if s.Port < 0 || s.Port > 65535 {
		bad("smtp.port", "%d is outside 0..65535", s.Port)
	}
	switch s.TLS {
	case TLSStartTLS, TLSImplicit:
	case TLSNone:
		if s.Host != "" && !isLoopbackHost(s.Host) {
			bad("smtp.tls", "%q sends mail and credentials unencrypted, so it is only allowed to a loopback host (localhost, 127.0.0.0/8, ::1), not %q; use starttls or tls", s.TLS, s.Host)
		}
		if s.CAFile != "" {
			bad("smtp.ca_file", "has no effect with tls %q", s.TLS)
		}
	default:
		bad("smtp.tls", "%q: want starttls, tls or none", s.TLS)
	}
	if (s.Username == "") != (s.PasswordFile == "") {
		bad("smtp.username", "username and password_file go together")
	}
	if hasControl(s.Username) {
		bad("smtp.username", "contains control characters")
	}
	if s.HeloName != "" && !validHost(s.HeloName) {
		bad("smtp.helo_name", "%q is not a host name or IP address", s.HeloName)
	}
	if s.ConnectTimeout <= 0 || s.ConnectTimeout > 5*time.Minute {
		bad("smtp.connect_timeout", "%s is outside (0, 5m]", s.ConnectTimeout)
	}
	if s.SendTimeout <= 0 || s.SendTimeout > 30*time.Minute {
		bad("smtp.send_timeout", "%s is outside (0, 30m]", s.SendTimeout)
	}

	if c.From == "" {
		bad("from", "must be set")
	} else if _, err := parseFrom(c.From); err != nil {
		bad("from", "%w", err)
	}

	r := &c.Recipients
	if r.AddressTemplate == "" && r.MappingFile == "" {
		bad("recipients", "set address_template, mapping_file or both")
	}
	if r.AddressTemplate != "" {
		if !strings.Contains(r.AddressTemplate, userPlaceholder) {
			bad("recipients.address_template", "%q does not contain %s", r.AddressTemplate, userPlaceholder)
		} else if _, err := addressFromTemplate(r.AddressTemplate, "user"); err != nil {
			bad("recipients.address_template", "%q: %w", r.AddressTemplate, err)
		}
	}

	for i, cl := range c.Classes {
		if !slices.Contains(knownClasses, cl) {
			bad(fmt.Sprintf("classes[%d]", i), "%q: want one of %s", cl, strings.Join(knownClasses, ", "))
		}
	}
	if c.BatchWindow < 0 || c.BatchWindow > maxBatch {
		bad("batch_window", "%s is outside 0..%s", c.BatchWindow, maxBatch)
	}
	if c.MaxReportsPerDigest < 1 || c.MaxReportsPerDigest > maxDigestSize {
		bad("max_reports_per_digest", "%d is outside 1..%d", c.MaxReportsPerDigest, maxDigestSize)
	}
	if c.SpoolDir == "" {
		bad("spool_dir", "must be set")
	}
	return errors.Join(errs...)
}

// port returns the configured port or the mode's usual one.
func (s *SMTPConfig) port() int {
	if s.Port != 0 {
		return s.Port
	}
	switch s.TLS {
	case TLSImplicit:
		return 465
	case TLSNone:
		return 25
	default:
		return 587
	}
}

// validHost accepts a DNS name or an IP address (IPv6 without brackets).
func validHost(h string) bool {
	if net.ParseIP(h) != nil {
		return true
	}
	return len(h) <= 253 && hostName.MatchString(h)
}

// isLoopbackHost reports whether h names this machine's loopback
// interface: "localhost" (or a name under .localhost) or a loopback IP.
func isLoopbackHost(h string) bool {
	h = strings.TrimSuffix(strings.ToLower(h), ".")
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// parseFrom parses the sender address.
func parseFrom(s string) (*mail.Address, error) {
	if hasControl(s) {
		return nil, errors.New("contains control characters")
	}
	a, err := mail.ParseAddress(s)
	if err != nil {
		return nil, fmt.Errorf("%q is not a valid address: %w", s, err)
	}
	if err := checkAddrSpec(a.Address); err != nil {
		return nil, fmt.Errorf("%q: %w", s, err)
	}
	return a, nil
}
