// Package storecheck connects to a component's stores with its configured
// credentials and TLS trust and makes, one at a time, each call that
// component makes (the calls of internal/store/elasticsearch's privileges
// table for its role, and a remote write of one harmless sample), so that
// an administrator reads, one line per call, what works and what is
// missing: the Elasticsearch privilege by its name, an unreachable store,
// a TLS trust to configure, a refused credential, a Prometheus without its
// remote-write receiver. Used by `jobsight-agent check-stores`,
// `jobsight cluster-state --check-stores` and `jobsight check-stores`.
//
// It writes what a component would: this month's indices are created with
// their mappings where they are missing (as setup and the agents do), an
// empty document "jobsight-check-<host>" is written where the role writes
// (and deleted where the credential may, which no role needs), and one
// sample of jobsight_store_check_timestamp_seconds. It never prints a
// credential.
package storecheck

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/jobsight/jobsight/internal/config"
	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/internal/store/elasticsearch"
	"github.com/jobsight/jobsight/internal/store/promremote"
)

// Status is the outcome of one call.
type Status string

// The outcomes. Only Problem makes the check fail.
const (
	OK      Status = "ok"
	Problem Status = "MISSING"
	Skipped Status = "skipped"
	Note    Status = "note"
)

// Line is one call and its outcome.
type Line struct {
	Status Status
	Store  string // "elasticsearch" or "prometheus"
	Call   string // the privileges table's name, "remote write", "query"
	Target string // what it was made on: "PUT /jobsight-jobs-2026.05", a URL
	Detail string // what it found; for a Problem, what is missing and what to set
}

// String is the line as printed.
func (l Line) String() string {
	s := fmt.Sprintf("%-8s %s %s", l.Status, l.Store, l.Call)
	if l.Target != "" {
		s += " (" + l.Target + ")"
	}
	if l.Detail != "" {
		s += ": " + l.Detail
	}
	return s
}

// Report is the lines of a check.
type Report struct {
	Lines []Line
}

// Problems counts the lines that name something missing.
func (r *Report) Problems() int {
	n := 0
	for _, l := range r.Lines {
		if l.Status == Problem {
			n++
		}
	}
	return n
}

// Write prints the lines and a last line with the count of problems.
func (r *Report) Write(w io.Writer) {
	for _, l := range r.Lines {
		fmt.Fprintln(w, l)
	}
	made := 0
	for _, l := range r.Lines {
		if l.Status != Skipped {
			made++
		}
	}
	if n := r.Problems(); n > 0 {
		fmt.Fprintf(w, "store check: %d of %d calls failed\n", n, made)
	} else {
		fmt.Fprintf(w, "store check: ok (%d calls)\n", made)
	}
}

// Add adds a line.
func (r *Report) Add(l Line) { r.Lines = append(r.Lines, l) }

// Base is an index kind of a role: its name and mapping.
type Base struct {
	Name    string
	Monthly bool // written as "<Name>-YYYY.MM"; the calls name this month's
	Mapping []byte
}

// Elasticsearch is what to check against one Elasticsearch credential.
type Elasticsearch struct {
	Conn config.Elasticsearch
	// Role is the privileges table's role (elasticsearch.Uses) whose
	// calls are made.
	Role string
	// Bases are the role's indices by kind (elasticsearch.KindJob, ...).
	Bases map[string]Base
	// Skip gives the calls the configuration turns off, by "kind/call",
	// with the reason ("retention_months is 0").
	Skip map[string]string
	// Label names the credential in the lines, e.g. "report credential";
	// empty for the component's own.
	Label string
}

// Options are the check's settings.
type Options struct {
	// Host names the scratch document (jobsight-check-<host>) and labels
	// the sample; the short host name when empty.
	Host string
	// Now is this month; time.Now when zero.
	Now time.Time
}

// Defaults fills in the host and the time.
func (o *Options) Defaults() {
	if o.Host == "" {
		h, _ := os.Hostname()
		o.Host, _, _ = strings.Cut(h, ".")
	}
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
}

// quiet is the clients' logger: the lines say what matters.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// step is one call of a plan.
type step struct {
	call, kind string
	target     elasticsearch.CheckTarget
}

