package store

import "encoding/json"

// SearchAnswer is the part of an Elasticsearch _search answer that
// readers decode, with each hit's _source decoded as S: a document type,
// or json.RawMessage to decode one by one.
type SearchAnswer[S any] struct {
	Hits SearchHits[S] `json:"hits"`
	// Aggregations holds each aggregation's answer by name, decoded by
	// its kind.
	Aggregations map[string]json.RawMessage `json:"aggregations"`
}

// SearchHits are the matches of a search.
type SearchHits[S any] struct {
	// Total counts the matches: exactly with "track_total_hits": true,
	// else up to the server's default bound (10,000).
	Total struct {
		Value int64 `json:"value"`
	} `json:"total"`
	Hits []Hit[S] `json:"hits"`
}

// Hit is one matching document: its index, its id and its source. A
// search over several indices (every monthly index) says in Index where
// the document is, which is where a rewrite of it must go.
type Hit[S any] struct {
	Index  string `json:"_index"`
	ID     string `json:"_id"`
	Source S      `json:"_source"`
}
