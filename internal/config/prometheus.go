package config

import (
	"strings"
	"time"
)

// PrometheusAuth is how a product authenticates to Prometheus: a bearer
// token, or a username and password, each read from a file. It is
// embedded inline in every prometheus section (RemoteWrite, the site
// command's query section).
type PrometheusAuth struct {
	BearerTokenFile string `yaml:"bearer_token_file"`
	Username        string `yaml:"username"`
	PasswordFile    string `yaml:"password_file"`
}

// Secrets reads the bearer token and the password from their files (empty
// where no file is set); an error names prometheus.bearer_token_file or
// prometheus.password_file, never the content.
func (a *PrometheusAuth) Secrets() (token, password string, err error) {
	if token, err = ReadSecret("prometheus.bearer_token_file", a.BearerTokenFile); err != nil {
		return "", "", err
	}
	if password, err = ReadSecret("prometheus.password_file", a.PasswordFile); err != nil {
		return "", "", err
	}
	return token, password, nil
}

// RemoteWrite is a Prometheus remote-write endpoint, embedded inline in
// the prometheus section of the agent (which adds push_interval) and of
// the cluster-state collector. No URL: no series.
type RemoteWrite struct {
	// RemoteWriteURL is the endpoint, e.g. http://prom:9090/api/v1/write.
	RemoteWriteURL string `yaml:"remote_write_url"`
	PrometheusAuth `yaml:",inline"`
	// Timeout bounds one write, retries included.
	Timeout time.Duration `yaml:"timeout"`
	// Tenant, when set, is sent in TenantHeader on every request, for a
	// multi-tenant store (Mimir, Cortex, Thanos Receive). Empty: no tenant
	// header.
	Tenant string `yaml:"tenant"`
	// TenantHeader is the header that carries Tenant; empty means
	// DefaultTenantHeader (X-Scope-OrgID).
	TenantHeader string `yaml:"tenant_header"`
	// CAFile is a PEM bundle of CAs trusted for an https endpoint in
	// addition to the system's (a private CA); empty for the system's
	// alone.
	CAFile string `yaml:"ca_file"`
}

// Validate checks the URL, the credentials (a bearer token or a username
// and password, not both; username and password_file together), the
// timeout, the CA file (readable, a PEM bundle, for an https URL) and
// the tenant (TenantProblem, TenantHeaderProblem); each problem names its
// option (prometheus.remote_write_url).
func (r *RemoteWrite) Validate() []error {
	var errs []error
	if u := r.RemoteWriteURL; u != "" && !HTTPURL(u) {
		errs = append(errs, problem("prometheus.remote_write_url", "%q: want an http:// or https:// URL", u))
	}
	if r.BearerTokenFile != "" && r.PasswordFile != "" {
		errs = append(errs, problem("prometheus.bearer_token_file", "set either a bearer token or a username/password, not both"))
	}
	if (r.Username == "") != (r.PasswordFile == "") {
		errs = append(errs, problem("prometheus.username", "username and password_file go together"))
	}
	if r.Timeout <= 0 {
		errs = append(errs, problem("prometheus.timeout", "must be positive"))
	}
	if r.CAFile != "" {
		if err := CheckCAFile("prometheus.ca_file", r.CAFile); err != nil {
			errs = append(errs, err)
		} else if strings.HasPrefix(r.RemoteWriteURL, "http://") {
			errs = append(errs, problem("prometheus.ca_file", "is set but prometheus.remote_write_url is http://, which uses no TLS: use https://, or remove ca_file"))
		}
	}
	return append(errs, ValidateTenant(r.Tenant, r.TenantHeader)...)
}

// ValidateTenant checks the prometheus section's tenant and tenant_header
// (TenantProblem, TenantHeaderProblem); each problem names its option.
func ValidateTenant(tenant, header string) []error {
	var errs []error
	if p := TenantProblem(tenant); p != "" {
		errs = append(errs, problem("prometheus.tenant", "%s", p))
	}
	if header != "" {
		if p := TenantHeaderProblem(header); p != "" {
			errs = append(errs, problem("prometheus.tenant_header", "%s", p))
		} else if tenant == "" {
			errs = append(errs, problem("prometheus.tenant_header", "is set but prometheus.tenant is not: set the tenant, or remove tenant_header"))
		}
	}
	return errs
}
