package plugin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/internal/store"
)

// maxSearchBody bounds one search answer (10,000 compact job sources are
// a few MiB).
const maxSearchBody = 256 << 20

// maxPromBody bounds one Prometheus answer.
const maxPromBody = 256 << 20

// esSearch is a search answer, each hit's source left raw.
type esSearch = store.SearchAnswer[json.RawMessage]

// termsAgg is a terms aggregation's answer.
type termsAgg struct {
	Buckets []struct {
		Key      any   `json:"key"`
		DocCount int64 `json:"doc_count"`
	} `json:"buckets"`
}

// search runs one search on index. The body is built as Go values and
// JSON-encoded, so no value from a query or a user is ever spliced into
// query text. Every call is counted in stats.
func (d *Datasource) search(ctx context.Context, st *stats, index string, body map[string]any) (*esSearch, error) {
	data, err := d.searchRaw(ctx, st, index, body)
	if err != nil {
		return nil, err
	}
	var ans esSearch
	if err := json.Unmarshal(data, &ans); err != nil {
		return nil, &backendError{backend: "Elasticsearch", msg: fmt.Sprintf("Elasticsearch: the search answer is not JSON: %v", err)}
	}
	return &ans, nil
}

// searchPath is the search URL path of the documents of base (an index
// name from the settings): every monthly index "<base>-YYYY.MM" and the
// single index of releases before 0.2 (jobmodel.SearchIndices), those
// that do not exist skipped, so documents written before an upgrade stay
// visible and a search before any document answers no hits.
func searchPath(base string) string {
	parts := strings.Split(jobmodel.SearchIndices(base), ",")
	for i, p := range parts {
		name, wild := strings.CutSuffix(p, "*")
		parts[i] = url.PathEscape(name)
		if wild {
			parts[i] += "*"
		}
	}
	return "/" + strings.Join(parts, ",") + "/_search?ignore_unavailable=true&allow_no_indices=true"
}

// searchRaw runs one search of the documents of index (a base name from
// the settings: see searchPath) and returns the answer's body.
func (d *Datasource) searchRaw(ctx context.Context, st *stats, index string, body map[string]any) ([]byte, error) {
	data, status, err := d.esRequest(ctx, st, http.MethodPost, searchPath(index), body)
	if err != nil {
		return nil, err
	}
	if status == http.StatusNotFound && bytes.Contains(data, []byte("index_not_found")) {
		return nil, &backendError{backend: "Elasticsearch", msg: fmt.Sprintf("Elasticsearch: index %s not found: has any agent run yet? (check elasticsearchJobIndex)", index)}
	}
	if p := httpProblem("Elasticsearch", d.settings.ElasticsearchURL, "the search on "+index, status, data, "elasticsearchUser and elasticsearchPassword"); p != "" {
		return nil, &backendError{backend: "Elasticsearch", msg: p}
	}
	if n := shardsFailed(data); n != "" {
		// Elasticsearch answers what the other shards found: the panel
		// must say it is partial, never show it as whole.
		st.note.Store(&n)
	}
	return data, nil
}

// shardsFailed says, from the head of a search answer, how many shards
// failed ("" when none did or the answer does not say).
func shardsFailed(answer []byte) string {
	i := bytes.Index(answer[:min(len(answer), 1024)], []byte(`"_shards"`))
	if i < 0 {
		return ""
	}
	rest := bytes.TrimLeft(answer[i+len(`"_shards"`):], " \t\r\n")
	if len(rest) == 0 || rest[0] != ':' {
		return ""
	}
	var sh struct {
		Total, Failed int
	}
	// The decoder reads the one object, however long its failures list.
	if json.NewDecoder(bytes.NewReader(rest[1:])).Decode(&sh) != nil || sh.Failed == 0 {
		return ""
	}
	reason := ""
	if k := bytes.Index(answer, []byte(`"reason":"`)); k >= 0 {
		r := answer[k+len(`"reason":"`):]
		if e := bytes.IndexByte(r, '"'); e >= 0 {
			reason = ": " + string(r[:min(e, 200)])
		}
	}
	return fmt.Sprintf("Partial answer: %d of %d Elasticsearch shards failed%s", sh.Failed, sh.Total, reason)
}

