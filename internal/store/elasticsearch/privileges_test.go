package elasticsearch

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const repoRoot = "../../.."

func readRepoFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, path))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The table itself: every call named exists, every method's calls exist.
func TestPrivilegeTableIsWhole(t *testing.T) {
	for _, u := range Uses {
		for _, c := range u.Calls {
			if _, ok := APICalls[c]; !ok {
				t.Errorf("%s uses %q, which APICalls does not list", u.Role, c)
			}
		}
	}
	for m, calls := range MethodCalls {
		for _, c := range calls {
			if _, ok := APICalls[c]; !ok {
				t.Errorf("method %s sends %q, which APICalls does not list", m, c)
			}
		}
	}
}

// kindOfIndexName maps the index names of docs/indices.md's roles to
// kinds; pattern is whether the name is the monthly pattern.
func kindOfIndexName(name string) (kind string, pattern bool) {
	base, pattern := strings.CutSuffix(name, "-*")
	return map[string]string{"jobsight-jobs": KindJob, "jobsight-nodes": KindNode, "jobsight-results": KindResult,
		"jobsight-cluster-state": KindClusterState, "jobsight-history": KindHistory}[base], pattern
}

// docRoles parses the example roles of docs/indices.md and
// docs/site-config.md (the report's): "POST
// _security/role/<name>" followed by the role's JSON.
func docRoles(t *testing.T) map[string]struct {
	Cluster []string `json:"cluster"`
	Indices []struct {
		Names      []string `json:"names"`
		Privileges []string `json:"privileges"`
	} `json:"indices"`
} {
	t.Helper()
	doc := readRepoFile(t, "docs/indices.md") + "\n" + readRepoFile(t, "docs/site-config.md")
	type role = struct {
		Cluster []string `json:"cluster"`
		Indices []struct {
			Names      []string `json:"names"`
			Privileges []string `json:"privileges"`
		} `json:"indices"`
	}
	out := map[string]role{}
	re := regexp.MustCompile(`(?s)POST _security/role/(\w+)\n(\{.*?\}\]\})\n`)
	for _, m := range re.FindAllStringSubmatch(doc, -1) {
		var r role
		if err := json.Unmarshal([]byte(m[2]), &r); err != nil {
			t.Fatalf("docs/indices.md: role %s is not JSON: %v\n%s", m[1], err, m[2])
		}
		out[m[1]] = r
	}
	return out
}

// docs/indices.md's example roles give each component exactly the
// privileges of its calls, per index (base and monthly pattern both).
func TestIndicesDocRolesMatchTheCalls(t *testing.T) {
	roles := docRoles(t)
	for _, name := range Roles() {
		r, ok := roles[name]
		if !ok {
			t.Errorf("docs/indices.md has no example role %s", name)
			continue
		}
		cluster, indices := RolePrivileges(name)
		got := slices.Sorted(slices.Values(r.Cluster))
		if !slices.Equal(got, cluster) {
			t.Errorf("docs/indices.md: role %s has cluster privileges %q; its calls need %q", name, got, cluster)
		}
		gotIdx := map[string][]string{}
		patterns := map[string]map[bool]bool{}
		for _, e := range r.Indices {
			for _, n := range e.Names {
				kind, pattern := kindOfIndexName(n)
				if kind == "" {
					t.Errorf("docs/indices.md: role %s names index %q, which is none of Jobsight's", name, n)
					continue
				}
				if patterns[kind] == nil {
					patterns[kind] = map[bool]bool{}
				}
				patterns[kind][pattern] = true
				for _, p := range e.Privileges {
					if !slices.Contains(gotIdx[kind], p) {
						gotIdx[kind] = append(gotIdx[kind], p)
					}
				}
			}
		}
		for _, kind := range []string{KindJob, KindNode, KindResult, KindClusterState, KindHistory} {
			g := slices.Sorted(slices.Values(gotIdx[kind]))
			if !slices.Equal(g, indices[kind]) {
				t.Errorf("docs/indices.md: role %s has %q on the %s index; its calls need %q", name, g, kind, indices[kind])
			}
			if kind != KindClusterState && kind != KindHistory && len(g) > 0 && !(patterns[kind][true] && patterns[kind][false]) {
				t.Errorf("docs/indices.md: role %s names the %s index without both its base and its monthly pattern", name, kind)
			}
		}
	}
	for name := range roles {
		if !slices.Contains(Roles(), name) {
			t.Errorf("docs/indices.md has a role %s that privileges.go does not know", name)
		}
	}
}

