package alerting

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"gopkg.in/yaml.v3"
)

// ExprDatasourceUID is the datasource uid Grafana gives server-side
// expressions ("__expr__"; "-100" is its legacy spelling, also accepted).
const ExprDatasourceUID = "__expr__"

// Rule is one alert rule of a provisioning file, with its group's
// organisation, folder and interval.
type Rule struct {
	OrgID    int64
	Folder   string
	Group    string
	Interval time.Duration

	UID       string
	Title     string
	Condition string // the refId whose result decides the alert
	Data      []Query
	For       time.Duration
	// NoDataState: NoData (default), Alerting, OK; ExecErrState: Error
	// (default), Alerting, OK.
	NoDataState  string
	ExecErrState string
	Labels       map[string]string
	Annotations  map[string]string
	IsPaused     bool
}

// Query is one entry of a rule's data: a datasource query or a
// server-side expression (DatasourceUID ExprDatasourceUID).
type Query struct {
	RefID             string
	QueryType         string
	RelativeTimeRange RelativeTimeRange
	DatasourceUID     string
	// Model is the query model as Grafana sends it to the datasource (or
	// reads it as an expression); RawModel is the same as JSON.
	Model    map[string]any
	RawModel json.RawMessage
}

// RelativeTimeRange is how far back a query reaches from the evaluation
// time (From) and where it stops (To).
type RelativeTimeRange struct {
	From, To time.Duration
}

// IsExpression says whether q is a server-side expression.
func (q Query) IsExpression() bool {
	return q.DatasourceUID == ExprDatasourceUID || q.DatasourceUID == "-100"
}

// ExpressionType is an expression's model "type" (reduce, threshold, math,
// resample, classic_conditions); "" for a datasource query.
func (q Query) ExpressionType() string {
	if !q.IsExpression() {
		return ""
	}
	s, _ := q.Model["type"].(string)
	return s
}

// ExpressionInput is the refId a reduce or threshold expression reads
// (model "expression", with an optional leading "$" as Grafana allows).
func (q Query) ExpressionInput() string {
	s, _ := q.Model["expression"].(string)
	return strings.TrimPrefix(strings.TrimSpace(s), "$")
}

// Query returns the rule's query or expression refID.
func (r Rule) Query(refID string) (Query, bool) {
	for _, q := range r.Data {
		if q.RefID == refID {
			return q, true
		}
	}
	return Query{}, false
}

// Chain follows the condition back through its reduce/threshold inputs to
// a datasource query and returns the steps in evaluation order (the
// datasource query first, the condition last). It fails for an expression
// whose input it cannot follow (math, classic_conditions: several or no
// single input) or for a missing refId.
func (r Rule) Chain() ([]Query, error) {
	var chain []Query
	seen := map[string]bool{}
	ref := r.Condition
	for {
		if seen[ref] {
			return nil, fmt.Errorf("rule %s: expression chain loops at refId %s", r.UID, ref)
		}
		seen[ref] = true
		q, ok := r.Query(ref)
		if !ok {
			return nil, fmt.Errorf("rule %s: refId %s is referenced but not in data", r.UID, ref)
		}
		chain = append([]Query{q}, chain...)
		if !q.IsExpression() {
			return chain, nil
		}
		switch t := q.ExpressionType(); t {
		case "reduce", "threshold", "resample":
			ref = q.ExpressionInput()
			if ref == "" {
				return nil, fmt.Errorf("rule %s: %s expression %s has no input (model.expression)", r.UID, t, q.RefID)
			}
		default:
			return nil, fmt.Errorf("rule %s: expression %s has type %q, whose inputs Chain does not follow", r.UID, q.RefID, t)
		}
	}
}

var (
	labelRef = regexp.MustCompile(`\$labels\.([A-Za-z_][A-Za-z0-9_]*)|index\s+\$labels\s+"([^"]+)"`)
	valueRef = regexp.MustCompile(`\$values\.([A-Za-z_][A-Za-z0-9_]*)|index\s+\$values\s+"([^"]+)"`)
)

// TemplateLabels are the label names the rule's annotation and label
// templates read ({{ $labels.X }} or {{ index $labels "X" }}), sorted.
func (r Rule) TemplateLabels() []string { return r.templateRefs(labelRef) }

// TemplateValues are the refIds the rule's templates read with
// {{ $values.X }}, sorted.
func (r Rule) TemplateValues() []string { return r.templateRefs(valueRef) }

