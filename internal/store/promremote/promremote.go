// Package promremote sends the agent's gauges to Prometheus with remote
// write 1.0 (Prometheus started with --web.enable-remote-write-receiver, or
// Mimir, Thanos, VictoriaMetrics).
//
// A batch is encoded once (Encode) and sent (WriteEncoded); a batch that
// could not be sent can be spooled as those bytes and replayed verbatim.
// Errors that may pass later (no answer, 429, 5xx) match ErrRetryable; those
// that will not (4xx, e.g. an out-of-order sample) match ErrPermanent.
package promremote

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/exp/api/remote"
	"github.com/prometheus/prometheus/prompb"

	"github.com/jobsight/jobsight/internal/config"
	"github.com/jobsight/jobsight/internal/store"
)

// DefaultTimeout bounds one Write, retries included, when Config.Timeout is
// zero.
const DefaultTimeout = 30 * time.Second

// DefaultMaxRetries is how often a retryable failure is retried within one
// Write when Config.MaxRetries is zero.
const DefaultMaxRetries = 2

// Label is one label of a series.
type Label struct {
	Name  string
	Value string
}

// Sample is one value of a series at a time in milliseconds since the epoch.
type Sample struct {
	TimestampMs int64
	Value       float64
}

// Series is one time series: its metric name, its labels (other than
// __name__) and its samples. Encode sorts labels by name and samples by time.
type Series struct {
	Name    string
	Labels  []Label
	Samples []Sample
}

// Config says where to write and how to authenticate. The caller reads the
// secrets from files; they are never logged.
type Config struct {
	// URL is the full remote-write endpoint, e.g.
	// "http://prometheus:9090/api/v1/write". Required.
	URL string
	// BearerToken, when set, is sent as "Authorization: Bearer …".
	BearerToken string
	// Username and Password, when Username is set, are sent as basic auth.
	// BearerToken and Username are exclusive.
	Username string
	Password string
	// Tenant, when set, is sent in TenantHeader on every request (spool
	// replays included), for multi-tenant stores (Mimir, Thanos Receive).
	Tenant string
	// TenantHeader carries Tenant; config.DefaultTenantHeader
	// (X-Scope-OrgID) when empty.
	TenantHeader string
	// Timeout bounds one Write including its retries; DefaultTimeout when 0.
	Timeout time.Duration
	// MaxRetries is how often a retryable failure is retried within one
	// Write; DefaultMaxRetries when 0. The client library retries at least
	// once, so values below 1 mean 1.
	MaxRetries int
	// Transport is the HTTP transport; http.DefaultTransport when nil.
	Transport http.RoundTripper
	// Logger receives retry messages; slog.Default() when nil.
	Logger *slog.Logger
}

// ErrRetryable matches errors after which the same batch may succeed later:
// the server did not answer, or answered 429 or 5xx.
var ErrRetryable = errors.New("retryable")

// ErrPermanent matches errors after which the same batch will fail again:
// the server rejected it (4xx), e.g. out-of-order or too old samples.
var ErrPermanent = errors.New("permanent")

// WriteError is a failed remote write.
type WriteError struct {
	URL    string // the endpoint, without credentials
	Status int    // HTTP status, 0 when no answer came
	Err    error
}

// Error implements error.
func (e *WriteError) Error() string {
	if e.Status == 0 {
		return fmt.Sprintf("remote write to %s: no answer: %v", e.URL, e.Err)
	}
	return fmt.Sprintf("remote write to %s: status %d: %v", e.URL, e.Status, e.Err)
}

// Unwrap returns the underlying error.
func (e *WriteError) Unwrap() error { return e.Err }

// Is matches ErrRetryable or ErrPermanent by the answer's status.
func (e *WriteError) Is(target error) bool {
	switch target {
	case ErrRetryable:
		return e.Retryable()
	case ErrPermanent:
		return !e.Retryable() && !e.accessDenied()
	case store.ErrAccessDenied:
		return e.accessDenied()
	}
	return false
}

// accessDenied: 401 or 403, the credentials are refused (not the batch).
func (e *WriteError) accessDenied() bool {
	return e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden
}

