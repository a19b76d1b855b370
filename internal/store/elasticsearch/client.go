// Package elasticsearch writes the agent's documents to Elasticsearch and
// reads them back. It keeps to the portable core of the API (create index
// with an explicit mapping, index and bulk with explicit ids, _search), so
// Elasticsearch 7/8, OpenSearch and the ZincSearch test server all serve.
//
// Failures that may pass later (unreachable server, 429, 5xx) match
// ErrUnavailable; the caller spools those documents. Every error names the
// operation, the index, the document id and the server's reason.
package elasticsearch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	es "github.com/elastic/go-elasticsearch/v8"
	"github.com/elastic/go-elasticsearch/v8/esapi"

	"github.com/jobsight/jobsight/internal/config"
	"github.com/jobsight/jobsight/internal/store"
)

// DefaultTimeout bounds each request when Config.Timeout is zero.
const DefaultTimeout = 30 * time.Second

// Config says where Elasticsearch is and how to reach it.
type Config struct {
	// URLs are the nodes' base URLs, e.g. "https://es1:9200". Required.
	URLs []string
	// Username and Password for HTTP basic auth; empty for none. The caller
	// reads the password from a file; it is never logged.
	Username string
	Password string
	// CACertFile is a PEM bundle of CAs trusted for https in addition to
	// the system's (a private CA); empty for the system's alone.
	CACertFile string
	// Timeout bounds each request; DefaultTimeout when zero.
	Timeout time.Duration
	// MaxRetries is how often the client retries a request that failed with
	// a network error or 502/503/504, across the URLs; 3 when zero, none
	// when negative.
	MaxRetries int
	// Logger receives debug and warning messages; slog.Default() when nil.
	Logger *slog.Logger
	// NoBackoff retries at once (OncePerURL); else the n-th retry waits
	// n × 100 ms.
	NoBackoff bool
}

func (c Config) retryStep() time.Duration {
	if c.NoBackoff {
		return 0
	}
	return 100 * time.Millisecond
}

// Client is an Elasticsearch client for the agent's documents. It is safe
// for concurrent use.
type Client struct {
	es      *es.Client
	timeout time.Duration
	log     *slog.Logger

	mu      sync.Mutex
	checked bool // Info() answered; see ready
	// versions: whether the server honours external versions, asked at
	// start (NoteVersions) or learnt from the first versioned write's
	// answer (0 unknown, 1 yes, -1 no).
	versions int
	// partitions are the bases written as monthly indices, by base (see
	// EnsurePartitioned).
	partitions map[string]*partition
}

// New returns a client for cfg. It does not contact the server; the first
// operation does.
func New(cfg Config) (*Client, error) {
	if len(cfg.URLs) == 0 {
		return nil, errors.New("elasticsearch: no URLs configured")
	}
	for _, u := range cfg.URLs {
		if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
			return nil, fmt.Errorf("elasticsearch: URL %q must start with http:// or https://", u)
		}
	}
	escfg := es.Config{
		Addresses:  cfg.URLs,
		Username:   cfg.Username,
		Password:   cfg.Password,
		MaxRetries: cfg.MaxRetries,
		// Never send or log request bodies or credentials.
		DisableMetaHeader: true,
		RetryBackoff: func(attempt int) time.Duration {
			return time.Duration(attempt) * cfg.retryStep()
		},
	}
	if cfg.MaxRetries < 0 {
		escfg.DisableRetry = true
		escfg.MaxRetries = 0
	}
	if cfg.CACertFile != "" {
		// Not escfg.CACert: the client library would trust that bundle
		// instead of the system's CAs, not in addition to them.
		t, err := config.TrustTransport("elasticsearch.ca_file", cfg.CACertFile)
		if err != nil {
			return nil, err
		}
		escfg.Transport = t
	}
	client, err := es.NewClient(escfg)
	if err != nil {
		return nil, fmt.Errorf("elasticsearch: creating client: %w", err)
	}
	c := &Client{es: client, timeout: cfg.Timeout, log: cfg.Logger}
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	c.log = c.log.With("component", "sink.elasticsearch")
	return c, nil
}

// ServerInfo is what the server says about itself.
type ServerInfo struct {
	ClusterName string
	Version     string
}

