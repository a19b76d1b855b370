// Package pluginhost runs the built Jobsight backend executable
// (gpx_jobsight_<os>_<arch>) the way Grafana runs a backend plugin, for the
// tests: hashicorp/go-plugin's handshake (the SDK's magic cookie, protocol
// version 2, gRPC only) and the plugin SDK's gRPC services (Data,
// Diagnostics, Resource), with what Grafana sends on each call — the
// datasource instance settings with JSON data and decrypted secure JSON,
// the signed-in user (login, name, email, role) and org, Grafana's config
// map, the user agent, the FromAlert header of the alert engine, forwarded
// ID-token, OAuth and cookie headers — and the caller's deadline and
// cancellation, which gRPC carries to the plugin.
//
// Grafana's server is under the AGPL and is never built or run by this
// project; its Apache-licensed plugin SDK and go-plugin are what this host
// is made of, and the request conversions are the SDK's own (backend.ToProto
// and backend.FromProto), which Grafana uses too. What the host does not do
// is what Grafana's HTTP layer does before a call reaches a plugin
// (sessions, RBAC on datasources, caching); the tests say so where it
// matters.
package pluginhost

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/backend/grpcplugin"
	"github.com/grafana/grafana-plugin-sdk-go/backend/useragent"
	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"
	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"

	"github.com/jobsight/jobsight/pkg/models"
	"github.com/jobsight/jobsight/test/stack"
)

// DefaultGrafanaVersion is the Grafana release the host says it is (GF_VERSION,
// the user agent) unless Options.GrafanaVersion says otherwise.
const DefaultGrafanaVersion = "12.3.0"

// Executable is the backend's file name for this OS and architecture, as
// Grafana looks it up: "<executable>_<os>_<arch>" from plugin.json.
func Executable() string {
	return fmt.Sprintf("gpx_jobsight_%s_%s", runtime.GOOS, runtime.GOARCH)
}

// Build builds the plugin backend from the repository at root into dir and
// returns the executable's path (the same package the Magefile builds).
func Build(ctx context.Context, root, dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	out := filepath.Join(dir, Executable())
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", out, "./pkg")
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the plugin backend: %w\n%s", err, b)
	}
	return out, nil
}

// BuildAndStart builds the plugin backend from this repository into a
// temporary directory and starts it (Build, then Start); the process is
// stopped when the test ends. Any failure fails the test.
func BuildAndStart(tb testing.TB, ctx context.Context) *Host {
	tb.Helper()
	root, err := stack.RepoRoot()
	if err != nil {
		tb.Fatal(err)
	}
	exe, err := Build(ctx, root, tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	h, err := Start(ctx, exe, Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(h.Close)
	return h
}

// Options configures Start.
type Options struct {
	// GrafanaVersion is GF_VERSION and the user agent's version
	// (DefaultGrafanaVersion when empty).
	GrafanaVersion string
	// Env is more of the plugin's environment. Like Grafana with
	// skip_host_env_var, the host passes none of its own beyond PATH and
	// HOME, so the plugin cannot depend on it.
	Env []string
}

// Host is one running plugin process and its gRPC clients.
type Host struct {
	client  *goplugin.Client
	data    pluginv2.DataClient
	diag    pluginv2.DiagnosticsClient
	res     pluginv2.ResourceClient
	version string
	// pluginVersion is GF_PLUGIN_VERSION and the plugin context's version.
	pluginVersion string
	log           *syncBuffer
}

// Start starts the executable as Grafana does and returns once the
// handshake is done and the services are dispensed.
func Start(ctx context.Context, executable string, opts Options) (*Host, error) {
	version := opts.GrafanaVersion
	if version == "" {
		version = DefaultGrafanaVersion
	}
	h := &Host{version: version, pluginVersion: pluginVersion(), log: &syncBuffer{}}
	cmd := exec.Command(executable)
	cmd.Dir = filepath.Dir(executable)
	cmd.Env = append([]string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"),
		"GF_VERSION=" + version, "GF_EDITION=oss",
		"GF_PLUGIN_VERSION=" + h.pluginVersion,
	}, opts.Env...)
	h.client = goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig: goplugin.HandshakeConfig{
			ProtocolVersion:  grpcplugin.ProtocolVersion,
			MagicCookieKey:   grpcplugin.MagicCookieKey,
			MagicCookieValue: grpcplugin.MagicCookieValue,
		},
		VersionedPlugins: map[int]goplugin.PluginSet{grpcplugin.ProtocolVersion: {
			"data":        &grpcplugin.DataGRPCPlugin{},
			"diagnostics": &grpcplugin.DiagnosticsGRPCPlugin{},
			"resource":    &grpcplugin.ResourceGRPCPlugin{},
		}},
		Cmd:              cmd,
		SkipHostEnv:      true,
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		SyncStderr:       h.log,
		SyncStdout:       h.log,
		// go-plugin relays the plugin's log lines through this logger:
		// into the buffer, not the test's output.
		Logger:       hclog.New(&hclog.LoggerOptions{Name: "plugin", Output: h.log, Level: hclog.Debug}),
		StartTimeout: time.Minute,
	})
	rpc, err := h.client.Client()
	if err != nil {
		h.client.Kill()
		return nil, fmt.Errorf("starting %s: %w\n%s", executable, err, h.log.String())
	}
	dispense := func(name string) (any, error) {
		v, err := rpc.Dispense(name)
		if err != nil {
			return nil, fmt.Errorf("dispensing %s: %w", name, err)
		}
		return v, nil
	}
	var errs []error
	if v, err := dispense("data"); err == nil {
		h.data = v.(pluginv2.DataClient)
	} else {
		errs = append(errs, err)
	}
	if v, err := dispense("diagnostics"); err == nil {
		h.diag = v.(pluginv2.DiagnosticsClient)
	} else {
		errs = append(errs, err)
	}
	if v, err := dispense("resource"); err == nil {
		h.res = v.(pluginv2.ResourceClient)
	} else {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		h.client.Kill()
		return nil, err
	}
	return h, nil
}

