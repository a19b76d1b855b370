// Package models holds the Jobsight datasource's configuration and query
// models: what Grafana stores for one datasource instance (JSONData and the
// decrypted secure fields) and what one panel query sends. The TypeScript
// types in src/types.ts have the same shape; change both together.
package models

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/jobsight/jobsight/internal/config"
	"github.com/jobsight/jobsight/internal/jobmodel"
)

// PluginID is the datasource plugin's id, as in plugin.json: the one place
// Go code names it.
const PluginID = "jobsight-slurm-datasource"

// Defaults for the optional settings.
const (
	DefaultJobIndex       = "jobsight-jobs"
	DefaultNodeIndex      = "jobsight-nodes"
	DefaultTimeoutSeconds = 30
	// MaxTimeoutSeconds bounds timeoutSeconds so one slow backend cannot hold a
	// Grafana request for longer than Grafana itself waits.
	MaxTimeoutSeconds = 300
	DefaultMaxJobs    = 10000
	DefaultMaxSeries  = 20000
	// DefaultSilentAfterMinutes is three times the longest interval at
	// which an agent rewrites a running job's node documents
	// (flush_interval, at most 10m).
	DefaultSilentAfterMinutes = 30
)

// Names of the keys in DecryptedSecureJSONData. Secrets are read from there
// only, never from JSONData.
const (
	SecureElasticsearchPassword = "elasticsearchPassword"
	SecurePrometheusBearerToken = "prometheusBearerToken"
	SecurePrometheusPassword    = "prometheusPassword"
	// SecureAllocationsToken is the bearer token allocationsUrl requires
	// (the cluster-state collector's listen_token_file).
	SecureAllocationsToken = "allocationsToken"
)

// SecureFields are every secure field the plugin reads; any other key in
// the decrypted secure JSON data is not read.
var SecureFields = []string{SecureElasticsearchPassword, SecurePrometheusBearerToken, SecurePrometheusPassword, SecureAllocationsToken}

// SecretsFrom picks the secure fields out of decrypted secure JSON data.
func SecretsFrom(sec map[string]string) Secrets {
	return Secrets{
		ElasticsearchPassword: sec[SecureElasticsearchPassword],
		PrometheusBearerToken: sec[SecurePrometheusBearerToken],
		PrometheusPassword:    sec[SecurePrometheusPassword],
		AllocationsToken:      sec[SecureAllocationsToken],
	}
}