// Info asks the server who it is. It is the first request the client sends,
// which the client library's product check needs.
func (c *Client) Info(ctx context.Context) (ServerInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	res, err := c.es.Info(c.es.Info.WithContext(ctx))
	if err != nil {
		if strings.Contains(err.Error(), "unknown product") {
			err = fmt.Errorf("%w: %v", ErrUnsupportedServer, err)
		}
		return ServerInfo{}, &Error{Op: "info", Err: err}
	}
	defer res.Body.Close()
	if res.IsError() {
		return ServerInfo{}, responseError("info", "", "", res)
	}
	var body struct {
		ClusterName string `json:"cluster_name"`
		Version     struct {
			Number string `json:"number"`
		} `json:"version"`
	}
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
		return ServerInfo{}, &Error{Op: "info", Status: res.StatusCode, Err: fmt.Errorf("decoding answer: %w", err)}
	}
	c.mu.Lock()
	c.checked = true
	c.mu.Unlock()
	return ServerInfo{ClusterName: body.ClusterName, Version: body.Version.Number}, nil
}

// ready makes sure Info has answered once, so the product check runs on the
// info endpoint.
func (c *Client) ready(ctx context.Context) error {
	c.mu.Lock()
	checked := c.checked
	c.mu.Unlock()
	if checked {
		return nil
	}
	info, err := c.Info(ctx)
	if err != nil {
		return err
	}
	c.log.Debug("connected", "cluster", info.ClusterName, "version", info.Version)
	return nil
}

// EnsureIndex creates index name with mapping, or, when it exists, adds the
// fields of mapping that it lacks (PUT _mapping), so newer agents can extend
// an index older agents created. mapping is either the "mappings" object
// ({"properties": ...}) or a whole create-index body ({"settings": ...,
// "mappings": ...}). A field whose type conflicts with the existing mapping
// is an error naming the index and the server's reason.
func (c *Client) EnsureIndex(ctx context.Context, name string, mapping []byte) error {
	if name == "" {
		return errors.New("elasticsearch: EnsureIndex: empty index name")
	}
	createBody, mappings, err := splitMapping(mapping)
	if err != nil {
		return fmt.Errorf("elasticsearch: mapping for index %q: %w", name, err)
	}
	if err := c.ready(ctx); err != nil {
		return err
	}
	exists, err := c.indexExists(ctx, name)
	if err != nil {
		return err
	}
	if !exists {
		err := c.createIndex(ctx, name, createBody)
		if err == nil {
			c.log.Info("created index", "index", name)
			return nil
		}
		// Another agent may have created it meanwhile.
		var e *Error
		if !errors.As(err, &e) || e.Status != http.StatusBadRequest {
			return err
		}
		if exists, xerr := c.indexExists(ctx, name); xerr != nil || !exists {
			return err
		}
	}
	return c.extendMapping(ctx, name, mappings)
}

// extendMapping adds to the existing index name the fields of mappings it
// lacks. Fields it has are left alone (their type cannot change); a type
// that differs is logged, since servers name some types differently.
func (c *Client) extendMapping(ctx context.Context, name string, mappings []byte) error {
	var want struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(mappings, &want); err != nil {
		return fmt.Errorf("elasticsearch: mapping for index %q: %w", name, err)
	}
	have, err := c.getProperties(ctx, name)
	if err != nil {
		return err
	}
	missing := missingFields(want.Properties, have, "", func(field, haveType, wantType string) {
		c.log.Warn("index field has another type than the mapping", "index", name, "field", field, "type", haveType, "mapping_type", wantType)
	})
	if len(missing) == 0 {
		return nil
	}
	body, err := json.Marshal(map[string]any{"properties": missing})
	if err != nil {
		return fmt.Errorf("elasticsearch: mapping for index %q: %w", name, err)
	}
	if err := c.putMapping(ctx, name, body); err != nil {
		return err
	}
	c.log.Info("extended index mapping", "index", name, "fields", len(missing))
	return nil
}

