package plugin

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/jobsight/jobsight/pkg/models"
)

// Values a hostile user or admin could put into a filter, a job id or a
// cluster name.
var hostile = []string{
	`a"b`, `a\"}) or up{x="`, `.*`, `a|b`, "x\\", `}`, `{job_id=~".+"}`, "naïve ☃", `a\nb`, `$1`, `(?i)ROOT`,
}

// Every hostile value, put into a selector by promAnyOf, parses as one
// regular-expression matcher that matches exactly the given values and
// nothing else (no value is read as PromQL or as a pattern).
func TestPromMatchersMatchValuesLiterally(t *testing.T) {
	for _, v := range hostile {
		sel := selector("jobsight_job_memory_used_bytes", []string{v}, []string{"12", v})
		expr, err := parser.ParseExpr(sel)
		if err != nil {
			t.Fatalf("value %q: selector %s does not parse: %v", v, sel, err)
		}
		vs, ok := expr.(*parser.VectorSelector)
		if !ok {
			t.Fatalf("value %q: %s parsed as %T, not one selector", v, sel, expr)
		}
		var cluster, job *labels.Matcher
		for _, m := range vs.LabelMatchers {
			switch m.Name {
			case "cluster":
				cluster = m
			case "job_id":
				job = m
			}
		}
		if cluster == nil || job == nil || len(vs.LabelMatchers) != 3 {
			t.Fatalf("value %q: matchers %v", v, vs.LabelMatchers)
		}
		if !cluster.Matches(v) || cluster.Matches(v+"x") || cluster.Matches("other") || cluster.Matches("") {
			t.Errorf("value %q: cluster matcher %s does not match exactly the value", v, cluster)
		}
		if !job.Matches("12") || !job.Matches(v) || job.Matches("123") || job.Matches("1") {
			t.Errorf("value %q: job matcher %s does not match exactly its values", v, job)
		}
	}
}

func TestPromQuoteRoundTrips(t *testing.T) {
	for _, v := range hostile {
		expr, err := parser.ParseExpr(`up{cluster=` + promQuote(v) + `}`)
		if err != nil {
			t.Fatalf("%q: %v", v, err)
		}
		m := expr.(*parser.VectorSelector).LabelMatchers[0]
		if m.Value != v || m.Type != labels.MatchEqual {
			t.Errorf("%q came back as %q (%s)", v, m.Value, m.Type)
		}
	}
}

// The Elasticsearch query carries filter values as JSON strings in term
// and terms clauses: each comes back unchanged from the encoded body, and
// a name filter's special characters are escaped.
func TestESQueryCarriesValuesAsData(t *testing.T) {
	d := &Datasource{settings: &models.Settings{}}
	for _, v := range hostile {
		q := &models.Query{QueryType: models.QueryTypeJobs, User: []string{v}, Account: []string{v}, Name: v, JobID: "c:12"}
		body, err := d.esQuery(jobScope{q: q, v: Viewer{User: "alice"}, noTime: true})
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := json.Marshal(body)
		var back any
		if err := json.Unmarshal(raw, &back); err != nil {
			t.Fatal(err)
		}
		terms := collect(back, "terms")
		found := 0
		for _, tm := range terms {
			for field, vals := range tm.(map[string]any) {
				if field == "user" || field == "account" {
					if l := vals.([]any); len(l) != 1 || l[0] != v {
						t.Errorf("%q: terms %s = %v", v, field, l)
					}
					found++
				}
			}
		}
		if found != 2 {
			t.Errorf("%q: user/account terms missing in %s", v, raw)
		}
		// The name filter is a regexp whose every character other than
		// a letter, a digit or a non-ASCII one is escaped: read as a
		// regular expression (Go's here, as ZincSearch does), it
		// matches the names containing the value and no other.
		rx := collect(back, "regexp")
		if len(rx) != 1 {
			t.Fatalf("%q: %d regexp clauses", v, len(rx))
		}
		pat := rx[0].(map[string]any)["name"].(map[string]any)["value"].(string)
		re, err := regexp.Compile(`^(?:` + pat + `)$`)
		if err != nil {
			t.Fatalf("%q: name pattern %q is not a regular expression: %v", v, pat, err)
		}
		if !re.MatchString("x" + v + "y") {
			t.Errorf("%q: name pattern %q does not match a name containing the value", v, pat)
		}
		// The value with each of its special characters made another:
		// a pattern that were read as one would still match it.
		other := strings.Map(func(r rune) rune {
			if strings.ContainsRune(`.*?|\(){}[]^$+"`, r) {
				return 'Z'
			}
			return r
		}, v)
		if other != v && !strings.Contains(other, v) && re.MatchString(other) {
			t.Errorf("%q: name pattern %q also matches %q", v, pat, other)
		}
		// The viewer's restriction is always there.
		if !strings.Contains(string(raw), `{"term":{"user":"alice"}}`) {
			t.Errorf("%q: the viewer's restriction is missing: %s", v, raw)
		}
	}
}

