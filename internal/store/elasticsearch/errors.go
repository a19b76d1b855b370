package elasticsearch

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/jobsight/jobsight/internal/store"
)

// ErrUnavailable matches (with errors.Is) every error that may succeed when
// retried later: the server could not be reached, timed out, or answered
// 429 or 5xx. The caller spools what failed this way.
var ErrUnavailable = errors.New("elasticsearch unavailable")

// ErrUnsupportedServer says that the server failed the client library's
// product check: it is not Elasticsearch 7.14 or later (OpenSearch, older
// Elasticsearch). Retrying cannot help; the agent says so at setup.
var ErrUnsupportedServer = errors.New("the server is not Elasticsearch 7.14 or later (OpenSearch and older Elasticsearch fail the client's product check and are not supported)")

// ErrNotFound matches (with errors.Is) a 404 answer, e.g. a missing index.
var ErrNotFound = errors.New("not found")

// ErrExists matches (with errors.Is) the refusal of a create (store.Doc
// Create): a document with that id is stored already.
var ErrExists = errors.New("a document with this id exists")

// ErrDocument matches (with errors.Is) a failure the server names as the
// document's own fault, for that one document: in a bulk answer, the
// item's error is a mapping or parse error (mapper_parsing_exception,
// document_parsing_exception, illegal_argument_exception, …), or the
// client found the document invalid before sending it. Only these may be
// set aside for good: a 400 for the whole request, or an index-level error
// (a closed index answers 400 in Elasticsearch; so does a failing server),
// says nothing against the document.
var ErrDocument = errors.New("the server refused this document (a document-level error)")

// documentErrorTypes are the error types Elasticsearch gives a bulk item
// whose document cannot be indexed as it is, whatever the index's state.
var documentErrorTypes = map[string]bool{
	"invalid_document":                  true, // checkDoc, before sending
	"mapper_parsing_exception":          true,
	"document_parsing_exception":        true, // Elasticsearch 8.x's name for a parse failure
	"strict_dynamic_mapping_exception":  true,
	"illegal_argument_exception":        true, // e.g. a field too large, a bad value for its type
	"mapper_exception":                  true,
	"document_source_missing_exception": true,
	"json_parse_exception":              true,
	"x_content_parse_exception":         true,
	"not_x_content_exception":           true,
}

// Error is a failed Elasticsearch operation. It names the operation, the
// index and (where one applies) the document id, and carries the server's
// status, error type and reason.
type Error struct {
	Op     string // "index", "bulk", "create index", "put mapping", "search", "info"
	Index  string
	ID     string // document id, empty for index-level operations
	Status int    // HTTP status, 0 when no answer came
	Type   string // the server's error type, e.g. "mapper_parsing_exception"
	Reason string // the server's reason
	Err    error  // the transport error when no answer came
}

// Error implements error.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("elasticsearch ")
	b.WriteString(e.Op)
	if e.Index != "" {
		fmt.Fprintf(&b, " index %q", e.Index)
	}
	if e.ID != "" {
		fmt.Fprintf(&b, " id %q", e.ID)
	}
	if e.Status != 0 {
		fmt.Fprintf(&b, ": status %d", e.Status)
	}
	if e.Type != "" {
		fmt.Fprintf(&b, ": %s", e.Type)
	}
	if e.Reason != "" {
		fmt.Fprintf(&b, ": %s", e.Reason)
	}
	if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	return b.String()
}

// Unwrap returns the transport error, if any.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether e is retryable (target ErrUnavailable) or a 404
// (target ErrNotFound).
func (e *Error) Is(target error) bool {
	switch target {
	case ErrUnavailable:
		return e.Retryable()
	case ErrNotFound:
		return e.Status == http.StatusNotFound
	case ErrExists:
		return e.Op == "create" && e.Status == http.StatusConflict
	case ErrDocument:
		return e.DocumentFault()
	case store.ErrAccessDenied:
		return e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden
	}
	return false
}

// DocumentFault reports whether the server named this document at fault:
// an error for one item of a bulk request (so an id is set), with a 4xx
// status and a document-level error type. See ErrDocument.
func (e *Error) DocumentFault() bool {
	return e.ID != "" && e.Status >= 400 && e.Status < 500 && documentErrorTypes[e.Type]
}

// Retryable reports whether the operation may succeed later unchanged.
func (e *Error) Retryable() bool {
	if errors.Is(e.Err, ErrUnsupportedServer) {
		return false
	}
	return e.Status == 0 || e.Status == http.StatusTooManyRequests || e.Status >= 500
}