// Settings is the configuration of one Jobsight datasource instance.
// The exported JSON-tagged fields are the datasource's jsonData; Secrets are
// filled from its decrypted secure JSON data.
type Settings struct {
	// ElasticsearchURL is the base URL of the Elasticsearch HTTP API (8, or
	// 7.14 and later; the agents refuse OpenSearch, so it holds no job
	// documents), e.g. http://es:9200. Required.
	ElasticsearchURL string `json:"elasticsearchUrl"`
	// ElasticsearchJobIndex is the index holding one document per job.
	// Default "jobsight-jobs".
	ElasticsearchJobIndex string `json:"elasticsearchJobIndex,omitempty"`
	// ElasticsearchNodeIndex is the index holding one document per job per
	// node. Default "jobsight-nodes".
	ElasticsearchNodeIndex string `json:"elasticsearchNodeIndex,omitempty"`
	// ElasticsearchUser is the basic-auth user; its password is the secure
	// field elasticsearchPassword. Empty means no authentication.
	ElasticsearchUser string `json:"elasticsearchUser,omitempty"`

	// PrometheusURL is the base URL of the Prometheus-compatible query API,
	// e.g. http://prometheus:9090 (for Mimir, include its /prometheus prefix).
	// Required.
	PrometheusURL string `json:"prometheusUrl"`
	// PrometheusUser is the basic-auth user; its password is the secure field
	// prometheusPassword. Mutually exclusive with the bearer token.
	PrometheusUser string `json:"prometheusUser,omitempty"`
	// PrometheusTenant, when set, is sent in PrometheusTenantHeader on
	// every Prometheus request, for a multi-tenant store (Mimir, Cortex,
	// Thanos Query behind a tenant-aware proxy or with tenancy enforced).
	PrometheusTenant string `json:"prometheusTenant,omitempty"`
	// PrometheusTenantHeader carries PrometheusTenant. Default
	// X-Scope-OrgID.
	PrometheusTenantHeader string `json:"prometheusTenantHeader,omitempty"`

	// ClusterFilter, when set, restricts every query to this Slurm cluster
	// name. Empty means all clusters.
	ClusterFilter string `json:"clusterFilter,omitempty"`
	// TimeoutSeconds bounds each request to Elasticsearch or Prometheus.
	// Default 30, at most 300.
	TimeoutSeconds int `json:"timeoutSeconds,omitempty"`
	// TLS trust (docs/datasource.md, "TLS trust"). Each is a PEM CA
	// bundle trusted in addition to the system's CAs, never instead of
	// them. TLSCACert is the site's private CA for Elasticsearch,
	// Prometheus and allocationsUrl alike; the per-backend bundles add to
	// it for that backend only. Grafana's signing keys (GrafanaURL) are
	// fetched with the system's CAs plus GrafanaTLSCACert only: a private
	// store CA never decides whom Grafana's keys are trusted from.
	TLSCACert              string `json:"tlsCaCert,omitempty"`
	ElasticsearchTLSCACert string `json:"elasticsearchTlsCaCert,omitempty"`
	PrometheusTLSCACert    string `json:"prometheusTlsCaCert,omitempty"`
	AllocationsTLSCACert   string `json:"allocationsTlsCaCert,omitempty"`
	GrafanaTLSCACert       string `json:"grafanaTlsCaCert,omitempty"`

	// Access control (docs/datasource.md, "Who sees what").

	// UserMapping says how a Grafana user is mapped to a Slurm user:
	// "login" (default: the Grafana login is the Slurm user name),
	// "email" (the whole email address), "emailLocalPart" (the part before
	// the @). UserMap overrides it for single users (Grafana login → Slurm
	// user).
	UserMapping string            `json:"userMapping,omitempty"`
	UserMap     map[string]string `json:"userMap,omitempty"`
	// AccountPIs names, per Slurm account, the Slurm users who see all of
	// the account's jobs (principal investigators).
	AccountPIs map[string][]string `json:"accountPIs,omitempty"`
	// FullAccessRoles are the Grafana org roles that see every job.
	// Default ["Admin", "Editor"]; ["Admin"] keeps Editors to their own.
	FullAccessRoles []string `json:"fullAccessRoles,omitempty"`
	// IdentitySource says what a restricted viewer's identity is taken
	// from. "idToken" (default): the ID token Grafana signs and forwards
	// (X-Grafana-Id), verified against Grafana's published keys; the login
	// and email in it are trusted only for accounts an identity provider
	// vouches for (TrustedAuthMethods), any account can be mapped by its
	// Grafana user id (UserIDMap). "unverifiedLogin": the login and email
	// as Grafana passes them, which the owner of a built-in account can
	// change to anyone's (docs/datasource.md says when that is acceptable).
	IdentitySource string `json:"identitySource,omitempty"`
	// TrustedAuthMethods are the ID token's authenticatedBy values whose
	// login and email are mapped (a trailing * matches a prefix). Default
	// the identity providers whose accounts cannot edit their login or
	// email: ldap, auth.saml, jwt, oauth_* (not authproxy, whose accounts
	// can: docs/datasource.md).
	TrustedAuthMethods []string `json:"trustedAuthMethods,omitempty"`
	// UserIDMap maps a Grafana user, by an id in its ID token that the
	// user cannot change, to a Slurm user; safe for built-in accounts too.
	// Grafana 11 and 12 sign sub = "user:<numeric database id>" and
	// identifier = the user's uid (grafana/grafana
	// pkg/services/auth/idimpl/service.go: Subject is the identity's
	// typed id, Identifier its raw identifier, the uid), so a key is
	// either "user:<numeric id>" (matched against sub) or the uid alone
	// (matched against identifier). "user:<uid>" matches nothing and is
	// refused (UserIDMapKeyProblem).
	UserIDMap map[string]string `json:"userIdMap,omitempty"`
	// GrafanaURL is where the plugin fetches Grafana's signing keys
	// (<grafanaUrl>/api/signing-keys/keys). Default Grafana's root_url, as
	// Grafana passes it (GF_APP_URL); set it when that address is not
	// reachable from the Grafana server itself.
	GrafanaURL string `json:"grafanaUrl,omitempty"`
	// ForwardGrafanaIDToken is Grafana's own switch: the first releases
	// with ID forwarding (late 2023, Grafana 10.2/10.3) forwarded the ID
	// token only to datasources that set it; since early 2024 Grafana
	// forwards it always (grafana/grafana#81041). Accepted here so that strict decoding does not
	// refuse it.
	ForwardGrafanaIDToken bool `json:"forwardGrafanaIdToken,omitempty"`

	// MaxJobs caps the jobs one panel reads from the job index (Jobs rows,
	// the jobs Reservation, Usage history and Allocation sum). Over it the
	// result is truncated with a notice. Default 10000.
	MaxJobs int `json:"maxJobs,omitempty"`
	// MaxSeries caps the series one Prometheus answer may hold. Default 20000.
	MaxSeries int `json:"maxSeries,omitempty"`
	// SilentAfterMinutes is how long a job whose document is not final may
	// go without any update of its job or node documents before it counts
	// as ended (at its last update) instead of running: its agent is gone
	// (docs/datasource.md, "Jobs nobody finalized"). Default 30, 1 to 10080.
	SilentAfterMinutes int `json:"silentAfterMinutes,omitempty"`

	// Allocations are the allocation thresholds of the Allocation query;
	// AllocationsURL, when set, is a JSON endpoint serving more (the
	// cluster-state collector's constants, same shape: {"allocations":[...]}).
	Allocations    []Allocation `json:"allocations,omitempty"`
	AllocationsURL string       `json:"allocationsUrl,omitempty"`

	// PartitionCapacity, per "cluster/partition" (or "partition"), gives the
	// partition's CPUs and GPUs for the Hogging query's contention weight
	// when no cluster-state series exist.
	PartitionCapacity map[string]Capacity `json:"partitionCapacity,omitempty"`

	// JobPageURL is the link target of a job in the Jobs table; "${cluster}"
	// and "${job_id}" are replaced (URL-escaped). Default: the plugin's own
	// HTML job page.
	JobPageURL string `json:"jobPageUrl,omitempty"`

	// Secrets come from DecryptedSecureJSONData only.
	Secrets Secrets `json:"-"`
}

