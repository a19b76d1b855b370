// Package store holds what the agent's outputs share: a document to store and
// the interface each sink implements. Sinks live in sub-packages
// (elasticsearch, promremote) and the on-disk spool in internal/spool.
package store

import (
	"errors"
	"strconv"
)

// DocKind tells the spool which documents to keep longest: when the spool is
// full, raw samples are dropped first and job documents last.
type DocKind int

// Document kinds, from most to least droppable.
const (
	KindSamples DocKind = iota // a batch of raw time-series samples
	KindNodeDoc                // the per-node document (superseded by later versions of itself)
	KindJobDoc                 // the job document: never dropped while anything else can be
)

// String names the kind as logs and the
// jobsight_agent_spool_dropped_total{kind} label do.
func (k DocKind) String() string {
	switch k {
	case KindSamples:
		return "samples"
	case KindNodeDoc:
		return "node_document"
	case KindJobDoc:
		return "job_document"
	}
	return "kind_" + strconv.Itoa(int(k))
}

// Doc is one document for Elasticsearch: the index it belongs in, its id and
// its JSON body.
type Doc struct {
	Kind  DocKind
	Index string
	ID    string
	Body  []byte
	// Version, when positive, is the document's external version (its
	// updated_at in microseconds): a server that honours external
	// versioning (Elasticsearch) refuses to replace a stored version at
	// least as new, so a late replay never overwrites newer data.
	Version int64
	// Create stores the document only if none with its id is stored
	// (Elasticsearch's op_type create): a job document's first write, so
	// that the server, not a search, says whether another job holds the
	// id. Servers that ignore external versions are not asked (see
	// elasticsearch.Client.HonoursVersions).
	Create bool
}

// ErrAccessDenied matches (with errors.Is) a store's refusal of the
// agent's credentials (HTTP 401 or 403): a configuration to fix, not a
// document to set aside; what it refuses stays in the spool.
var ErrAccessDenied = errors.New("the store refuses the agent's credentials")