// collect returns every value under key in a decoded JSON tree.
func collect(v any, key string) []any {
	var out []any
	switch x := v.(type) {
	case map[string]any:
		for k, c := range x {
			if k == key {
				out = append(out, c)
			}
			out = append(out, collect(c, key)...)
		}
	case []any:
		for _, c := range x {
			out = append(out, collect(c, key)...)
		}
	}
	return out
}

func FuzzPromAnyOf(f *testing.F) {
	for _, v := range hostile {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if !utf8Valid(v) {
			t.Skip()
		}
		m, err := labels.NewMatcher(labels.MatchRegexp, "x", mustUnquote(t, promAnyOf([]string{v})))
		if err != nil {
			t.Fatalf("%q: %v", v, err)
		}
		if !m.Matches(v) {
			t.Errorf("%q: matcher %s does not match its value", v, m)
		}
		if v != "" && m.Matches(v+"x") {
			t.Errorf("%q: matcher %s matches more than its value", v, m)
		}
		if _, err := regexp.Compile("^(?:" + m.Value + ")$"); err != nil {
			t.Errorf("%q: %v", v, err)
		}
	})
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }

func mustUnquote(t *testing.T, q string) string {
	expr, err := parser.ParseExpr(`up{x=~` + q + `}`)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return expr.(*parser.VectorSelector).LabelMatchers[0].Value
}

// A document that does not decode is skipped and counted; the others come
// through.
func TestDecodeJobsSkipsBadDocuments(t *testing.T) {
	raw := []byte(`{"hits":{"total":{"value":3},"hits":[
		{"_source":{"cluster":"c","job_id":"1","user":"a","start_time":"2026-11-23T10:00:00Z"}},
		{"_source":{"cluster":"c","job_id":2,"user":"b"}},
		{"_source":{"cluster":"c","job_id":"3","requested":{"cpus":4}}}]}}`)
	jobs, total, skipped, err := decodeJobs(raw)
	if err != nil || total != 3 || skipped != 1 || len(jobs) != 2 || jobs[0].JobID != "1" || *jobs[1].Requested.CPUs != 4 {
		t.Errorf("decodeJobs: %d jobs, total %d, skipped %d, err %v", len(jobs), total, skipped, err)
	}
	if _, _, _, err := decodeJobs([]byte(`{"hits":`)); err == nil {
		t.Error("a truncated answer must be an error")
	}
}

// Every cluster series' PromQL parses with hostile filter values, and the
// values reach the matchers literally.
func TestClusterSeriesExpressionsParse(t *testing.T) {
	hostile := []string{`a"b`, `x\y`, "}) or vector(1) #", ".*"}
	for name, cs := range clusterSeriesCatalogue {
		sel := func(metric string) string {
			return metric + "{cluster=~" + promAnyOf(hostile) + ",node=~" + promAnyOf(hostile) + "}"
		}
		expr := cs.expr(sel, "1m")
		if _, err := parser.ParseExpr(expr); err != nil {
			t.Errorf("%s: %s does not parse: %v", name, expr, err)
		}
		if strings.Contains(expr, "jobsight_job_") {
			t.Errorf("%s reads job series: %s", name, expr)
		}
	}
}