// Allocation is one allocation threshold of the Allocation query. The type
// lives in the shared core, since the cluster-state collector serves the
// same shape (its constants file) without linking the plugin SDK.
type Allocation = jobmodel.HoursAllocation

// Capacity is a partition's size, for the Hogging contention fallback.
type Capacity struct {
	CPUs int64 `json:"cpus,omitempty"`
	GPUs int64 `json:"gpus,omitempty"`
}

// Secrets are the decrypted secure fields of a datasource instance. They are
// never logged and never appear in messages.
type Secrets struct {
	ElasticsearchPassword string
	PrometheusBearerToken string
	PrometheusPassword    string
	AllocationsToken      string
}

// Timeout returns TimeoutSeconds as a duration.
func (s *Settings) Timeout() time.Duration {
	return time.Duration(s.TimeoutSeconds) * time.Second
}

// FieldError says which setting is wrong and why. Field is the jsonData key
// (or secure field name) as the user sees it in the datasource configuration.
type FieldError struct {
	Field   string
	Problem string
}

// Error implements error.
func (e *FieldError) Error() string {
	return fmt.Sprintf("setting %s: %s", e.Field, e.Problem)
}

// LoadSettings decodes and validates the settings of a datasource instance.
// JSONData is decoded strictly (an unknown key is an error naming it),
// defaults are applied, and every problem found is returned, joined, as
// *FieldError values.
func LoadSettings(inst backend.DataSourceInstanceSettings) (*Settings, error) {
	s, err := ParseJSONData(inst.JSONData)
	if err != nil {
		return nil, err
	}
	s.Secrets = SecretsFrom(inst.DecryptedSecureJSONData)
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return s, nil
}

// ParseJSONData decodes jsonData strictly and applies defaults; it does not
// validate. Empty input means "nothing configured yet".
func ParseJSONData(raw []byte) (*Settings, error) {
	s := &Settings{}
	if len(bytes.TrimSpace(raw)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(s); err != nil {
			return nil, jsonDataError(err)
		}
		if _, err := dec.Token(); !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("decoding datasource jsonData: trailing data after the JSON object")
		}
	}
	s.applyDefaults()
	return s, nil
}