// pluginVersion is GF_PLUGIN_VERSION: the version npm's package.json gives
// the build (plugin.json carries a placeholder until the frontend build).
func pluginVersion() string {
	root, err := stack.RepoRoot()
	if err != nil {
		return "dev"
	}
	b, err := os.ReadFile(filepath.Join(root, "package.json"))
	if err != nil {
		return "dev"
	}
	var p struct {
		Version string `json:"version"`
	}
	if json.Unmarshal(b, &p) != nil || p.Version == "" {
		return "dev"
	}
	return p.Version
}

// Close stops the plugin process.
func (h *Host) Close() { h.client.Kill() }

// Exited reports whether the plugin process has exited (crashed).
func (h *Host) Exited() bool { return h.client.Exited() }

// Pid is the plugin process's id (0 when it is not running).
func (h *Host) Pid() int {
	if rc := h.client.ReattachConfig(); rc != nil {
		return rc.Pid
	}
	return 0
}

// Memory is the plugin process's resident memory now and at its peak
// (VmRSS and VmHWM of /proc/<pid>/status), in bytes.
func (h *Host) Memory() (rss, peak int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", h.Pid()))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || (k != "VmRSS" && k != "VmHWM") {
			continue
		}
		var kb int64
		if _, err := fmt.Sscanf(strings.TrimSpace(v), "%d kB", &kb); err != nil {
			return 0, 0, fmt.Errorf("%s: %q: %w", k, v, err)
		}
		if k == "VmRSS" {
			rss = kb << 10
		} else {
			peak = kb << 10
		}
	}
	return rss, peak, nil
}

// Log is what the plugin wrote to stdout and stderr so far (its logs).
func (h *Host) Log() string { return h.log.String() }

// Datasource is one datasource as Grafana stores it: what the plugin gets
// as DataSourceInstanceSettings. SecureJSONData is given decrypted, as
// Grafana hands it to the plugin.
type Datasource struct {
	ID             int64
	UID, Name, URL string
	JSONData       json.RawMessage
	SecureJSONData map[string]string
	// Updated is the settings' last change: the SDK's instance manager
	// makes a new datasource instance when it changes.
	Updated time.Time
}