// README names each role with its privileges, "role `jobsight_agent`
// (cluster: `monitor`; indices: `create_index`, …)": exactly the calls'
// (the index privileges of all its indices together; docs/indices.md says
// which index takes which).
func TestReadmeRolesMatchTheCalls(t *testing.T) {
	readme := strings.Join(strings.Fields(readRepoFile(t, "README.md")), " ")
	re := regexp.MustCompile("role `(jobsight_\\w+)` \\(cluster: ([^;]*); indices: ([^)]*)\\)")
	ticks := regexp.MustCompile("`([^`]+)`")
	tokens := func(s string) []string {
		var out []string
		for _, m := range ticks.FindAllStringSubmatch(s, -1) {
			out = append(out, m[1])
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	seen := map[string]bool{}
	for _, m := range re.FindAllStringSubmatch(readme, -1) {
		name := m[1]
		seen[name] = true
		if !slices.Contains(Roles(), name) {
			t.Errorf("README names role %s, which privileges.go does not know", name)
			continue
		}
		cluster, indices := RolePrivileges(name)
		var all []string
		for _, p := range indices {
			all = append(all, p...)
		}
		slices.Sort(all)
		all = slices.Compact(all)
		if got := tokens(m[2]); !slices.Equal(got, cluster) {
			t.Errorf("README: role %s with cluster privileges %q; its calls need %q", name, got, cluster)
		}
		if got := tokens(m[3]); !slices.Equal(got, all) {
			t.Errorf("README: role %s with index privileges %q; its calls need %q", name, got, all)
		}
	}
	for _, name := range []string{"jobsight_agent", "jobsight_collector", "jobsight_grafana", "jobsight_setup"} {
		if !seen[name] {
			t.Errorf("README does not name role %s as \"role `%s` (cluster: …; indices: …)\"", name, name)
		}
	}
	// No other privilege list: the phrasing of the lists this replaced.
	for _, stale := range []string{"(`create_index`, `index`, `read`", "`read`, `index` on the job and node", "`read` and `index` on the job and node"} {
		if strings.Contains(readme, stale) {
			t.Errorf("README still lists privileges as %q", stale)
		}
	}
}

// The components call no Client method, and the datasource sends no
// request, beyond what Uses lists for them: a new call must come with its
// privilege in the table (and so in the docs).
func TestComponentsCallOnlyTheListedCalls(t *testing.T) {
	callsOf := func(role string) []string {
		var out []string
		for _, u := range Uses {
			if u.Role == role {
				out = append(out, u.Calls...)
			}
		}
		return out
	}
	method := regexp.MustCompile(`\.es\.([A-Z]\w*)\(`)
	for _, c := range []struct{ role, dir string }{
		{"jobsight_agent", "agent/deliver"},
		{"jobsight_collector", "internal/site/clusterstate"},
	} {
		files, _ := filepath.Glob(filepath.Join(repoRoot, c.dir, "*.go"))
		n := 0
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range method.FindAllStringSubmatch(string(b), -1) {
				n++
				sends, ok := MethodCalls[m[1]]
				if !ok {
					t.Errorf("%s calls Client.%s, which MethodCalls does not list", filepath.Base(f), m[1])
					continue
				}
				// PutTemplate and EnsurePartitioned's creation are setup's
				// in agent/deliver (PutTemplates, EnsureIndices).
				allowed := callsOf(c.role)
				if c.role == "jobsight_agent" {
					allowed = append(allowed, callsOf("jobsight_setup")...)
				}
				for _, s := range sends {
					if !slices.Contains(allowed, s) {
						t.Errorf("%s: Client.%s sends %q, which %s's calls in privileges.go do not include", filepath.Base(f), m[1], s, c.role)
					}
				}
			}
		}
		if n == 0 {
			t.Errorf("%s: no Elasticsearch calls found (moved? update the test)", c.dir)
		}
	}

	// The datasource speaks HTTP itself: each of its requests to
	// Elasticsearch, as written in pkg/plugin, and the call it is.
	known := map[string]string{
		`send(ctx, d.es, http.MethodGet, base, "/")`:                                       "info",
		`send(ctx, d.es, http.MethodHead, base, "/"+url.PathEscape(candidate))`:            "index exists",
		`send(ctx, d.es, http.MethodGet, base, "/"+url.PathEscape(index)+"/_mapping")`:     "get mapping",
		`d.esRequest(ctx, st, http.MethodPost, searchPath(index), body)`:                   "search",
		`d.esRequest(qc.ctx, qc.st, http.MethodPost, pitPath(index), nil)`:                 "open pit",
		`d.esRequest(qc.ctx, qc.st, http.MethodDelete, "/_pit", map[string]any{"id": id})`: "close pit",
		`d.esRequest(qc.ctx, qc.st, http.MethodPost, "/_search", page)`:                    "search",
	}
	files, _ := filepath.Glob(filepath.Join(repoRoot, "pkg/plugin/*.go"))
	found := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if !strings.Contains(line, "send(ctx, d.es,") && !strings.Contains(line, "d.esRequest(") {
				continue
			}
			if strings.Contains(line, "func (d *Datasource) esRequest(") {
				continue
			}
			found++
			call := ""
			for k, v := range known {
				if strings.Contains(line, k) {
					call = v
				}
			}
			if call == "" {
				t.Errorf("%s: an Elasticsearch request privileges.go does not list: %s", filepath.Base(f), strings.TrimSpace(line))
				continue
			}
			if !slices.Contains(callsOf("jobsight_grafana"), call) {
				t.Errorf("%s: %q is not among jobsight_grafana's calls", filepath.Base(f), call)
			}
		}
	}
	if found == 0 {
		t.Error("pkg/plugin: no Elasticsearch requests found (moved? update the test)")
	}
}
