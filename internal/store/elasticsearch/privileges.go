package elasticsearch

import "slices"

// The Elasticsearch privileges of every component, from the calls it makes.
// This table is the one source: docs/indices.md ("Least privileges": the
// example roles) and README.md (the roles named in its install steps) must
// list exactly what it gives, and privileges_test.go checks that they do
// and that the components call no Client method and no raw request the
// table does not list for them.

// APICall is one request Jobsight sends to Elasticsearch and the privilege
// it needs (Elasticsearch 8's names): a cluster privilege, or an index
// privilege on the index it names, or none.
type APICall struct {
	Request string // method and path, <index> for the index it names
	Cluster string
	Index   string
}

// APICalls are the requests, by name.
var APICalls = map[string]APICall{
	"info":          {Request: "GET /", Cluster: "monitor"}, // the client's product check, first of all
	"index exists":  {Request: "HEAD /<index>", Index: "view_index_metadata"},
	"create index":  {Request: "PUT /<index>", Index: "create_index"},
	"get mapping":   {Request: "GET /<index>/_mapping", Index: "view_index_metadata"},
	"put mapping":   {Request: "PUT /<index>/_mapping", Index: "indices:admin/mapping/put"},
	"bulk":          {Request: "POST /_bulk (index actions)", Index: "index"},
	"bulk create":   {Request: "POST /_bulk into a month's index that does not exist yet (created by the write)", Index: "create_index"},
	"index doc":     {Request: "PUT /<index>/_doc/<id>", Index: "index"},
	"search":        {Request: "POST /<index>/_search", Index: "read"},
	"open pit":      {Request: "POST /<index>/_pit", Index: "read"},
	"close pit":     {Request: "DELETE /_pit"},
	"put template":  {Request: "PUT /_index_template/<base>", Cluster: "manage_index_templates"},
	"list monthly":  {Request: "GET /<base>-*/_settings/index.creation_date", Index: "view_index_metadata"},
	"delete index":  {Request: "DELETE /<index>", Index: "delete_index"},
	"search by ids": {Request: "POST /<index>/_search (ids query)", Index: "read"},
	// The store check's own clean-up of its scratch document (CheckCalls):
	// no component needs it, and none of the roles has it; without it the
	// empty document jobsight-check-<host> stays, overwritten by the next
	// check.
	"delete doc": {Request: "DELETE /<index>/_doc/<id>", Index: "delete"},
}

// ensureCalls make sure of an index: it is created with its mapping, or
// extended with the fields it lacks (EnsureIndex, and the monthly index a
// partitioned write goes to).
var ensureCalls = []string{"info", "index exists", "create index", "get mapping", "put mapping"}

// MethodCalls are the requests each Client method may send.
var MethodCalls = map[string][]string{
	"Info":              {"info"},
	"EnsureIndex":       ensureCalls,
	"EnsurePartitioned": ensureCalls,
	// Bulk and Index make sure of a registered base's monthly index first
	// (EnsurePartitioned registers it).
	"Bulk":           append(slices.Clone(ensureCalls), "bulk"),
	"Index":          append(slices.Clone(ensureCalls), "index doc"),
	"Search":         {"info", "search"},
	"GetByIDs":       {"info", "search by ids"},
	"PutTemplate":    {"info", "put template"},
	"MonthlyIndices": {"info", "list monthly"},
	"DeleteIndex":    {"info", "delete index"},
	// What the client learnt of the server: no request.
	"HonoursVersions": {},
	"VersionsKnown":   {},
	"NoteVersions":    {},
}

// Index kinds a role names: the job, node and result bases (each with its
// monthly "<base>-*"), and the collector's own index.
const (
	KindJob          = "job"
	KindNode         = "node"
	KindResult       = "result"
	KindClusterState = "cluster-state"
	KindHistory      = "history" // the site command's history index (one index, not monthly)
)

// Use is what one component does on one kind of index.
type Use struct {
	Role  string // the example role of docs/indices.md
	Kind  string // "" for calls that name no index (info, put template, close pit)
	Calls []string
}