// Retryable reports whether the batch may succeed later unchanged.
func (e *WriteError) Retryable() bool {
	return e.Status == 0 || e.Status == http.StatusTooManyRequests || e.Status >= 500
}

// Client writes series to one remote-write endpoint. It is safe for
// concurrent use.
type Client struct {
	api     *remote.API
	url     string
	timeout time.Duration
}

// New returns a client for cfg; it does not contact the server.
func New(cfg Config) (*Client, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("promremote: URL %q must be an http:// or https:// URL", cfg.URL)
	}
	if u.User != nil {
		return nil, errors.New("promremote: URL must not hold credentials; use Username and Password")
	}
	if cfg.BearerToken != "" && cfg.Username != "" {
		return nil, errors.New("promremote: set either a bearer token or a username, not both")
	}
	if p := config.TenantProblem(cfg.Tenant); p != "" {
		return nil, fmt.Errorf("promremote: tenant %s", p)
	}
	if cfg.TenantHeader != "" {
		if p := config.TenantHeaderProblem(cfg.TenantHeader); p != "" {
			return nil, fmt.Errorf("promremote: tenant header %s", p)
		}
	}
	base := cfg.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	retries := cfg.MaxRetries
	if retries == 0 {
		retries = DefaultMaxRetries
	}
	retries = max(retries, 1) // 0 means unlimited to the library
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	logger = logger.With("component", "sink.promremote")
	api, err := remote.NewAPI(u.String(),
		remote.WithAPIPath(""), // URL is the whole endpoint
		remote.WithAPIHTTPClient(&http.Client{Transport: &transport{
			base: base, bearer: cfg.BearerToken, user: cfg.Username, password: cfg.Password,
			tenant: config.TenantHeaders(cfg.TenantHeader, cfg.Tenant),
		}}),
		remote.WithAPIBackoff(remote.BackoffConfig{Min: 200 * time.Millisecond, Max: 2 * time.Second, MaxRetries: retries}),
		remote.WithAPILogger(logger),
	)
	if err != nil {
		return nil, fmt.Errorf("promremote: %w", err)
	}
	c := &Client{api: api, url: u.String(), timeout: cfg.Timeout}
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	return c, nil
}

// Write encodes series and sends them in one request.
func (c *Client) Write(ctx context.Context, series []Series) error {
	payload, err := Encode(series)
	if err != nil {
		return err
	}
	if payload == nil {
		return nil
	}
	return c.WriteEncoded(ctx, payload)
}

// WriteEncoded sends a batch Encode returned, e.g. one replayed from the
// spool. A failure is a *WriteError matching ErrRetryable or ErrPermanent.
func (c *Client) WriteEncoded(ctx context.Context, payload []byte) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	rec := &statusRecorder{}
	_, err := c.api.Write(context.WithValue(ctx, statusKey{}, rec), remote.WriteV1MessageType, encoded(payload))
	if err == nil {
		return nil
	}
	return &WriteError{URL: c.url, Status: rec.get(), Err: err}
}

// encoded is an already encoded WriteRequest. It implements the methods the
// remote API uses to marshal gogo-protobuf messages, copying itself.
type encoded []byte

func (e encoded) Size() int { return len(e) }

func (e encoded) MarshalToSizedBuffer(b []byte) (int, error) { return copy(b, e), nil }

// validName reports whether s matches [a-zA-Z_:][a-zA-Z0-9_:]* (metric
// names, colon true) or [a-zA-Z_][a-zA-Z0-9_]* (label names).
func validName(s string, colon bool) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		ok := c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			(i > 0 && c >= '0' && c <= '9') || (colon && c == ':')
		if !ok {
			return false
		}
	}
	return true
}

