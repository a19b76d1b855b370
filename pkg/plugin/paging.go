package plugin

// Deep pages of the Jobs table. One search reaches at most resultWindow
// rows (Elasticsearch's index.max_result_window, 10,000 by default): a page
// that ends deeper is read in pages of up to resultWindow rows, each
// starting after the last row of the one before (search_after), inside a
// point in time where the server offers one, so that jobs written
// meanwhile do not shift the rows between pages. A server that answers no
// sort values (it does not do search_after) is read with from/size
// instead, as far as it allows.

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"strings"

	gojson "github.com/goccy/go-json"
)

// resultWindow is the deepest row one from/size search reaches.
const resultWindow = 10000

// pitKeepAlive is how long a point in time lives between two pages.
const pitKeepAlive = "1m"

// pitPath is the open-point-in-time path of the documents of base.
func pitPath(base string) string {
	p := searchPath(base)
	p = strings.Replace(p, "/_search?", "/_pit?keep_alive="+pitKeepAlive+"&", 1)
	// A point in time is opened on existing indices only.
	return strings.Replace(p, "&allow_no_indices=true", "", 1)
}

// openPIT opens a point in time on the documents of index, or returns ""
// when the server offers none (Elasticsearch before 7.10, OpenSearch
// before 2.4, ZincSearch): then d.noPIT remembers it.
func (d *Datasource) openPIT(qc queryCtx, index string) string {
	if d.noPIT.Load() {
		return ""
	}
	data, status, err := d.esRequest(qc.ctx, qc.st, http.MethodPost, pitPath(index), nil)
	if err != nil {
		return ""
	}
	var ans struct {
		ID string `json:"id"`
	}
	if status != http.StatusOK || json.Unmarshal(data, &ans) != nil || ans.ID == "" {
		// No such API: remembered. A refusal for another reason (too
		// many open, a timeout) is tried again next time.
		if status == http.StatusNotFound || status == http.StatusMethodNotAllowed {
			d.noPIT.Store(true)
		}
		return ""
	}
	return ans.ID
}

// closePIT frees a point in time (it would expire anyway).
func (d *Datasource) closePIT(qc queryCtx, id string) {
	if _, _, err := d.esRequest(qc.ctx, qc.st, http.MethodDelete, "/_pit", map[string]any{"id": id}); err != nil {
		d.logger.Debug("closing a point in time", "err", err)
	}
}

// pageHits is what paging reads of a page besides the documents.
type pageHits struct {
	PitID string `json:"pit_id"`
	Hits  struct {
		Hits []struct {
			// Kept as the server wrote them: a float64 would round a
			// long (the sentinels of a missing value among them).
			Sort []json.RawMessage `json:"sort"`
		} `json:"hits"`
	} `json:"hits"`
}

// pagedSearch reads the first need rows of a sorted search (body with its
// query, _source and track_total_hits) in pages, and returns each page's
// answer. notice says when the server could not page past its window.
func (d *Datasource) pagedSearch(qc queryCtx, index string, body map[string]any, sort []any, need int) ([][]byte, string, error) {
	pit := d.openPIT(qc, index)
	if pit != "" {
		// The latest id: a page's answer may carry a new one.
		defer func() { d.closePIT(qc, pit) }()
	} else {
		// Without a point in time the order needs a unique last key.
		sort = append(sort, map[string]any{"doc_id": map[string]any{"order": "asc"}})
	}
	var pages [][]byte
	var after []json.RawMessage
	got := 0
	for got < need {
		page := maps.Clone(body)
		page["sort"] = sort
		page["size"] = min(resultWindow, need-got)
		page["from"] = 0
		if len(pages) > 0 {
			page["track_total_hits"] = false
		}
		if after != nil {
			page["search_after"] = after
		}
		var raw []byte
		var err error
		if pit != "" {
			page["pit"] = map[string]any{"id": pit, "keep_alive": pitKeepAlive}
			var status int
			raw, status, err = d.esRequest(qc.ctx, qc.st, http.MethodPost, "/_search", page)
			if err == nil {
				if p := httpProblem("Elasticsearch", d.settings.ElasticsearchURL, "the search on "+index, status, raw, "elasticsearchUser and elasticsearchPassword"); p != "" {
					err = &backendError{backend: "Elasticsearch", msg: p}
				}
			}
		} else {
			raw, err = d.searchRaw(qc.ctx, qc.st, index, page)
		}
		if err != nil {
			return nil, "", err
		}
		var ph pageHits
		if err := gojson.Unmarshal(raw, &ph); err != nil {
			return nil, "", &backendError{backend: "Elasticsearch", msg: fmt.Sprintf("Elasticsearch: the search answer is not JSON: %v", err)}
		}
		pages = append(pages, raw)
		if ph.PitID != "" && pit != "" {
			pit = ph.PitID
		}
		n := len(ph.Hits.Hits)
		got += n
		if n < page["size"].(int) || got >= need {
			break
		}
		after = ph.Hits.Hits[n-1].Sort
		if len(after) == 0 {
			// No sort values: this server does not page with
			// search_after. Read the rest with from/size.
			rest := maps.Clone(body)
			rest["sort"], rest["from"], rest["size"], rest["track_total_hits"] = sort, got, need-got, false
			delete(rest, "pit")
			raw, err := d.searchRaw(qc.ctx, qc.st, index, rest)
			if err != nil {
				return pages, fmt.Sprintf("Rows past %d could not be read: %s does not page with search_after and refused from/size beyond its window (%v)", got, serverName(d.settings.ElasticsearchURL), err), nil
			}
			return append(pages, raw), "", nil
		}
	}
	return pages, "", nil
}

func serverName(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.Host != "" {
		return u.Host
	}
	return "the server"
}