// Uses are every component's calls. Roles: jobsight_agent (the node agents),
// jobsight_collector (the cluster-state collector), jobsight_grafana (the
// datasource's store user), jobsight_site (the site command's
// elasticsearch credential: analyze, notify, history, export),
// jobsight_setup (`jobsight-agent setup` or
// `jobsight setup`, run once by an administrator), jobsight_report (the
// read-only credential of `jobsight report`, docs/site-config.md).
var Uses = []Use{
	// Node agent (agent/deliver): EnsurePartitioned and Bulk on its three
	// bases; reused ids and node documents are searched (GetByIDs, Search).
	{Role: "jobsight_agent", Calls: []string{"info"}},
	{Role: "jobsight_agent", Kind: KindJob, Calls: []string{"index exists", "create index", "get mapping", "put mapping", "bulk", "search", "search by ids"}},
	{Role: "jobsight_agent", Kind: KindNode, Calls: []string{"index exists", "create index", "get mapping", "put mapping", "bulk", "search", "search by ids"}},
	{Role: "jobsight_agent", Kind: KindResult, Calls: []string{"index exists", "create index", "get mapping", "put mapping", "bulk", "search by ids"}},

	// Cluster-state collector (internal/site/clusterstate): its own index
	// (EnsureIndex, Index); lost jobs: searched in the job and node indices
	// and closed in the job document's index (Bulk; a month's index it
	// does not find is created by the write, with the template's mapping);
	// retention (retention_months) lists and deletes months of all three.
	{Role: "jobsight_collector", Calls: []string{"info"}},
	{Role: "jobsight_collector", Kind: KindClusterState, Calls: []string{"index exists", "create index", "get mapping", "put mapping", "index doc"}},
	{Role: "jobsight_collector", Kind: KindJob, Calls: []string{"search", "bulk", "bulk create", "list monthly", "delete index"}},
	{Role: "jobsight_collector", Kind: KindNode, Calls: []string{"search", "list monthly", "delete index"}},
	{Role: "jobsight_collector", Kind: KindResult, Calls: []string{"list monthly", "delete index"}},

	// Grafana datasource (pkg/plugin): health check (GET /, HEAD of this
	// or last month's job index, its mapping); queries search the job and
	// node indices, deep job pages in a point in time.
	{Role: "jobsight_grafana", Calls: []string{"info", "close pit"}},
	{Role: "jobsight_grafana", Kind: KindJob, Calls: []string{"index exists", "get mapping", "search", "open pit"}},
	{Role: "jobsight_grafana", Kind: KindNode, Calls: []string{"search"}},

	// `jobsight report` with its read-only credential (cmd/jobsight): the
	// job indices searched, after the client's GET /.
	{Role: "jobsight_report", Calls: []string{"info"}},
	{Role: "jobsight_report", Kind: KindJob, Calls: []string{"search"}},

	// The site command with its elasticsearch section's credential
	// (internal/site/feedback): analyze and notify search final jobs and
	// write the analysis into the job document, where it is, and into the
	// result's month (an index the write may create, with the template's
	// mapping); history and export search results; history writes its
	// entries. Its indices are made by `jobsight setup` (jobsight_setup).
	{Role: "jobsight_site", Calls: []string{"info"}},
	{Role: "jobsight_site", Kind: KindJob, Calls: []string{"search", "bulk"}},
	{Role: "jobsight_site", Kind: KindResult, Calls: []string{"search", "bulk", "bulk create"}},
	{Role: "jobsight_site", Kind: KindHistory, Calls: []string{"bulk"}},

	// setup: the templates, then this month's indices (EnsurePartitioned).
	{Role: "jobsight_setup", Calls: []string{"info", "put template"}},
	{Role: "jobsight_setup", Kind: KindJob, Calls: []string{"index exists", "create index", "get mapping", "put mapping"}},
	{Role: "jobsight_setup", Kind: KindNode, Calls: []string{"index exists", "create index", "get mapping", "put mapping"}},
	{Role: "jobsight_setup", Kind: KindResult, Calls: []string{"index exists", "create index", "get mapping", "put mapping"}},
}

// RolePrivileges are the privileges role needs, from Uses: its cluster
// privileges and its index privileges by kind, each sorted.
func RolePrivileges(role string) (cluster []string, indices map[string][]string) {
	indices = map[string][]string{}
	for _, u := range Uses {
		if u.Role != role {
			continue
		}
		for _, name := range u.Calls {
			c := APICalls[name]
			if c.Cluster != "" && !slices.Contains(cluster, c.Cluster) {
				cluster = append(cluster, c.Cluster)
			}
			if c.Index != "" && u.Kind != "" && !slices.Contains(indices[u.Kind], c.Index) {
				indices[u.Kind] = append(indices[u.Kind], c.Index)
			}
		}
	}
	slices.Sort(cluster)
	for k := range indices {
		slices.Sort(indices[k])
	}
	return cluster, indices
}

// Roles are the roles of Uses, in order.
func Roles() []string {
	var out []string
	for _, u := range Uses {
		if !slices.Contains(out, u.Role) {
			out = append(out, u.Role)
		}
	}
	return out
}