// Caller is who a request comes from and what Grafana adds to it.
type Caller struct {
	// User is the signed-in user; nil for a request without one (the alert
	// engine's, or a service's).
	User  *backend.User
	OrgID int64 // 1 when 0
	// FromAlert marks a query from Grafana's alert engine (the FromAlert
	// header Grafana's ngalert sets).
	FromAlert bool
	// IDToken is the ID token Grafana forwards (X-Grafana-Id) when ID
	// forwarding is on; OAuthToken and OAuthIDToken the user's OAuth
	// tokens (Authorization, X-Id-Token) when the datasource forwards
	// them; Cookies the Cookie header of the datasource's keepCookies.
	IDToken, OAuthToken, OAuthIDToken, Cookies string
	// IDTokenFunc, when IDToken is empty, gives the ID token of each
	// call (Grafana's tokens live 10 minutes: a long test signs a fresh
	// one per call, e.g. with IDTokens.Token).
	IDTokenFunc func() string
	// Headers are any more forwarded HTTP headers.
	Headers map[string]string
	// Config is Grafana's configuration as it sends it (GF_APP_URL,
	// GF_CONCURRENT_QUERY_COUNT, GF_USER_FACING_DEFAULT_ERROR, …);
	// DefaultConfig when nil.
	Config map[string]string
}

// DefaultConfig is the Grafana configuration the host sends when a
// caller gives none: what a default Grafana 11–13 sends a datasource.
func DefaultConfig() map[string]string {
	return map[string]string{
		"GF_APP_URL":                   "http://127.0.0.1:3000/",
		"GF_CONCURRENT_QUERY_COUNT":    "10",
		"GF_USER_FACING_DEFAULT_ERROR": "Please inspect the Grafana server log for details.",
		"GF_SQL_ROW_LIMIT":             "1000000",
		"GF_RESPONSE_LIMIT":            "0",
	}
}

func (h *Host) pluginContext(ds Datasource, c Caller) backend.PluginContext {
	org := c.OrgID
	if org == 0 {
		org = 1
	}
	cfg := c.Config
	if cfg == nil {
		cfg = DefaultConfig()
	}
	ua, _ := useragent.New(h.version, runtime.GOOS, runtime.GOARCH)
	updated := ds.Updated
	if updated.IsZero() {
		updated = time.Unix(1_700_000_000, 0)
	}
	return backend.PluginContext{
		OrgID:         org,
		PluginID:      models.PluginID,
		PluginVersion: h.pluginVersion,
		User:          c.User,
		GrafanaConfig: backend.NewGrafanaCfg(cfg),
		UserAgent:     ua,
		DataSourceInstanceSettings: &backend.DataSourceInstanceSettings{
			ID: ds.ID, UID: ds.UID, Type: models.PluginID, Name: ds.Name, URL: ds.URL,
			JSONData: ds.JSONData, DecryptedSecureJSONData: ds.SecureJSONData, Updated: updated,
		},
	}
}

// headers are the forwarded HTTP headers of a call, by canonical name.
func (c Caller) headers() map[string]string {
	h := map[string]string{}
	for k, v := range c.Headers {
		h[k] = v
	}
	set := func(k, v string) {
		if v != "" {
			h[k] = v
		}
	}
	if c.IDToken != "" {
		set(backend.GrafanaUserSignInTokenHeaderName, c.IDToken)
	} else if c.IDTokenFunc != nil {
		set(backend.GrafanaUserSignInTokenHeaderName, c.IDTokenFunc())
	}
	set(backend.OAuthIdentityTokenHeaderName, c.OAuthToken)
	set(backend.OAuthIdentityIDTokenHeaderName, c.OAuthIDToken)
	set(backend.CookiesHeaderName, c.Cookies)
	return h
}

// CheckHealth calls the plugin's health check, as "Save & test" does.
func (h *Host) CheckHealth(ctx context.Context, ds Datasource, c Caller) (*backend.CheckHealthResult, error) {
	req := &backend.CheckHealthRequest{PluginContext: h.pluginContext(ds, c), Headers: map[string]string{}}
	for k, v := range c.headers() {
		req.SetHTTPHeader(k, v)
	}
	// The SDK converts every request but this one; it is two fields.
	resp, err := h.diag.CheckHealth(ctx, &pluginv2.CheckHealthRequest{
		PluginContext: backend.ToProto().PluginContext(req.PluginContext), Headers: req.Headers,
	})
	if err != nil {
		return nil, err
	}
	return backend.FromProto().CheckHealthResponse(resp), nil
}