func (r Rule) templateRefs(re *regexp.Regexp) []string {
	seen := map[string]bool{}
	scan := func(m map[string]string) {
		for _, s := range m {
			for _, g := range re.FindAllStringSubmatch(s, -1) {
				name := g[1]
				if name == "" {
					name = g[2]
				}
				seen[name] = true
			}
		}
	}
	scan(r.Annotations)
	scan(r.Labels)
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// The provisioning file as Grafana's file provisioning reads it
// (apiVersion 1).
type fileV1 struct {
	APIVersion int       `yaml:"apiVersion"`
	Groups     []groupV1 `yaml:"groups"`
}

type groupV1 struct {
	OrgID    int64    `yaml:"orgId"`
	Name     string   `yaml:"name"`
	Folder   string   `yaml:"folder"`
	Interval string   `yaml:"interval"`
	Rules    []ruleV1 `yaml:"rules"`
}

type ruleV1 struct {
	UID          string            `yaml:"uid"`
	Title        string            `yaml:"title"`
	Condition    string            `yaml:"condition"`
	Data         []queryV1         `yaml:"data"`
	NoDataState  string            `yaml:"noDataState"`
	ExecErrState string            `yaml:"execErrState"`
	For          string            `yaml:"for"`
	Labels       map[string]string `yaml:"labels"`
	Annotations  map[string]string `yaml:"annotations"`
	IsPaused     bool              `yaml:"isPaused"`
}

type queryV1 struct {
	RefID             string         `yaml:"refId"`
	QueryType         string         `yaml:"queryType"`
	RelativeTimeRange relTimeV1      `yaml:"relativeTimeRange"`
	DatasourceUID     string         `yaml:"datasourceUid"`
	Model             map[string]any `yaml:"model"`
}

type relTimeV1 struct {
	From yaml.Node `yaml:"from"`
	To   yaml.Node `yaml:"to"`
}

// LoadRules reads an alert-rule provisioning file (apiVersion 1) and
// returns its rules in file order. Errors name the rule and what is wrong:
// a missing uid, title or condition, a condition or expression input that
// names no refId, duplicate refIds, bad durations or states.
func LoadRules(path string) ([]Rule, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f fileV1
	if err := yaml.Unmarshal(raw, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if f.APIVersion != 1 {
		return nil, fmt.Errorf("%s: apiVersion %d, want 1", path, f.APIVersion)
	}
	var rules []Rule
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(path+": "+format, a...)) }
	for gi, g := range f.Groups {
		if g.Name == "" || g.Folder == "" {
			bad("group %d: name and folder are required", gi)
		}
		orgID := g.OrgID
		if orgID == 0 {
			orgID = 1
		}
		var interval time.Duration
		if g.Interval != "" {
			if interval, err = parseDuration(g.Interval); err != nil {
				bad("group %q: interval: %v", g.Name, err)
			}
		}
		for ri, rv := range g.Rules {
			where := fmt.Sprintf("group %q rule %d (uid %q)", g.Name, ri, rv.UID)
			r := Rule{OrgID: orgID, Folder: g.Folder, Group: g.Name, Interval: interval,
				UID: rv.UID, Title: rv.Title, Condition: rv.Condition, NoDataState: rv.NoDataState,
				ExecErrState: rv.ExecErrState, Labels: rv.Labels, Annotations: rv.Annotations, IsPaused: rv.IsPaused}
			if r.UID == "" || r.Title == "" || r.Condition == "" {
				bad("%s: uid, title and condition are required", where)
			}
			if rv.For != "" {
				if r.For, err = parseDuration(rv.For); err != nil {
					bad("%s: for: %v", where, err)
				}
			}
			if r.NoDataState == "" {
				r.NoDataState = "NoData"
			}
			if r.ExecErrState == "" {
				r.ExecErrState = "Error"
			}
			switch r.NoDataState {
			case "NoData", "Alerting", "OK", "KeepLast":
			default:
				bad("%s: noDataState %q is not NoData, Alerting, OK or KeepLast", where, r.NoDataState)
			}
			switch r.ExecErrState {
			case "Error", "Alerting", "OK", "KeepLast":
			default:
				bad("%s: execErrState %q is not Error, Alerting, OK or KeepLast", where, r.ExecErrState)
			}
			refs := map[string]bool{}
			for qi, qv := range rv.Data {
				q := Query{RefID: qv.RefID, QueryType: qv.QueryType, DatasourceUID: qv.DatasourceUID, Model: qv.Model}
				if q.RefID == "" {
					bad("%s: data[%d] has no refId", where, qi)
				}
				if refs[q.RefID] {
					bad("%s: refId %s appears twice", where, q.RefID)
				}
				refs[q.RefID] = true
				if q.DatasourceUID == "" {
					bad("%s: data %s has no datasourceUid", where, q.RefID)
				}
				if q.Model == nil {
					q.Model = map[string]any{}
				}
				if q.RawModel, err = json.Marshal(q.Model); err != nil {
					bad("%s: data %s: model is not JSON-encodable: %v", where, q.RefID, err)
				}
				if q.RelativeTimeRange.From, err = relDuration(qv.RelativeTimeRange.From); err != nil {
					bad("%s: data %s: relativeTimeRange.from: %v", where, q.RefID, err)
				}
				if q.RelativeTimeRange.To, err = relDuration(qv.RelativeTimeRange.To); err != nil {
					bad("%s: data %s: relativeTimeRange.to: %v", where, q.RefID, err)
				}
				r.Data = append(r.Data, q)
			}
			if len(r.Data) == 0 {
				bad("%s: no data", where)
			}
			if r.Condition != "" && !refs[r.Condition] {
				bad("%s: condition %s names no refId of its data", where, r.Condition)
			}
			for _, q := range r.Data {
				if in := q.ExpressionInput(); q.IsExpression() && in != "" && !refs[in] &&
					(q.ExpressionType() == "reduce" || q.ExpressionType() == "threshold" || q.ExpressionType() == "resample") {
					bad("%s: expression %s reads %s, which is not a refId of its data", where, q.RefID, in)
				}
			}
			rules = append(rules, r)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return rules, nil
}

// parseDuration reads a Prometheus-style duration ("5m", "1h30m", "1d"),
// as Grafana's provisioning does for "for" and "interval".
func parseDuration(s string) (time.Duration, error) {
	d, err := model.ParseDuration(s)
	if err != nil {
		return 0, err
	}
	return time.Duration(d), nil
}

// relDuration reads a relativeTimeRange bound: a number of seconds (as
// Grafana writes them) or a duration string.
func relDuration(n yaml.Node) (time.Duration, error) {
	if n.Kind == 0 || n.Value == "" {
		return 0, nil
	}
	if n.Kind != yaml.ScalarNode {
		return 0, fmt.Errorf("want seconds, got a YAML %v", n.Kind)
	}
	if secs, err := strconv.ParseInt(n.Value, 10, 64); err == nil {
		if secs < 0 {
			return 0, fmt.Errorf("negative (%d s)", secs)
		}
		return time.Duration(secs) * time.Second, nil
	}
	return parseDuration(n.Value)
}