// getProperties returns the top-level properties of index name's mapping.
func (c *Client) getProperties(ctx context.Context, name string) (map[string]json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	res, err := c.es.Indices.GetMapping(
		c.es.Indices.GetMapping.WithContext(ctx),
		c.es.Indices.GetMapping.WithIndex(name))
	if err != nil {
		return nil, &Error{Op: "get mapping", Index: name, Err: err}
	}
	defer drain(res)
	if res.IsError() {
		return nil, responseError("get mapping", name, "", res)
	}
	var answer map[string]struct {
		Mappings struct {
			Properties map[string]json.RawMessage `json:"properties"`
		} `json:"mappings"`
	}
	if err := json.NewDecoder(res.Body).Decode(&answer); err != nil {
		return nil, &Error{Op: "get mapping", Index: name, Status: res.StatusCode, Err: fmt.Errorf("decoding answer: %w", err)}
	}
	if m, ok := answer[name]; ok {
		return m.Mappings.Properties, nil
	}
	for _, m := range answer { // name was an alias
		return m.Mappings.Properties, nil
	}
	return nil, &Error{Op: "get mapping", Index: name, Status: res.StatusCode, Reason: "answer holds no mapping"}
}

// fieldMapping is the part of a field's mapping extendMapping compares.
type fieldMapping struct {
	Type       string                     `json:"type"`
	Properties map[string]json.RawMessage `json:"properties"`
}

// missingFields returns the fields of want that have lacks, descending into
// object fields; conflict is called for fields whose types differ.
func missingFields(want, have map[string]json.RawMessage, prefix string, conflict func(field, haveType, wantType string)) map[string]any {
	missing := map[string]any{}
	for field, wraw := range want {
		hraw, ok := have[field]
		if !ok {
			missing[field] = wraw
			continue
		}
		var w, h fieldMapping
		_ = json.Unmarshal(wraw, &w)
		_ = json.Unmarshal(hraw, &h)
		if w.Properties != nil {
			if sub := missingFields(w.Properties, h.Properties, prefix+field+".", conflict); len(sub) > 0 {
				missing[field] = map[string]any{"properties": sub}
			}
			continue
		}
		if w.Type != "" && h.Type != "" && typeFamily(w.Type) != typeFamily(h.Type) {
			conflict(prefix+field, h.Type, w.Type)
		}
	}
	return missing
}

// typeFamily folds the names servers give the same kind of field: some
// Elasticsearch-API servers report every number as "numeric" and booleans
// as "bool", and a keyword may come back as "text" with a keyword subfield.
func typeFamily(t string) string {
	switch t {
	case "long", "integer", "short", "byte", "double", "float", "half_float", "scaled_float", "unsigned_long", "numeric":
		return "number"
	case "bool", "boolean":
		return "boolean"
	case "date", "time":
		return "date"
	}
	return t
}

// splitMapping returns the create-index body and the mappings object for
// mapping, which is either of them.
func splitMapping(mapping []byte) (createBody, mappings []byte, err error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(mapping, &top); err != nil {
		return nil, nil, fmt.Errorf("not a JSON object: %w", err)
	}
	if m, ok := top["mappings"]; ok {
		return mapping, m, nil
	}
	body, err := json.Marshal(map[string]json.RawMessage{"mappings": mapping})
	if err != nil {
		return nil, nil, err
	}
	return body, mapping, nil
}

func (c *Client) indexExists(ctx context.Context, name string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	res, err := c.es.Indices.Exists([]string{name}, c.es.Indices.Exists.WithContext(ctx))
	if err != nil {
		return false, &Error{Op: "check index", Index: name, Err: err}
	}
	defer drain(res)
	switch {
	case res.StatusCode == http.StatusOK:
		return true, nil
	case res.StatusCode == http.StatusNotFound:
		return false, nil
	default:
		return false, responseError("check index", name, "", res)
	}
}

func (c *Client) createIndex(ctx context.Context, name string, body []byte) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	res, err := c.es.Indices.Create(name,
		c.es.Indices.Create.WithContext(ctx),
		c.es.Indices.Create.WithBody(bytes.NewReader(body)))
	if err != nil {
		return &Error{Op: "create index", Index: name, Err: err}
	}
	defer drain(res)
	if res.IsError() {
		return responseError("create index", name, "", res)
	}
	return nil
}