// plan is the role's calls in the table's order, on its bases.
func (e Elasticsearch) plan(opts Options) []step {
	var out []step
	for _, u := range elasticsearch.Uses {
		if u.Role != e.Role {
			continue
		}
		b := e.Bases[u.Kind]
		t := elasticsearch.CheckTarget{Index: b.Name, Base: b.Name, Mapping: b.Mapping, DocID: "jobsight-check-" + opts.Host}
		if b.Monthly {
			t.Index = jobmodel.MonthlyIndex(b.Name, opts.Now)
		}
		for _, c := range u.Calls {
			if c == "close pit" || c == "open pit" {
				continue // the datasource's: not a role checked here
			}
			out = append(out, step{call: c, kind: u.Kind, target: t})
		}
	}
	return out
}

// CheckElasticsearch makes the role's calls with e's credential and adds
// a line for each. After an unreachable store, a TLS failure or a refused
// credential the other calls are not made (one line says so).
func CheckElasticsearch(ctx context.Context, r *Report, e Elasticsearch, opts Options) {
	opts.Defaults()
	store := "elasticsearch"
	if e.Label != "" {
		store += " [" + e.Label + "]"
	}
	client, err := elasticsearch.FromConfig(e.Conn, quiet)
	if err != nil {
		r.Add(Line{Status: Problem, Store: store, Call: "connect", Detail: err.Error()})
		return
	}
	var written []elasticsearch.CheckTarget
	steps := e.plan(opts)
	for i, s := range steps {
		l := Line{Store: store, Call: s.call, Target: request(s)}
		if why, ok := e.Skip[s.kind+"/"+s.call]; ok {
			l.Status, l.Detail = Skipped, "not made by this configuration: "+why
			r.Add(l)
			continue
		}
		note, err := client.CheckCall(ctx, s.call, s.target)
		if err == nil {
			l.Status, l.Detail = OK, note
			r.Add(l)
			if s.call == "bulk" || s.call == "index doc" {
				written = append(written, s.target)
			}
			continue
		}
		l.Status = Problem
		var stop bool
		l.Detail, stop = explainES(err, s, e)
		r.Add(l)
		if stop {
			if left := len(steps) - i - 1; left > 0 {
				r.Add(Line{Status: Skipped, Store: store, Call: fmt.Sprintf("%d more calls", left), Detail: "not made: fix the line above first"})
			}
			return
		}
	}
	for _, t := range written {
		l := Line{Store: store, Call: "delete doc", Target: "DELETE /" + t.Index + "/_doc/" + t.DocID}
		note, err := client.CheckCall(ctx, "delete doc", t)
		// A server that makes a write visible only after a refresh
		// (ZincSearch) answers 400 for a moment.
		for deadline := time.Now().Add(3 * time.Second); isStatus(err, http.StatusBadRequest) && time.Now().Before(deadline); {
			time.Sleep(250 * time.Millisecond)
			note, err = client.CheckCall(ctx, "delete doc", t)
		}
		switch {
		case err == nil:
			l.Status, l.Detail = OK, note+" (the check's scratch document)"
		case isStatus(err, http.StatusForbidden):
			l.Status, l.Detail = Note, "left in place: the credential may not delete documents (the `delete` privilege, which Jobsight does not need); the empty document is overwritten by the next check"
		default:
			l.Status, l.Detail = Note, "left in place: "+err.Error()
		}
		r.Add(l)
	}
}

// request is the call's request as the table writes it, with the index.
func request(s step) string {
	req := elasticsearch.APICalls[s.call].Request
	if i := strings.IndexByte(req, '('); i > 0 {
		req = strings.TrimSpace(req[:i])
	}
	index := s.target.Index
	switch s.call {
	case "search", "search by ids":
		index = jobmodel.SearchIndices(s.target.Base)
	case "list monthly":
		index = jobmodel.IndexPattern(s.target.Base)
	case "delete index":
		index = s.target.Base + "-" + elasticsearch.CheckMonth
	case "bulk create":
		req = "PUT /<index>"
	}
	req = strings.ReplaceAll(req, "<index>", index)
	req = strings.ReplaceAll(req, "<base>-*", jobmodel.IndexPattern(s.target.Base))
	return strings.ReplaceAll(req, "<id>", s.target.DocID)
}