// jsonDataError turns a decoding error into one naming the offending key.
func jsonDataError(err error) error {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) && typeErr.Field != "" {
		return &FieldError{Field: typeErr.Field, Problem: fmt.Sprintf("must be %s, got a JSON %s", jsonKind(typeErr.Type.Kind()), typeErr.Value)}
	}
	// encoding/json reports unknown keys as `json: unknown field "name"`.
	if msg := err.Error(); strings.HasPrefix(msg, "json: unknown field ") {
		field := strings.Trim(strings.TrimPrefix(msg, "json: unknown field "), `"`)
		return &FieldError{Field: field, Problem: "unknown setting (check its spelling; see the datasource documentation for the supported keys)"}
	}
	return fmt.Errorf("decoding datasource jsonData: %w", err)
}

// jsonKind names a Go kind as a user writing JSON knows it.
func jsonKind(k reflect.Kind) string {
	switch k {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "a JSON array"
	case reflect.Map, reflect.Struct:
		return "a JSON object"
	default:
		return "a JSON " + k.String()
	}
}

func (s *Settings) applyDefaults() {
	s.ElasticsearchURL = strings.TrimSpace(s.ElasticsearchURL)
	s.PrometheusURL = strings.TrimSpace(s.PrometheusURL)
	if s.ElasticsearchJobIndex == "" {
		s.ElasticsearchJobIndex = DefaultJobIndex
	}
	if s.ElasticsearchNodeIndex == "" {
		s.ElasticsearchNodeIndex = DefaultNodeIndex
	}
	if s.TimeoutSeconds == 0 {
		s.TimeoutSeconds = DefaultTimeoutSeconds
	}
	if s.UserMapping == "" {
		s.UserMapping = UserMappingLogin
	}
	if s.FullAccessRoles == nil {
		s.FullAccessRoles = []string{"Admin", "Editor"}
	}
	if s.IdentitySource == "" {
		s.IdentitySource = IdentityIDToken
	}
	if s.TrustedAuthMethods == nil {
		s.TrustedAuthMethods = append([]string(nil), DefaultTrustedAuthMethods...)
	}
	s.GrafanaURL = strings.TrimSpace(s.GrafanaURL)
	if s.MaxJobs == 0 {
		s.MaxJobs = DefaultMaxJobs
	}
	if s.MaxSeries == 0 {
		s.MaxSeries = DefaultMaxSeries
	}
	if s.SilentAfterMinutes == 0 {
		s.SilentAfterMinutes = DefaultSilentAfterMinutes
	}
	for i := range s.Allocations {
		if s.Allocations[i].PeriodDays == 0 {
			s.Allocations[i].PeriodDays = jobmodel.DefaultAllocationPeriodDays
		}
	}
}

// User mappings (Settings.UserMapping).
const (
	UserMappingLogin          = "login"
	UserMappingEmail          = "email"
	UserMappingEmailLocalPart = "emailLocalPart"
)

// Identity sources (Settings.IdentitySource).
const (
	IdentityIDToken         = "idToken"
	IdentityUnverifiedLogin = "unverifiedLogin"
)

// DefaultTrustedAuthMethods are the authenticatedBy values of Grafana's ID
// token for accounts that come from an identity provider whose module
// Grafana counts as external: Grafana refuses PUT /api/user (edit own
// login or email) for them while the module is enabled. Built-in accounts
// sign in with "password" or a session with no module (""), API keys and
// service accounts with "apikey"; none of those is here. Nor is
// "authproxy": Grafana lets auth-proxy accounts edit their own login and
// email (only the field named by header_property is protected), so a
// site adds it only when its proxy refuses PUT /api/user
// (docs/datasource.md, "Which identity is mapped").
var DefaultTrustedAuthMethods = []string{"ldap", "auth.saml", "jwt", "oauth_*"}

// UserIDMapKeyProblem says why key can never match a Grafana 11/12 ID
// token's user ("" when it can): keys are "user:<numeric id>" (the
// token's sub) or a uid (its identifier).
func UserIDMapKeyProblem(key string) string {
	if strings.TrimSpace(key) != key || key == "" {
		return fmt.Sprintf("key %q: must be \"user:<numeric id>\" or the user's uid, without spaces", key)
	}
	if id, ok := strings.CutPrefix(key, "user:"); ok {
		n, err := strconv.ParseInt(id, 10, 64)
		if err != nil || n <= 0 || strconv.FormatInt(n, 10) != id {
			return fmt.Sprintf("key %q can never match: Grafana's ID token has sub \"user:<numeric database id>\" (e.g. \"user:42\") "+
				"and the uid in identifier; write \"user:<numeric id>\", or the uid alone (%q)", key, id)
		}
		return ""
	}
	if strings.Contains(key, ":") {
		return fmt.Sprintf("key %q can never match: only users are mapped, as \"user:<numeric id>\" or by uid", key)
	}
	if len(key) > 40 || !validUID(key) {
		return fmt.Sprintf("key %q can never match: a Grafana uid has at most 40 letters, digits, - and _", key)
	}
	if _, err := strconv.ParseUint(key, 10, 64); err == nil {
		return fmt.Sprintf("key %q is a bare number, which Grafana never gives as a user's uid: for the user with numeric id %s write \"user:%s\"", key, key, key)
	}
	return ""
}

