package elasticsearch

// check.go: the store check (internal/storecheck) sends the calls of the
// privileges table one at a time, each exactly as a component sends it,
// so that a refusal names the one call, and so its privilege.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/internal/store"
)

// CheckTarget is what one checked call acts on.
type CheckTarget struct {
	// Index is the concrete index: this month's "<base>-YYYY.MM" of a
	// monthly base, or a single index (the collector's, the history).
	Index string
	// Base is the monthly base (search, list monthly, delete index).
	Base string
	// Mapping is the index's mapping as EnsureIndex takes it (create
	// index, put mapping).
	Mapping []byte
	// DocID is the scratch document's id (bulk, index doc, search by
	// ids, delete doc): "jobsight-check-<host>".
	DocID string
}

// CheckMonth is the month whose index the delete index check names: one
// no Jobsight document is ever in (jobs carry times from 2000 on), so the
// check deletes nothing; Elasticsearch authorizes the name before it
// finds that the index does not exist (403 without the privilege, 404
// with it).
const CheckMonth = "1970.01"

// CheckCall sends the one request of call (a name of APICalls) for t and
// returns what the server said: nil when the request was allowed (an
// index that exists already is allowed for create index, one that does
// not for delete index), else the error (an *Error, whose Status says a
// 401 or 403). note says what the call did, e.g. "created" or "exists".
func (c *Client) CheckCall(ctx context.Context, call string, t CheckTarget) (note string, err error) {
	if _, ok := APICalls[call]; !ok {
		return "", fmt.Errorf("elasticsearch: no call %q in the privileges table", call)
	}
	if call == "info" {
		info, err := c.Info(ctx)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("cluster %q, version %s", info.ClusterName, info.Version), nil
	}
	if err := c.ready(ctx); err != nil {
		return "", err
	}
	switch call {
	case "index exists":
		exists, err := c.indexExists(ctx, t.Index)
		if err != nil {
			return "", err
		}
		if !exists {
			return "does not exist yet", nil
		}
		return "exists", nil
	case "create index", "bulk create":
		// bulk create: the privilege of a write that creates a month's
		// index (create_index), asked by creating this month's with its
		// mapping, as setup and the agents do.
		createBody, _, err := splitMapping(t.Mapping)
		if err != nil {
			return "", err
		}
		err = c.createIndex(ctx, t.Index, createBody)
		var e *Error
		if errors.As(err, &e) && e.Status == http.StatusBadRequest && alreadyExists(e) {
			return "exists already (the privilege was granted: the refusal is not a 403)", nil
		}
		if err != nil {
			return "", err
		}
		return "created, with its mapping", nil
	case "get mapping":
		_, err := c.getProperties(ctx, t.Index)
		return "", err
	case "put mapping":
		// The fields the index lacks (none: an empty list), as EnsureIndex
		// sends them: a field it has may not be sent again.
		_, mappings, err := splitMapping(t.Mapping)
		if err != nil {
			return "", err
		}
		var want struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if err := json.Unmarshal(mappings, &want); err != nil {
			return "", err
		}
		// A mapping this credential may not read (get mapping says so
		// on its own line) sends an empty list: this line is the put's.
		missing := map[string]any{}
		if have, err := c.getProperties(ctx, t.Index); err == nil {
			missing = missingFields(want.Properties, have, "", func(string, string, string) {})
		}
		body, _ := json.Marshal(map[string]any{"properties": missing})
		if err := c.putMapping(ctx, t.Index, body); err != nil {
			return "", err
		}
		return fmt.Sprintf("%d fields added", len(missing)), nil
	case "bulk":
		failures, err := c.Bulk(ctx, []store.Doc{{Kind: store.KindJobDoc, Index: t.Index, ID: t.DocID, Body: checkBody}})
		if err != nil {
			return "", err
		}
		if len(failures) > 0 {
			return "", failures[0].Err
		}
		return "wrote the empty document " + t.DocID, nil
	case "index doc":
		if err := c.Index(ctx, store.Doc{Kind: store.KindJobDoc, Index: t.Index, ID: t.DocID, Body: checkBody}); err != nil {
			return "", err
		}
		return "wrote the empty document " + t.DocID, nil
	case "search", "search by ids":
		q := []byte(`{"size":0}`)
		if call == "search by ids" {
			q, _ = json.Marshal(map[string]any{"size": 1, "query": map[string]any{"ids": map[string]any{"values": []string{t.DocID}}}})
		}
		_, err := c.Search(ctx, jobmodel.SearchIndices(t.Base), q)
		var e *Error
		if errors.As(err, &e) && e.Status == http.StatusBadRequest && strings.Contains(e.Reason, "no index found") {
			// Elasticsearch answers no hits (ignore_unavailable);
			// ZincSearch a 400, after granting the search.
			return "no index matches yet", nil
		}
		return "", err
	case "list monthly":
		names, err := c.MonthlyIndices(ctx, t.Base)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%d monthly indices", len(names)), nil
	case "delete index":
		return "", c.DeleteIndex(ctx, t.Base, t.Base+"-"+CheckMonth)
	case "delete doc":
		return c.deleteDoc(ctx, t.Index, t.DocID)
	}
	return "", fmt.Errorf("elasticsearch: the store check does not make the call %q", call)
}

// checkBody is the body of the check's scratch document: empty, so no
// reader's query (each names a cluster, a job or a time) matches it, and
// it fits every strict mapping.
var checkBody = []byte(`{}`)

// alreadyExists: the answer to creating an index that exists
// (Elasticsearch's resource_already_exists_exception; ZincSearch says
// "index [...] already exists").
func alreadyExists(e *Error) bool {
	return e.Type == "resource_already_exists_exception" || strings.Contains(e.Reason, "already exists")
}

// deleteDoc deletes one document; one that is not there is no error.
func (c *Client) deleteDoc(ctx context.Context, index, id string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	res, err := c.es.Delete(index, id, c.es.Delete.WithContext(ctx))
	if err != nil {
		return "", &Error{Op: "delete", Index: index, ID: id, Err: err}
	}
	defer drain(res)
	if res.StatusCode == http.StatusNotFound {
		return "not there", nil
	}
	if res.IsError() {
		return "", responseError("delete", index, id, res)
	}
	return "deleted " + id, nil
}