func isStatus(err error, status int) bool {
	var e *elasticsearch.Error
	return errors.As(err, &e) && e.Status == status
}

// explainES turns a call's error into what the administrator must do;
// stop is true when no further call can tell more (unreachable, TLS, a
// refused credential, not Elasticsearch).
func explainES(err error, s step, e Elasticsearch) (detail string, stop bool) {
	var ee *elasticsearch.Error
	if !errors.As(err, &ee) {
		return "failed: " + err.Error(), false
	}
	switch {
	case errors.Is(err, elasticsearch.ErrUnsupportedServer):
		return elasticsearch.ErrUnsupportedServer.Error(), true
	case ee.Status == 0:
		return TransportProblem(Redacted(e.Conn.URLs...), ee.Err, "elasticsearch.ca_file", e.Conn.CAFile), true
	case ee.Status == http.StatusUnauthorized:
		if e.Conn.Username == "" {
			return "authentication required (status 401): the server asks for credentials; set elasticsearch.username and elasticsearch.password_file", true
		}
		return fmt.Sprintf("authentication failed for user %q (status 401): the password in elasticsearch.password_file (%s) or the user is wrong (the credential itself is refused, before any privilege)", e.Conn.Username, e.Conn.PasswordFile), true
	case ee.Status == http.StatusForbidden:
		// Without monitor the client's product check (GET /, before
		// every other call) fails, so every other call would too.
		return missingPrivilege(s, e.Role, ee), s.call == "info"
	case ee.Status == http.StatusNotFound && (s.call == "get mapping" || s.call == "put mapping"):
		return fmt.Sprintf("index %s does not exist: the create index line says why (or run setup)", s.target.Index), false
	}
	return "failed: " + ee.Error(), false
}

// missingPrivilege names the privilege the table gives the refused call.
func missingPrivilege(s step, role string, ee *elasticsearch.Error) string {
	c := elasticsearch.APICalls[s.call]
	var what string
	switch {
	case c.Cluster != "":
		what = fmt.Sprintf("missing cluster privilege %s", c.Cluster)
	case c.Index != "":
		names := s.target.Index
		if s.kind != "" && s.kind != elasticsearch.KindClusterState && s.kind != elasticsearch.KindHistory {
			names = s.target.Base + ", " + jobmodel.IndexPattern(s.target.Base)
		}
		what = fmt.Sprintf("missing index privilege %s on %s", c.Index, names)
	default:
		what = "refused"
	}
	return fmt.Sprintf("%s (role %s in docs/indices.md; the server said: status 403: %s)", what, role, shortReason(ee))
}

// shortReason is the server's reason, cut to one readable line.
func shortReason(ee *elasticsearch.Error) string {
	r := ee.Reason
	if ee.Type != "" {
		r = ee.Type + ": " + r
	}
	if i := strings.Index(r, ", this action is granted by"); i > 0 {
		r = r[:i]
	}
	if len(r) > 200 {
		r = r[:200] + "…"
	}
	return r
}

// TransportProblem says why no answer came from url: a TLS trust to set
// (caOption), or the store unreachable and why.
func TransportProblem(url string, err error, caOption, caFile string) string {
	var unknown x509.UnknownAuthorityError
	var host x509.HostnameError
	var invalid x509.CertificateInvalidError
	var header tls.RecordHeaderError
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	switch {
	case errors.As(err, &unknown) || strings.Contains(msg, "certificate signed by unknown authority"):
		if caFile != "" {
			return fmt.Sprintf("TLS: certificate signed by unknown authority — %s (%s) does not hold the CA that signed %s's certificate", caOption, caFile, url)
		}
		return fmt.Sprintf("TLS: certificate signed by unknown authority — set %s to the PEM bundle of the CA that signed %s's certificate", caOption, url)
	case errors.As(err, &host):
		return fmt.Sprintf("TLS: %v — use a URL with a name the certificate holds", host.Error())
	case errors.As(err, &invalid):
		return "TLS: " + invalid.Error()
	case errors.As(err, &header) || strings.Contains(msg, "server gave HTTP response to HTTPS client"):
		return fmt.Sprintf("TLS: %s does not answer TLS — use http:// for it, or enable TLS on the server", url)
	}
	return fmt.Sprintf("unreachable: %s: %s", url, netReason(err))
}