// validUID: Grafana's uid alphabet (letters, digits, - and _).
func validUID(s string) bool {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// Validate checks every setting and returns all problems found, joined.
func (s *Settings) Validate() error {
	var errs []error
	add := func(field, problem string) { errs = append(errs, &FieldError{Field: field, Problem: problem}) }

	if p := checkBaseURL(s.ElasticsearchURL, "http://localhost:9200"); p != "" {
		add("elasticsearchUrl", p)
	}
	if p := checkIndexName(s.ElasticsearchJobIndex); p != "" {
		add("elasticsearchJobIndex", p)
	}
	if p := checkIndexName(s.ElasticsearchNodeIndex); p != "" {
		add("elasticsearchNodeIndex", p)
	}
	if s.ElasticsearchJobIndex == s.ElasticsearchNodeIndex && s.ElasticsearchJobIndex != "" {
		add("elasticsearchNodeIndex", fmt.Sprintf("must differ from elasticsearchJobIndex (both are %q)", s.ElasticsearchJobIndex))
	}
	if s.Secrets.ElasticsearchPassword != "" && s.ElasticsearchUser == "" {
		add("elasticsearchUser", "is empty but an Elasticsearch password is set: set the user, or clear the password")
	}
	if p := checkBaseURL(s.PrometheusURL, "http://localhost:9090"); p != "" {
		add("prometheusUrl", p)
	}
	if s.Secrets.PrometheusBearerToken != "" && (s.PrometheusUser != "" || s.Secrets.PrometheusPassword != "") {
		add("prometheusBearerToken", "cannot be combined with prometheusUser/prometheusPassword: choose bearer token or basic auth")
	}
	if s.Secrets.PrometheusPassword != "" && s.PrometheusUser == "" {
		add("prometheusUser", "is empty but a Prometheus password is set: set the user, or clear the password")
	}
	if p := config.TenantProblem(s.PrometheusTenant); p != "" {
		add("prometheusTenant", p)
	}
	if s.PrometheusTenantHeader != "" {
		if p := config.TenantHeaderProblem(s.PrometheusTenantHeader); p != "" {
			add("prometheusTenantHeader", p)
		} else if s.PrometheusTenant == "" {
			add("prometheusTenantHeader", "is set but prometheusTenant is not: set the tenant, or clear the header")
		}
	}
	if s.TimeoutSeconds < 1 || s.TimeoutSeconds > MaxTimeoutSeconds {
		add("timeoutSeconds", fmt.Sprintf("must be between 1 and %d seconds, got %d", MaxTimeoutSeconds, s.TimeoutSeconds))
	}
	switch s.UserMapping {
	case UserMappingLogin, UserMappingEmail, UserMappingEmailLocalPart:
	default:
		add("userMapping", fmt.Sprintf("must be login, email or emailLocalPart, got %q", s.UserMapping))
	}
	switch s.IdentitySource {
	case IdentityIDToken, IdentityUnverifiedLogin:
	default:
		add("identitySource", fmt.Sprintf("must be idToken or unverifiedLogin, got %q", s.IdentitySource))
	}
	for _, m := range s.TrustedAuthMethods {
		switch base := strings.TrimSuffix(m, "*"); {
		case strings.TrimSpace(m) == "" || base == "":
			add("trustedAuthMethods", fmt.Sprintf("must list Grafana authentication methods (ldap, auth.saml, oauth_*, ...), got %q", m))
		case strings.Contains(base, "*"):
			add("trustedAuthMethods", fmt.Sprintf("%q: * is allowed only at the end", m))
		case base == "password" || base == "apikey" || base == "render" || base == "basic":
			add("trustedAuthMethods", fmt.Sprintf("%q is Grafana's own sign-in, whose accounts can rename themselves: map them with userIdMap instead", m))
		}
	}
	ids := make([]string, 0, len(s.UserIDMap))
	for id := range s.UserIDMap {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if p := UserIDMapKeyProblem(id); p != "" {
			add("userIdMap", p)
		} else if strings.TrimSpace(s.UserIDMap[id]) == "" {
			add("userIdMap", fmt.Sprintf("entries must map a Grafana user id (\"user:<numeric id>\" or the uid) to a Slurm user, got %q: %q", id, s.UserIDMap[id]))
		}
	}
	if s.GrafanaURL != "" {
		if u, err := url.Parse(s.GrafanaURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" {
			add("grafanaUrl", "must be Grafana's base URL, http:// or https:// without credentials (e.g. http://localhost:3000)")
		}
	}
	for _, r := range s.FullAccessRoles {
		if r != "Admin" && r != "Editor" && r != "Viewer" {
			add("fullAccessRoles", fmt.Sprintf("must list Grafana roles (Admin, Editor, Viewer), got %q", r))
		}
	}
	if s.MaxJobs < 1 || s.MaxJobs > 100000 {
		add("maxJobs", fmt.Sprintf("must be between 1 and 100000, got %d", s.MaxJobs))
	}
	if s.MaxSeries < 1 || s.MaxSeries > 1000000 {
		add("maxSeries", fmt.Sprintf("must be between 1 and 1000000, got %d", s.MaxSeries))
	}
	if s.SilentAfterMinutes < 1 || s.SilentAfterMinutes > 10080 {
		add("silentAfterMinutes", fmt.Sprintf("must be between 1 and 10080 (a week), got %d", s.SilentAfterMinutes))
	}
	for i, a := range s.Allocations {
		if err := a.Check(); err != nil {
			add(fmt.Sprintf("allocations[%d]", i), err.Error())
		}
	}
	if s.AllocationsURL != "" {
		if u, err := url.Parse(s.AllocationsURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
			add("allocationsUrl", "must be an http:// or https:// URL without credentials (e.g. http://collector:9310/constants)")
		}
	}
	errs = append(errs, s.tlsProblems()...)
	if s.JobPageURL != "" && !strings.HasPrefix(s.JobPageURL, "/") && !strings.HasPrefix(s.JobPageURL, "http://") && !strings.HasPrefix(s.JobPageURL, "https://") {
		add("jobPageUrl", fmt.Sprintf("must be a path (/d/...) or an http(s) URL, got %q", s.JobPageURL))
	}
	if strings.TrimSpace(s.ClusterFilter) != s.ClusterFilter {
		add("clusterFilter", fmt.Sprintf("has leading or trailing spaces: %q", s.ClusterFilter))
	}
	return errors.Join(errs...)
}

// checkBaseURL returns what is wrong with a backend base URL, or "".
// The URL is never echoed back if it carries credentials.
func checkBaseURL(raw, example string) string {
	if raw == "" {
		return "is required (e.g. " + example + ")"
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Sprintf("is not a valid URL: %v", errors.Unwrap(err))
	}
	if u.User != nil {
		return "must not contain credentials: put the user in its own setting and the password in the secure field"
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Sprintf("must start with http:// or https://, got %q", raw)
	}
	if u.Host == "" {
		return fmt.Sprintf("has no host: %q", raw)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return fmt.Sprintf("must be a base URL without query or fragment, got %q", raw)
	}
	return ""
}

// checkIndexName applies Elasticsearch's rules for index names, so a bad name
// is reported here rather than as an obscure error from the server.
func checkIndexName(name string) string {
	switch {
	case name == "":
		return "must not be empty"
	case name == "." || name == "..":
		return fmt.Sprintf("%q is not a valid index name", name)
	case len(name) > 255:
		return fmt.Sprintf("is %d bytes long; Elasticsearch allows at most 255", len(name))
	case strings.ToLower(name) != name:
		return fmt.Sprintf("must be lowercase, got %q", name)
	case strings.ContainsAny(name[:1], "-_+"):
		return fmt.Sprintf("must not start with -, _ or +, got %q", name)
	}
	if i := strings.IndexAny(name, "\\/*?\"<>| ,#:"); i >= 0 {
		return fmt.Sprintf("must not contain %q, got %q", string(name[i]), name)
	}
	return ""
}