// Query is one panel target as Grafana's /api/ds/query receives it: the
// query model (the target's JSON) and its panel's settings.
type Query struct {
	RefID string
	// Model is the target's JSON (queryType and the query's fields); the
	// host adds refId, datasource, intervalMs and maxDataPoints to it as
	// Grafana does.
	Model         map[string]any
	From, To      time.Time
	Interval      time.Duration // 15 s when 0
	MaxDataPoints int64         // 300 when 0
}

// QueryData sends the queries in one request, as Grafana sends a panel's
// targets (or an alert rule's data queries), and returns the answer.
func (h *Host) QueryData(ctx context.Context, ds Datasource, c Caller, queries ...Query) (*backend.QueryDataResponse, error) {
	req := &backend.QueryDataRequest{PluginContext: h.pluginContext(ds, c), Headers: map[string]string{}}
	if c.FromAlert {
		// ngalert sets it as a plain request header, not a forwarded
		// HTTP one.
		req.Headers[backend.FromAlertHeaderName] = "true"
	}
	for k, v := range c.headers() {
		req.SetHTTPHeader(k, v)
	}
	for i, q := range queries {
		ref := q.RefID
		if ref == "" {
			ref = string(rune('A' + i))
		}
		interval, points := q.Interval, q.MaxDataPoints
		if interval == 0 {
			interval = 15 * time.Second
		}
		if points == 0 {
			points = 300
		}
		m := map[string]any{}
		for k, v := range q.Model {
			m[k] = v
		}
		m["refId"] = ref
		m["datasource"] = map[string]any{"type": models.PluginID, "uid": ds.UID}
		m["intervalMs"] = interval.Milliseconds()
		m["maxDataPoints"] = points
		raw, err := json.Marshal(m)
		if err != nil {
			return nil, fmt.Errorf("query %s: %w", ref, err)
		}
		qt, _ := q.Model["queryType"].(string)
		req.Queries = append(req.Queries, backend.DataQuery{
			RefID: ref, QueryType: qt, MaxDataPoints: points, Interval: interval,
			TimeRange: backend.TimeRange{From: q.From, To: q.To}, JSON: raw,
		})
	}
	resp, err := h.data.QueryData(ctx, backend.ToProto().QueryDataRequest(req))
	if err != nil {
		return nil, err
	}
	return backend.FromProto().QueryDataResponse(resp)
}

// Response is a resource call's answer.
type Response struct {
	Status  int
	Headers map[string][]string
	Body    []byte
}

// CallResource sends a request to a resource route, as Grafana forwards
// /api/datasources/uid/<uid>/resources/<path>: path is what follows
// "resources/" (with its query string).
func (h *Host) CallResource(ctx context.Context, ds Datasource, c Caller, method, path string, body []byte) (*Response, error) {
	u, err := url.Parse(strings.TrimPrefix(path, "/"))
	if err != nil {
		return nil, fmt.Errorf("resource path %q: %w", path, err)
	}
	headers := map[string][]string{"Accept": {"*/*"}}
	for k, v := range c.headers() {
		headers[k] = []string{v}
	}
	req := &backend.CallResourceRequest{
		PluginContext: h.pluginContext(ds, c),
		Path:          u.Path, Method: method, URL: u.String(), Headers: headers, Body: body,
	}
	stream, err := h.res.CallResource(ctx, backend.ToProto().CallResourceRequest(req))
	if err != nil {
		return nil, err
	}
	out := &Response{}
	first := true
	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if first {
			out.Status = int(msg.Code)
			out.Headers = map[string][]string{}
			for k, v := range msg.Headers {
				out.Headers[k] = v.Values
			}
			first = false
		}
		out.Body = append(out.Body, msg.Body...)
	}
	if first {
		return nil, errors.New("the plugin answered the resource call with nothing")
	}
	return out, nil
}

// syncBuffer is a bytes.Buffer safe for the plugin's two output streams.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// Keep the last 4 MiB: a long test's logs stay bounded.
	if s.b.Len() > 4<<20 {
		rest := s.b.Bytes()[s.b.Len()-2<<20:]
		s.b = *bytes.NewBuffer(append([]byte(nil), rest...))
	}
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
