package models

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// QueryType names what a panel query asks for. The values are the same
// strings as the QueryType union in src/types.ts.
type QueryType string

// The query types the frontend offers. None is answered yet: later issues add
// the handlers; until then each answers "not implemented yet".
const (
	QueryTypeJobs        QueryType = "jobs"        // job list from the job index
	QueryTypeJobTimeline QueryType = "jobTimeline" // one job's series over time
)

// KnownQueryTypes returns every QueryType the frontend may send.
func KnownQueryTypes() []QueryType { return []QueryType{QueryTypeJobs, QueryTypeJobTimeline} }

// Query is the JSON model of one panel query (backend.DataQuery.JSON).
// Grafana's own keys (refId, datasource, hide, intervalMs, maxDataPoints,
// key) travel in the same object and are ignored here.
type Query struct {
	// QueryType selects the handler. Grafana copies it to
	// backend.DataQuery.QueryType as well.
	QueryType QueryType `json:"queryType,omitempty"`
	// Cluster restricts the query to one Slurm cluster; empty means the
	// datasource's clusterFilter, or all clusters.
	Cluster string `json:"cluster,omitempty"`
	// JobID restricts the query to one Slurm job id (as Slurm prints it:
	// "1234", "1234_7" for an array task, "1234+1" for a het component).
	JobID string `json:"jobId,omitempty"`
}

// ParseQuery decodes a query's JSON model. Empty input is an empty query.
func ParseQuery(raw []byte) (Query, error) {
	var q Query
	if len(bytes.TrimSpace(raw)) == 0 {
		return q, nil
	}
	if err := json.Unmarshal(raw, &q); err != nil {
		return Query{}, fmt.Errorf("decoding the query model: %w", err)
	}
	return q, nil
}
