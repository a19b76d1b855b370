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
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
)

// Defaults for the optional settings.
const (
	DefaultJobIndex       = "jobsight-jobs"
	DefaultNodeIndex      = "jobsight-nodes"
	DefaultTimeoutSeconds = 30
	// MaxTimeoutSeconds bounds timeoutSeconds so one slow backend cannot hold a
	// Grafana request for longer than Grafana itself waits.
	MaxTimeoutSeconds = 300
)

// Names of the keys in DecryptedSecureJSONData. Secrets are read from there
// only, never from JSONData.
const (
	SecureElasticsearchPassword = "elasticsearchPassword"
	SecurePrometheusBearerToken = "prometheusBearerToken"
	SecurePrometheusPassword    = "prometheusPassword"
)

// Settings is the configuration of one Jobsight datasource instance.
// The exported JSON-tagged fields are the datasource's jsonData; Secrets are
// filled from its decrypted secure JSON data.
type Settings struct {
	// ElasticsearchURL is the base URL of the Elasticsearch (or OpenSearch)
	// HTTP API, e.g. http://es:9200. Required.
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

	// ClusterFilter, when set, restricts every query to this Slurm cluster
	// name. Empty means all clusters.
	ClusterFilter string `json:"clusterFilter,omitempty"`
	// TimeoutSeconds bounds each request to Elasticsearch or Prometheus.
	// Default 30, at most 300.
	TimeoutSeconds int `json:"timeoutSeconds,omitempty"`

	// Secrets come from DecryptedSecureJSONData only.
	Secrets Secrets `json:"-"`
}

// Secrets are the decrypted secure fields of a datasource instance. They are
// never logged and never appear in messages.
type Secrets struct {
	ElasticsearchPassword string
	PrometheusBearerToken string
	PrometheusPassword    string
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
	sec := inst.DecryptedSecureJSONData
	s.Secrets = Secrets{
		ElasticsearchPassword: sec[SecureElasticsearchPassword],
		PrometheusBearerToken: sec[SecurePrometheusBearerToken],
		PrometheusPassword:    sec[SecurePrometheusPassword],
	}
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
	if s.TimeoutSeconds < 1 || s.TimeoutSeconds > MaxTimeoutSeconds {
		add("timeoutSeconds", fmt.Sprintf("must be between 1 and %d seconds, got %d", MaxTimeoutSeconds, s.TimeoutSeconds))
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