func (c *Client) putMapping(ctx context.Context, name string, mappings []byte) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	res, err := c.es.Indices.PutMapping([]string{name}, bytes.NewReader(mappings),
		c.es.Indices.PutMapping.WithContext(ctx))
	if err != nil {
		return &Error{Op: "put mapping", Index: name, Err: err}
	}
	defer drain(res)
	if res.IsError() {
		return responseError("put mapping", name, "", res)
	}
	return nil
}

// Index stores doc under its explicit id, replacing an earlier version
// (doc.Version is not sent: versioned writes go through Bulk).
func (c *Client) Index(ctx context.Context, doc store.Doc) error {
	if err := checkDoc(doc); err != nil {
		return err
	}
	if err := c.ready(ctx); err != nil {
		return err
	}
	if err := c.ensureMonthly(ctx, doc.Index); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	res, err := c.es.Index(doc.Index, bytes.NewReader(doc.Body),
		c.es.Index.WithContext(ctx),
		c.es.Index.WithDocumentID(doc.ID))
	if err != nil {
		return &Error{Op: "index", Index: doc.Index, ID: doc.ID, Err: err}
	}
	defer drain(res)
	if res.IsError() {
		return responseError("index", doc.Index, doc.ID, res)
	}
	return nil
}

func checkDoc(doc store.Doc) error {
	switch {
	case doc.Index == "":
		return fmt.Errorf("elasticsearch: document %q has no index", doc.ID)
	case doc.ID == "":
		return fmt.Errorf("elasticsearch: document for index %q has no id", doc.Index)
	case !json.Valid(doc.Body):
		return fmt.Errorf("elasticsearch: document %q for index %q: body is not valid JSON", doc.ID, doc.Index)
	}
	return nil
}

// Failure is one document a bulk request did not store, and why.
type Failure struct {
	Doc store.Doc
	Err *Error // matches ErrUnavailable when retrying may help
}

// Bulk stores docs in one request. It returns the documents that were not
// stored, each with the server's reason; the others were. When the request
// as a whole fails, the error is returned and no document is known to be
// stored. Documents that are invalid before sending (no index, no id, body
// not JSON) are failures with status 400 and are not sent. When the answer
// does not account for every document, all are reported as failures that
// may be retried.
func (c *Client) Bulk(ctx context.Context, docs []store.Doc) ([]Failure, error) {
	var failures []Failure
	sent := make([]store.Doc, 0, len(docs))
	var body bytes.Buffer
	var unready map[string]error
	if len(docs) > 0 {
		if err := c.ready(ctx); err != nil {
			return nil, err
		}
		unready = c.ensureFor(ctx, docs)
	}
	for _, d := range docs {
		if err := checkDoc(d); err != nil {
			failures = append(failures, Failure{Doc: d, Err: &Error{Op: "bulk", Index: d.Index, ID: d.ID, Status: http.StatusBadRequest, Type: "invalid_document", Reason: err.Error()}})
			continue
		}
		if err := unready[d.Index]; err != nil {
			// Its monthly index could not be made: the document waits
			// (the error says whether retrying may help).
			e := &Error{Op: "bulk", Index: d.Index, ID: d.ID, Reason: "preparing its index: " + err.Error()}
			var ie *Error
			if errors.As(err, &ie) {
				e.Status, e.Type = ie.Status, ie.Type
				if ie.Err != nil {
					e.Err = ie.Err
				}
			}
			failures = append(failures, Failure{Doc: d, Err: e})
			continue
		}
		action := map[string]any{"_index": d.Index, "_id": d.ID}
		op := "index"
		switch {
		case d.Create:
			op = "create" // Elasticsearch refuses external versions on create
		case d.Version > 0:
			action["version"], action["version_type"] = d.Version, "external"
		}
		meta, _ := json.Marshal(map[string]any{op: action})
		body.Write(meta)
		body.WriteByte('\n')
		body.Write(compactLine(d.Body))
		body.WriteByte('\n')
		sent = append(sent, d)
	}
	if len(sent) == 0 {
		return failures, nil
	}
	if err := c.ready(ctx); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	res, err := c.es.Bulk(bytes.NewReader(body.Bytes()), c.es.Bulk.WithContext(ctx))
	if err != nil {
		return nil, &Error{Op: "bulk", Err: err}
	}
	defer drain(res)
	if res.IsError() {
		return nil, responseError("bulk", "", "", res)
	}
	var answer struct {
		Errors bool                        `json:"errors"`
		Error  *errAnswer                  `json:"error"` // not Elasticsearch's; some servers send it
		Items  []map[string]bulkItemAnswer `json:"items"`
	}
	if err := json.NewDecoder(res.Body).Decode(&answer); err != nil {
		return nil, &Error{Op: "bulk", Status: res.StatusCode, Err: fmt.Errorf("decoding answer: %w", err)}
	}
	if len(answer.Items) != len(sent) {
		// An incomplete answer says nothing reliable about any document:
		// report them all; indexing again under the same id is harmless.
		reason := fmt.Sprintf("server answered %d items for %d documents", len(answer.Items), len(sent))
		if answer.Error != nil {
			reason += ": " + answer.Error.Reason
		}
		for _, d := range sent {
			failures = append(failures, Failure{Doc: d, Err: &Error{Op: "bulk", Index: d.Index, ID: d.ID,
				Type: "incomplete_bulk_answer", Reason: reason}})
		}
		return failures, nil
	}
	for i, item := range answer.Items {
		var a bulkItemAnswer
		for _, v := range item { // one key: the action
			a = v
		}
		d := sent[i]
		if a.Status >= 200 && a.Status < 300 && a.Error == nil {
			if d.Version > 0 {
				c.learnVersions(a.Version == d.Version)
			}
			continue
		}
		if d.Version > 0 && a.Status == http.StatusConflict && a.Error != nil && a.Error.Type == "version_conflict_engine_exception" {
			// A version at least as new is stored: this one is
			// superseded, which is what the caller wants, not a failure.
			c.learnVersions(true)
			c.log.Debug("superseded: the store holds a newer version", "index", d.Index, "id", d.ID, "version", d.Version)
			continue
		}
		e := &Error{Op: "bulk", Index: d.Index, ID: d.ID, Status: a.Status}
		if d.Create {
			e.Op = "create"
		}
		if a.Error != nil {
			e.Type, e.Reason = a.Error.Type, a.Error.Reason
		}
		failures = append(failures, Failure{Doc: d, Err: e})
	}
	return failures, nil
}

