// Package jobmodel is Jobsight's data model, shared by the agent and the
// Grafana plugin: the job document and the per-node document stored in
// Elasticsearch, their explicit mappings, the cluster-qualified id scheme,
// and the allocations of resource-hours usage is measured against
// (HoursAllocation).
//
// # Ids
//
// A job document's id is "<cluster>:<key>" where key is the Slurm job id
// ("123"), "<array job id>_<task id>" for array tasks ("123_4") or
// "<het job id>+<offset>" for heterogeneous components ("200+1"). Slurm
// reuses job ids (wrap-around, state reset); a job whose id is already held
// by an older job (a document with a different submit time) is stored as
// "<cluster>:<key>@<submit time>" (ReuseDocID), so the older job's document
// is never overwritten. Node documents are "<job document id>/<node>".
//
// # Fields
//
// docs/fields.md is the field reference users write queries from: every
// field, its type and unit. Field names are snake_case and stable; times are
// UTC dates; sizes are bytes; a metric that could not be read is absent and
// named in missing_metrics, never zero.
package jobmodel