// netReason is the reason of a transport error, without the request.
func netReason(err error) string {
	var dns *net.DNSError
	var ne net.Error
	switch {
	case err == nil:
		return "no answer"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.As(err, &dns):
		return "cannot resolve " + dns.Name + ": " + dns.Err
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		return "no answer in time (the configured timeout)"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH):
		return "no route to host"
	}
	msg := err.Error()
	var ue *url.Error
	if errors.As(err, &ue) {
		msg = ue.Err.Error()
	}
	if strings.Contains(msg, "connection refused") {
		return "connection refused"
	}
	return msg
}

// SampleName is the series the remote-write check writes: the time of
// the check, one series per component and host.
const SampleName = "jobsight_store_check_timestamp_seconds"

// RemoteWrite is what to check against a remote-write endpoint.
type RemoteWrite struct {
	Conn      config.RemoteWrite
	Component string // "agent", "collector": the sample's component label
	Cluster   string // the sample's cluster label; none when empty
}

// CheckRemoteWrite writes one sample of SampleName, labelled with the
// component, the host and the cluster, with rw's credentials and trust,
// and adds its line.
func CheckRemoteWrite(ctx context.Context, r *Report, rw RemoteWrite, opts Options) {
	opts.Defaults()
	l := Line{Store: "prometheus", Call: "remote write", Target: "POST " + Redacted(rw.Conn.RemoteWriteURL)}
	client, err := promremote.FromConfig(rw.Conn, quiet)
	if err != nil {
		l.Status, l.Detail = Problem, err.Error()
		r.Add(l)
		return
	}
	labels := []promremote.Label{{Name: "component", Value: rw.Component}, {Name: "host", Value: opts.Host}}
	if rw.Cluster != "" {
		labels = append(labels, promremote.Label{Name: "cluster", Value: rw.Cluster})
	}
	err = client.Write(ctx, []promremote.Series{{Name: SampleName, Labels: labels,
		Samples: []promremote.Sample{{TimestampMs: opts.Now.UnixMilli(), Value: float64(opts.Now.Unix())}}}})
	if err == nil {
		l.Status, l.Detail = OK, fmt.Sprintf("wrote one sample of %s{component=%q}", SampleName, rw.Component)
		r.Add(l)
		return
	}
	l.Status, l.Detail = Problem, explainWrite(err, rw.Conn)
	r.Add(l)
}

// explainWrite says what a failed remote write means.
func explainWrite(err error, c config.RemoteWrite) string {
	var we *promremote.WriteError
	if !errors.As(err, &we) {
		return "failed: " + err.Error()
	}
	switch {
	case we.Status == 0:
		return TransportProblem(Redacted(c.RemoteWriteURL), we.Err, "prometheus.ca_file", c.CAFile)
	case we.Status == http.StatusNotFound:
		return fmt.Sprintf("remote write is not enabled on %s (--web.enable-remote-write-receiver), or the URL is not a remote-write endpoint (Prometheus: …/api/v1/write); status 404", Redacted(c.RemoteWriteURL))
	case we.Status == http.StatusUnauthorized || we.Status == http.StatusForbidden:
		how := "the server asks for credentials: set prometheus.bearer_token_file, or prometheus.username and password_file"
		switch {
		case c.BearerTokenFile != "":
			how = "the token in prometheus.bearer_token_file (" + c.BearerTokenFile + ") is refused"
		case c.Username != "":
			how = fmt.Sprintf("user %q with prometheus.password_file (%s) is refused", c.Username, c.PasswordFile)
		}
		if c.Tenant != "" {
			how += fmt.Sprintf(", or tenant %q is not theirs", c.Tenant)
		}
		return fmt.Sprintf("authentication refused (status %d): %s", we.Status, how)
	}
	return "failed: " + err.Error()
}

// Redacted joins urls with any password in them replaced (the options
// refuse none, but a line must never show one).
func Redacted(urls ...string) string {
	out := make([]string, len(urls))
	for i, u := range urls {
		out[i] = u
		if p, err := url.Parse(u); err == nil && p.User != nil {
			out[i] = p.Redacted()
		} else if err != nil && strings.Contains(u, "@") {
			out[i] = "(a URL that does not parse)"
		}
	}
	return strings.Join(out, ", ")
}