type bulkItemAnswer struct {
	Index   string     `json:"_index"`
	ID      string     `json:"_id"`
	Version int64      `json:"_version"`
	Status  int        `json:"status"`
	Error   *errAnswer `json:"error"`
}

// learnVersions records whether the server honoured an external version
// (its answer carries the version sent, or a version conflict) and says
// once when it does not.
func (c *Client) learnVersions(honoured bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.versions != 0 {
		return
	}
	if honoured {
		c.versions = 1
		return
	}
	c.versions = -1
	c.log.Info("the Elasticsearch-API server ignores external document versions; replays are checked against the stored version before writing instead")
}

// NoteVersions records what the caller found out about the server's
// external versions before any versioned write (the agent asks at start:
// see deliver's probe), unless an answer has already told.
func (c *Client) NoteVersions(honoured bool) { c.learnVersions(honoured) }

// VersionsKnown reports whether the server honours external versions and
// whether that is known yet (asked, or learnt from an answer).
func (c *Client) VersionsKnown() (honoured, known bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.versions == 1, c.versions != 0
}

// HonoursVersions reports whether the server is known to honour external
// versions (Elasticsearch does; ZincSearch ignores them). Until a
// versioned write has been answered it reports false.
func (c *Client) HonoursVersions() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.versions == 1
}

// errAnswer is Elasticsearch's error object. Some servers send a plain
// string instead; UnmarshalJSON accepts both.
type errAnswer struct {
	Type   string
	Reason string
}

// UnmarshalJSON implements json.Unmarshaler.
func (e *errAnswer) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		e.Reason = s
		return nil
	}
	var o struct {
		Type      string `json:"type"`
		Reason    string `json:"reason"`
		RootCause []struct {
			Type   string `json:"type"`
			Reason string `json:"reason"`
		} `json:"root_cause"`
		CausedBy *struct {
			Type   string `json:"type"`
			Reason string `json:"reason"`
		} `json:"caused_by"`
	}
	if err := json.Unmarshal(b, &o); err != nil {
		e.Reason = string(b)
		return nil
	}
	e.Type, e.Reason = o.Type, o.Reason
	if o.CausedBy != nil && o.CausedBy.Reason != "" {
		e.Reason += " (caused by " + o.CausedBy.Type + ": " + o.CausedBy.Reason + ")"
	}
	return nil
}