// esRequest sends one request to Elasticsearch (body JSON-encoded, or
// none when nil) and returns the answer's body and status. Only failing
// to reach the server or to read its answer is an error here.
func (d *Datasource) esRequest(ctx context.Context, st *stats, method, path string, body any) ([]byte, int, error) {
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return nil, 0, fmt.Errorf("encoding the Elasticsearch query: %w", err)
		}
		rd = bytes.NewReader(raw)
	}
	u := strings.TrimRight(d.settings.ElasticsearchURL, "/") + path
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, 0, fmt.Errorf("building the Elasticsearch request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	st.es.Add(1)
	resp, err := d.es.Do(req)
	if err != nil {
		return nil, 0, &backendError{backend: "Elasticsearch", msg: fmt.Sprintf("Elasticsearch at %s is unreachable: %v", d.settings.ElasticsearchURL, rootCause(err))}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxSearchBody+1))
	if err != nil {
		return nil, 0, &backendError{backend: "Elasticsearch", msg: fmt.Sprintf("reading the Elasticsearch answer: %v", err)}
	}
	if len(data) > maxSearchBody {
		return nil, 0, &backendError{backend: "Elasticsearch", msg: fmt.Sprintf("the Elasticsearch answer is over %d MiB: lower maxJobs or narrow the query", maxSearchBody>>20)}
	}
	return data, resp.StatusCode, nil
}

// terms decodes the terms aggregation name of a search answer.
func terms(a *esSearch, name string) ([]string, error) {
	raw, ok := a.Aggregations[name]
	if !ok {
		return nil, nil
	}
	var t termsAgg
	if err := json.Unmarshal(raw, &t); err != nil {
		return nil, fmt.Errorf("decoding aggregation %s: %w", name, err)
	}
	out := make([]string, 0, len(t.Buckets))
	for _, b := range t.Buckets {
		switch k := b.Key.(type) {
		case string:
			out = append(out, k)
		case float64:
			out = append(out, fmt.Sprint(k))
		}
	}
	return out, nil
}

// esTerm and friends build query clauses as Go values.
func esTerm(field string, v any) map[string]any {
	return map[string]any{"term": map[string]any{field: v}}
}

func esTerms(field string, vs []string) map[string]any {
	return map[string]any{"terms": map[string]any{field: vs}}
}

func esRange(field string, cond map[string]any) map[string]any {
	return map[string]any{"range": map[string]any{field: cond}}
}

func esShould(clauses ...any) map[string]any {
	return map[string]any{"bool": map[string]any{"should": clauses, "minimum_should_match": 1}}
}

func esFilter(clauses []any) map[string]any {
	if len(clauses) == 0 {
		return map[string]any{"match_all": map[string]any{}}
	}
	return map[string]any{"bool": map[string]any{"filter": clauses}}
}

// nameContains is the name filter's clause: the documents whose name
// contains s, as text. It is a regexp query (matched against the whole
// keyword) with every ASCII character other than a letter or a digit
// escaped: Lucene's regular expressions (Elasticsearch) and Go's
// (ZincSearch) both read "\c" as the character c for those, and a letter,
// a digit or a non-ASCII character as itself. A wildcard query cannot say
// this on every server: ZincSearch takes no escapes in wildcard patterns,
// so "*", "?" and "\" would stay patterns there. Filter values are at most
// models.MaxFilterLength bytes: the expression stays under
// Elasticsearch's default index.max_regex_length (1,000).
func nameContains(s string) map[string]any {
	// Any text before and after: "." does not match a newline in Go's
	// expressions, so a name "step 1\nstep 2" needs the newline as an
	// alternative (a literal line feed, the same in both languages).
	const anyText = "(.|\n)*"
	var b strings.Builder
	b.WriteString(anyText)
	for _, r := range s {
		if r < utf8.RuneSelf && !('0' <= r && r <= '9' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z') {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	b.WriteString(anyText)
	return map[string]any{"regexp": map[string]any{"name": map[string]any{"value": b.String()}}}
}