// Encode validates series and encodes them as a remote-write 1.0
// WriteRequest (protobuf, not yet compressed). Labels are sorted by name,
// samples by time; series without samples are left out, and nil is returned
// when none remain. An invalid metric or label name, a reserved (__) or
// duplicate label, or an empty label value is an error naming the series.
func Encode(series []Series) ([]byte, error) {
	req := prompb.WriteRequest{Timeseries: make([]prompb.TimeSeries, 0, len(series))}
	for _, s := range series {
		if len(s.Samples) == 0 {
			continue
		}
		if !validName(s.Name, true) {
			return nil, fmt.Errorf("promremote: invalid metric name %q", s.Name)
		}
		labels := make([]prompb.Label, 0, len(s.Labels)+1)
		labels = append(labels, prompb.Label{Name: "__name__", Value: s.Name})
		for _, l := range s.Labels {
			switch {
			case !validName(l.Name, false):
				return nil, fmt.Errorf("promremote: series %s: invalid label name %q", s.Name, l.Name)
			case len(l.Name) >= 2 && l.Name[:2] == "__":
				return nil, fmt.Errorf("promremote: series %s: label name %q is reserved", s.Name, l.Name)
			case l.Value == "":
				return nil, fmt.Errorf("promremote: series %s: label %q has an empty value", s.Name, l.Name)
			}
			labels = append(labels, prompb.Label{Name: l.Name, Value: l.Value})
		}
		slices.SortFunc(labels, func(a, b prompb.Label) int { return cmp.Compare(a.Name, b.Name) })
		for i := 1; i < len(labels); i++ {
			if labels[i].Name == labels[i-1].Name {
				return nil, fmt.Errorf("promremote: series %s: label %q given twice", s.Name, labels[i].Name)
			}
		}
		samples := make([]prompb.Sample, len(s.Samples))
		for i, p := range s.Samples {
			samples[i] = prompb.Sample{Timestamp: p.TimestampMs, Value: p.Value}
		}
		slices.SortStableFunc(samples, func(a, b prompb.Sample) int { return cmp.Compare(a.Timestamp, b.Timestamp) })
		req.Timeseries = append(req.Timeseries, prompb.TimeSeries{Labels: labels, Samples: samples})
	}
	if len(req.Timeseries) == 0 {
		return nil, nil
	}
	b, err := req.Marshal()
	if err != nil {
		return nil, fmt.Errorf("promremote: encoding write request: %w", err)
	}
	return b, nil
}

// Decode parses a batch Encode returned, for checking spooled batches.
func Decode(payload []byte) ([]Series, error) {
	var req prompb.WriteRequest
	if err := req.Unmarshal(payload); err != nil {
		return nil, fmt.Errorf("promremote: decoding write request: %w", err)
	}
	out := make([]Series, 0, len(req.Timeseries))
	for _, ts := range req.Timeseries {
		var s Series
		for _, l := range ts.Labels {
			if l.Name == "__name__" {
				s.Name = l.Value
				continue
			}
			s.Labels = append(s.Labels, Label{Name: l.Name, Value: l.Value})
		}
		for _, p := range ts.Samples {
			s.Samples = append(s.Samples, Sample{TimestampMs: p.Timestamp, Value: p.Value})
		}
		out = append(out, s)
	}
	return out, nil
}

// statusKey keys the *statusRecorder of one WriteEncoded call in the
// request context.
type statusKey struct{}

// statusRecorder keeps the last HTTP status one WriteEncoded call got.
type statusRecorder struct {
	mu     sync.Mutex
	status int
}

func (r *statusRecorder) set(s int) {
	r.mu.Lock()
	r.status = s
	r.mu.Unlock()
}

func (r *statusRecorder) get() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.status
}

// transport adds authentication and the tenant header, and records each
// answer's status.
type transport struct {
	base           http.RoundTripper
	bearer         string
	user, password string
	tenant         http.Header // nil: no tenant
}

// RoundTrip implements http.RoundTripper.
func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	rec, _ := req.Context().Value(statusKey{}).(*statusRecorder)
	if t.bearer != "" || t.user != "" || t.tenant != nil {
		req = req.Clone(req.Context())
		if t.bearer != "" {
			req.Header.Set("Authorization", "Bearer "+t.bearer)
		} else if t.user != "" {
			req.SetBasicAuth(t.user, t.password)
		}
		for k, v := range t.tenant {
			req.Header[k] = v
		}
	}
	resp, err := t.base.RoundTrip(req)
	if rec != nil {
		if err != nil {
			rec.set(0)
		} else {
			rec.set(resp.StatusCode)
		}
	}
	return resp, err
}