// compactLine returns body on one line, as the bulk format needs.
func compactLine(body []byte) []byte {
	if !bytes.ContainsAny(body, "\r\n") {
		return body
	}
	var b bytes.Buffer
	if err := json.Compact(&b, body); err != nil {
		return body // checkDoc has validated it; unreachable
	}
	return b.Bytes()
}

// GetByIDs returns the sources of the documents of index with the given
// ids, keyed by id; ids not found are absent. It uses a _search ids query,
// which every server supports. New writes may take a refresh interval
// (about a second) to become visible.
func (c *Client) GetByIDs(ctx context.Context, index string, ids []string) (map[string]json.RawMessage, error) {
	out := make(map[string]json.RawMessage, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	q, err := json.Marshal(map[string]any{
		"size":  len(ids),
		"query": map[string]any{"ids": map[string]any{"values": ids}},
	})
	if err != nil {
		return nil, fmt.Errorf("elasticsearch: building ids query: %w", err)
	}
	raw, err := c.Search(ctx, index, q)
	if err != nil {
		return nil, err
	}
	var answer store.SearchAnswer[json.RawMessage]
	if err := json.Unmarshal(raw, &answer); err != nil {
		return nil, &Error{Op: "search", Index: index, Err: fmt.Errorf("decoding answer: %w", err)}
	}
	want := make(map[string]bool, len(ids))
	for _, id := range ids {
		want[id] = true
	}
	for _, h := range answer.Hits.Hits {
		if want[h.ID] {
			out[h.ID] = h.Source
		}
	}
	return out, nil
}

// Search runs the raw query body against index and returns the raw answer.
// index is one index, or several and patterns separated by commas (e.g.
// jobmodel.SearchIndices: the monthly indices and the pre-0.2 single
// index); for those, indices that do not exist are skipped (Elasticsearch's
// ignore_unavailable and allow_no_indices), so a search before any
// document of a month, or after the old index is gone, answers no hits.
// A single index that does not exist is an error matching ErrNotFound.
func (c *Client) Search(ctx context.Context, index string, body []byte) (json.RawMessage, error) {
	if index == "" {
		return nil, errors.New("elasticsearch: Search: empty index name")
	}
	if err := c.ready(ctx); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	opts := []func(*esapi.SearchRequest){
		c.es.Search.WithContext(ctx),
		c.es.Search.WithIndex(index),
		c.es.Search.WithBody(bytes.NewReader(body)),
	}
	if strings.ContainsAny(index, ",*") {
		opts = append(opts, c.es.Search.WithIgnoreUnavailable(true), c.es.Search.WithAllowNoIndices(true))
	}
	res, err := c.es.Search(opts...)
	if err != nil {
		return nil, &Error{Op: "search", Index: index, Err: err}
	}
	defer drain(res)
	if res.IsError() {
		return nil, responseError("search", index, "", res)
	}
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, &Error{Op: "search", Index: index, Err: fmt.Errorf("reading answer: %w", err)}
	}
	return raw, nil
}

// responseError turns an error answer into an *Error carrying the server's
// error type and reason.
func responseError(op, index, id string, res *esapi.Response) *Error {
	e := &Error{Op: op, Index: index, ID: id, Status: res.StatusCode}
	raw, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	var body struct {
		Error *errAnswer `json:"error"`
	}
	if json.Unmarshal(raw, &body) == nil && body.Error != nil {
		e.Type, e.Reason = body.Error.Type, body.Error.Reason
	} else if s := strings.TrimSpace(string(raw)); s != "" {
		e.Reason = s
	} else {
		e.Reason = http.StatusText(res.StatusCode)
	}
	return e
}

// drain reads what is left of the answer so the connection can be reused.
func drain(res *esapi.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 1<<20))
	res.Body.Close()
}
