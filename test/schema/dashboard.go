package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/dashboard"

	"github.com/jobsight/jobsight/pkg/models"
	"github.com/jobsight/jobsight/test/dashtest"
)

// Env is what the dashboards are checked against.
type Env struct {
	// UIDs maps each provisioned datasource plugin type to its uid
	// (ProvisionedUIDs).
	UIDs map[string]string
	// DashboardUIDs are the uids of the shipped dashboards, which /d/<uid>
	// links must name; nil skips that check.
	DashboardUIDs map[string]bool
	// ContactPoints are the provisioned contact points' names, which alert
	// rules and notification policies may route to; nil skips that check.
	ContactPoints map[string]bool
}

// Transformations Grafana 11, 12 and 13 all ship (their ids).
var transformationIDs = map[string]bool{
	"calculateField": true, "concatenate": true, "configFromData": true, "convertFieldType": true,
	"extractFields": true, "fieldLookup": true, "filterByRefId": true, "filterByValue": true,
	"filterFieldsByName": true, "formatTime": true, "formatString": true, "groupBy": true,
	"groupingToMatrix": true, "groupToNestedTable": true, "heatmap": true, "histogram": true,
	"joinByField": true, "joinByLabels": true, "labelsToFields": true, "limit": true, "merge": true,
	"organize": true, "partitionByValues": true, "prepareTimeSeries": true, "reduce": true,
	"renameByRegex": true, "rowsToFields": true, "seriesToColumns": true, "seriesToRows": true,
	"sortBy": true, "timeSeriesTable": true,
}

// Field matchers of fieldConfig overrides.
var matcherIDs = map[string]bool{
	"byName": true, "byNames": true, "byRegexp": true, "byRegexpOrNames": true,
	"byType": true, "byFrameRefID": true, "byValue": true,
}

type rawLink struct {
	Title   string `json:"title"`
	URL     string `json:"url"`
	Tooltip string `json:"tooltip"`
}

type rawPanel struct {
	ID              int               `json:"id"`
	Type            string            `json:"type"`
	Title           string            `json:"title"`
	Description     string            `json:"description"`
	Datasource      json.RawMessage   `json:"datasource"`
	Targets         []json.RawMessage `json:"targets"`
	Links           []rawLink         `json:"links"`
	Repeat          string            `json:"repeat"`
	FieldConfig     json.RawMessage   `json:"fieldConfig"`
	Options         json.RawMessage   `json:"options"`
	Transformations []struct {
		ID string `json:"id"`
	} `json:"transformations"`
	Panels []rawPanel `json:"panels"`
}

type rawVar struct {
	Name       string          `json:"name"`
	Type       string          `json:"type"`
	Label      string          `json:"label"`
	Query      json.RawMessage `json:"query"`
	Definition string          `json:"definition"`
	Datasource json.RawMessage `json:"datasource"`
	Current    json.RawMessage `json:"current"`
	Multi      bool            `json:"multi"`
	IncludeAll bool            `json:"includeAll"`
	AllValue   string          `json:"allValue"`
}

type rawDashboard struct {
	UID         string     `json:"uid"`
	Title       string     `json:"title"`
	Description string     `json:"description"`
	Links       []rawLink  `json:"links"`
	Panels      []rawPanel `json:"panels"`
	Templating  struct {
		List []rawVar `json:"list"`
	} `json:"templating"`
	Annotations struct {
		List []json.RawMessage `json:"list"`
	} `json:"annotations"`
}

// DashboardUID returns a dashboard's uid ("" if it has none or is not
// JSON).
func DashboardUID(raw []byte) string {
	var d struct {
		UID string `json:"uid"`
	}
	_ = json.Unmarshal(raw, &d)
	return d.UID
}

// CheckDashboard checks one dashboard (see the package documentation) and
// returns its problems; file names it in them.
func CheckDashboard(file string, raw []byte, env Env) []error {
	register()
	ps := &problems{file: file}
	c := &dashChecker{ps: ps, env: env, labels: map[string]string{}}
	var d rawDashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		var te *json.UnmarshalTypeError
		if !errors.As(err, &te) {
			ps.add("", "not a dashboard: %s", describeJSONError(err))
			return ps.list
		}
		// A value of the wrong type: the strict decoding names it; the
		// rest of the dashboard is still read.
	}
	c.d = d
	c.labelPanels("", d.Panels)
	c.strict(raw)
	c.variables()
	for _, l := range d.Links {
		c.link("dashboard links", l)
	}
	ps.checkVarRefs("", "title", d.Title, c.defined)
	ps.checkVarRefs("", "description", d.Description, c.defined)
	c.annotations()
	c.walkPanels(d.Panels, map[int]string{})
	return ps.list
}

type dashChecker struct {
	ps       *problems
	env      Env
	d        rawDashboard
	labels   map[string]string   // SDK path of a panel ("panels[3]") → `panel "title" (type)`
	defined  map[string]bool     // variable names, built-ins included
	dsVars   map[string]string   // datasource variable → plugin type
	one      map[string][]string // variable values for expansion: one value each
	allValue map[string]string   // multi-value variables with All: the value All sends
}

func panelLabel(p rawPanel) string {
	if p.Type == "row" {
		return fmt.Sprintf("row %q", p.Title)
	}
	return fmt.Sprintf("panel %q (%s)", p.Title, p.Type)
}

func (c *dashChecker) labelPanels(prefix string, ps []rawPanel) {
	for i, p := range ps {
		path := fmt.Sprintf("%spanels[%d]", prefix, i)
		c.labels[path] = panelLabel(p)
		c.labelPanels(path+".", p.Panels)
	}
}

var panelPath = regexp.MustCompile(`^(panels\[\d+\](?:\.panels\[\d+\])*)(?:\.(.*))?$`)

func (c *dashChecker) rename(path string) (string, string) {
	m := panelPath.FindStringSubmatch(path)
	if m == nil {
		return "", ""
	}
	for p := m[1]; p != ""; {
		if l, ok := c.labels[p]; ok {
			rest := strings.TrimPrefix(strings.TrimPrefix(path, p), ".")
			return l, rest
		}
		i := strings.LastIndex(p, ".panels[")
		if i < 0 {
			break
		}
		p = p[:i]
	}
	return "", ""
}

// strict decodes the dashboard with the SDK. A variable's empty current
// ({}: nothing chosen yet, which Grafana writes and accepts) is left out
// first: the schema wants text and value in a current option.
func (c *dashChecker) strict(raw []byte) {
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		c.ps.add("", "%s", describeJSONError(err))
		return
	}
	if tmpl, ok := m["templating"].(map[string]any); ok {
		if list, ok := tmpl["list"].([]any); ok {
			for _, v := range list {
				if vm, ok := v.(map[string]any); ok {
					if cur, ok := vm["current"].(map[string]any); ok && len(cur) == 0 {
						delete(vm, "current")
					}
				}
			}
		}
	}
	// Panel links are data links in Grafana (title, url, targetBlank), but
	// the SDK types them as dashboard links (which also need type, icon,
	// tags...): they are checked as data links and left out for the SDK.
	var takeLinks func(prefix string, panels any)
	takeLinks = func(prefix string, panels any) {
		list, _ := panels.([]any)
		for i, p := range list {
			pm, ok := p.(map[string]any)
			if !ok {
				continue
			}
			path := fmt.Sprintf("%spanels[%d]", prefix, i)
			if links, ok := pm["links"]; ok {
				b, _ := json.Marshal(links)
				c.dataLinks(join(c.labels[path], "links"), b)
				delete(pm, "links")
			}
			takeLinks(path+".", pm["panels"])
		}
	}
	takeLinks("", m["panels"])
	norm, _ := json.Marshal(m)
	var d dashboard.Dashboard
	c.ps.addBuild("", d.UnmarshalJSONStrict(norm), c.rename)
	if err := d.Validate(); err != nil {
		c.ps.addBuild("", err, c.rename)
	}
}

// dsVarName returns the variable a datasource uid names ("${x}" or "$x").
var dsVarUID = regexp.MustCompile(`^\$\{(\w+)\}$|^\$(\w+)$`)

func dsVarName(uid string) string {
	m := dsVarUID.FindStringSubmatch(uid)
	if m == nil {
		return ""
	}
	return m[1] + m[2]
}

// sampleValues are values like those a Jobsight variable query lists, by
// its kind, for validating targets with the variables expanded.
var sampleValues = map[string]string{
	models.VariableClusters: "hpc1", models.VariableUsers: "alice", models.VariableAccounts: "physics",
	models.VariablePartitions: "gpu", models.VariableJobs: "hpc1:1234", models.VariableNodes: "node001",
}

func (c *dashChecker) variables() {
	c.defined = map[string]bool{}
	c.dsVars = map[string]string{}
	c.one = map[string][]string{
		"__interval": {"1m"}, "__interval_ms": {"60000"}, "__rate_interval": {"5m"}, "__range": {"1h"},
		"__from": {"1767225600000"}, "__to": {"1767229200000"}, "__url_time_range": {"from=now-1h&to=now"},
	}
	for k := range builtinVariables {
		c.defined[k] = true
	}
	list := c.d.Templating.List
	names := map[string]bool{}
	for _, v := range list {
		if v.Name == "" {
			c.ps.add("templating", "a variable has no name")
			continue
		}
		if names[v.Name] {
			c.ps.add(fmt.Sprintf("variable %s", v.Name), "defined twice")
		}
		names[v.Name] = true
		c.defined[v.Name] = true
		if v.Type == "datasource" {
			var plugin string
			_ = json.Unmarshal(v.Query, &plugin)
			c.dsVars[v.Name] = plugin
		}
	}
	c.allValue = map[string]string{}
	for _, v := range list {
		// Without a custom all value, All sends every listed value, which
		// the one-value pass stands for.
		if v.Multi && v.IncludeAll && v.AllValue != "" {
			c.allValue[v.Name] = v.AllValue
		}
	}
	for _, v := range list {
		where := fmt.Sprintf("variable %s", v.Name)
		c.ps.checkVarRefs(where, "label", v.Label, c.defined)
		c.ps.checkVarRefs(where, "definition", v.Definition, c.defined)
		switch v.Type {
		case "datasource":
			c.datasourceVariable(where, v)
		case "query":
			c.queryVariable(where, v)
		case "custom", "interval":
			var q string
			_ = json.Unmarshal(v.Query, &q)
			first, _, _ := strings.Cut(q, ",")
			c.one[v.Name] = []string{strings.TrimSpace(first)}
		case "constant", "textbox":
			var q string
			_ = json.Unmarshal(v.Query, &q)
			c.one[v.Name] = []string{q}
		case "adhoc", "groupby":
			c.one[v.Name] = []string{""}
			if len(v.Datasource) > 0 {
				c.dsRef(where, "datasource", v.Datasource)
			}
		default:
			c.ps.add(where, "variable type %q is not one Grafana knows", v.Type)
		}
	}
}

func (c *dashChecker) datasourceVariable(where string, v rawVar) {
	plugin := c.dsVars[v.Name]
	uid, ok := c.env.UIDs[plugin]
	if !ok {
		c.ps.add(where, "selects datasources of type %q, which is not provisioned (provisioned: %s)", plugin, provisionedTypes(c.env))
		return
	}
	c.one[v.Name] = []string{uid}
	var cur struct {
		Value any `json:"value"`
	}
	_ = json.Unmarshal(v.Current, &cur)
	if s, _ := cur.Value.(string); s != uid {
		c.ps.add(join(where, "current.value"), "defaults to %v, not the provisioned %s datasource's uid %q", cur.Value, plugin, uid)
	}
}

func provisionedTypes(env Env) string {
	m := map[string]bool{}
	for t := range env.UIDs {
		m[t] = true
	}
	return keysOf(m)
}

func (c *dashChecker) queryVariable(where string, v rawVar) {
	typ, ok := c.dsRef(where, "datasource", v.Datasource)
	c.ps.checkVarRefsJSON(where, "query", v.Query, c.defined)
	if !ok {
		return
	}
	switch typ {
	case JobsightType:
		t, err := DecodeJobsightTarget(v.Query)
		if err != nil {
			c.ps.add(join(where, "query"), "%v", err)
			return
		}
		if t.QueryType != models.QueryTypeVariable {
			c.ps.add(join(where, "query.queryType"), "is %q; a variable's query is of type %q", t.QueryType, models.QueryTypeVariable)
		}
		c.validateJobsight(join(where, "query"), v.Query)
		c.one[v.Name] = []string{sampleValues[t.Variable]}
	case PrometheusType:
		var s string
		if json.Unmarshal(v.Query, &s) != nil {
			var q struct {
				Query   string `json:"query"`
				RefID   string `json:"refId"`
				QryType *int   `json:"qryType,omitempty"`
			}
			if err := decodeExact(v.Query, &q); err != nil {
				c.ps.add(join(where, "query"), "Prometheus variable query: %v", err)
			}
		}
		c.one[v.Name] = []string{".*"}
	}
}

// dsRef checks a datasource reference: it must name a provisioned plugin
// type and, as uid, a datasource variable of the dashboard that selects
// datasources of that type (${datasource} for Jobsight). It returns the
// type and whether the reference is good.
func (c *dashChecker) dsRef(where, field string, raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || string(raw) == "null" {
		c.ps.add(join(where, field), "missing: name the datasource through the dashboard's datasource variable")
		return "", false
	}
	var ref DSRef
	if err := json.Unmarshal(raw, &ref); err != nil {
		c.ps.add(join(where, field), "is not a datasource reference {type, uid}: %s", describeJSONError(err))
		return "", false
	}
	if _, ok := c.env.UIDs[ref.Type]; !ok {
		c.ps.add(join(where, field+".type"), "%q is not a provisioned datasource type (provisioned: %s)", ref.Type, provisionedTypes(c.env))
		return "", false
	}
	name := dsVarName(ref.UID)
	if name == "" {
		c.ps.add(join(where, field+".uid"), "%q is not a datasource variable: name the %s datasource as ${%s}", ref.UID, ref.Type, c.dsVarFor(ref.Type))
		return "", false
	}
	plugin, ok := c.dsVars[name]
	switch {
	case !ok:
		c.ps.add(join(where, field+".uid"), "%q names %s, which is not a datasource variable of the dashboard (use ${%s})", ref.UID, name, c.dsVarFor(ref.Type))
		return "", false
	case plugin != ref.Type:
		c.ps.add(join(where, field+".uid"), "%q selects %s datasources, but the reference's type is %s", ref.UID, plugin, ref.Type)
		return "", false
	case ref.Type == JobsightType && name != "datasource":
		c.ps.add(join(where, field+".uid"), "%q: the Jobsight datasource is named through ${datasource}", ref.UID)
		return "", false
	}
	return ref.Type, true
}

func (c *dashChecker) dsVarFor(typ string) string {
	if typ == JobsightType {
		return "datasource"
	}
	var names []string
	for n, t := range c.dsVars {
		if t == typ {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	if len(names) == 0 {
		return "<a datasource variable of type " + typ + ">"
	}
	return names[0]
}

func (c *dashChecker) annotations() {
	for i, raw := range c.d.Annotations.List {
		where := fmt.Sprintf("annotations.list[%d]", i)
		var a struct {
			Name       string          `json:"name"`
			BuiltIn    int             `json:"builtIn"`
			Datasource json.RawMessage `json:"datasource"`
			Target     json.RawMessage `json:"target"`
		}
		_ = json.Unmarshal(raw, &a)
		if a.Name != "" {
			where = fmt.Sprintf("annotation %q", a.Name)
		}
		var ref DSRef
		_ = json.Unmarshal(a.Datasource, &ref)
		if a.BuiltIn == 1 && ref.Type == "grafana" && ref.UID == "-- Grafana --" {
			continue // Grafana's own annotations and alerts
		}
		c.dsRef(where, "datasource", a.Datasource)
		c.ps.checkVarRefsJSON(where, "target", a.Target, c.defined)
	}
}

var dashboardLink = regexp.MustCompile(`^/d/([^/?#]+)`)

func (c *dashChecker) link(where string, l rawLink) {
	c.ps.checkVarRefs(where, "title", l.Title, c.defined)
	c.ps.checkVarRefs(where, "url", l.URL, c.defined)
	c.ps.checkVarRefs(where, "tooltip", l.Tooltip, c.defined)
	c.dashboardURL(where, "url", l.URL)
}

func (c *dashChecker) dashboardURL(where, field, url string) {
	if c.env.DashboardUIDs == nil {
		return
	}
	if m := dashboardLink.FindStringSubmatch(url); m != nil && !c.env.DashboardUIDs[m[1]] {
		c.ps.add(join(where, field), "links to dashboard uid %q, which no shipped dashboard has", m[1])
	}
}

func (c *dashChecker) walkPanels(list []rawPanel, ids map[int]string) {
	for _, p := range list {
		where := panelLabel(p)
		if prev, ok := ids[p.ID]; ok {
			c.ps.add(where, "panel id %d is also %s's", p.ID, prev)
		}
		ids[p.ID] = where
		c.panel(where, p)
		c.walkPanels(p.Panels, ids)
	}
}

func (c *dashChecker) panel(where string, p rawPanel) {
	schemas := panelSchemas()
	s, known := schemas[p.Type]
	switch {
	case p.Type == "row" || known:
	case removedPanels[p.Type] != "":
		c.ps.add(where, "panel type %q is not a panel Grafana 11–13 run: use %s", p.Type, removedPanels[p.Type])
	case corePanelsWithoutSchema[p.Type]:
		c.ps.add(where, "panel type %q is a core Grafana panel, but the foundation SDK %s has no schema for it, so its options cannot be checked: give this checker a schema for it before using it", p.Type, SDKVersion)
	default:
		c.ps.add(where, "panel type %q is not a core Grafana 11–13 panel with a schema (one of %s)", p.Type, strings.Join(PanelTypes(), ", "))
	}
	c.ps.checkVarRefs(where, "title", p.Title, c.defined)
	c.ps.checkVarRefs(where, "description", p.Description, c.defined)
	for i, l := range p.Links {
		lw := join(where, fmt.Sprintf("links[%d]", i))
		c.ps.checkVarRefs(lw, "title", l.Title, c.defined)
		c.ps.checkVarRefs(lw, "url", l.URL, c.defined)
	}
	if p.Repeat != "" && !c.defined[p.Repeat] {
		c.ps.add(join(where, "repeat"), "repeats over %q, which the dashboard does not define", p.Repeat)
	}
	for i, tr := range p.Transformations {
		if !transformationIDs[tr.ID] {
			c.ps.add(join(where, fmt.Sprintf("transformations[%d].id", i)), "%q is not a transformation Grafana 11–13 all have", tr.ID)
		}
	}
	if p.Type == "text" {
		var o struct {
			Content string `json:"content"`
		}
		_ = json.Unmarshal(p.Options, &o)
		c.ps.checkVarRefs(where, "options.content", o.Content, c.defined)
	}
	if p.Type != "row" {
		c.fieldConfig(where, p, s, known)
	}
	c.targets(where, p)
}

// fieldConfig decodes a panel's fieldConfig strictly (the SDK's Panel
// decodes it loosely) and each override property against the schema of
// the standard field config or, for custom.*, the panel's custom schema.
func (c *dashChecker) fieldConfig(where string, p rawPanel, s panelSchema, known bool) {
	if len(p.FieldConfig) == 0 {
		return
	}
	where = join(where, "fieldConfig")
	c.ps.checkVarRefsJSON(where, "", p.FieldConfig, c.defined)
	// The SDK types a field's data links as dashboard links, which they
	// are not (no type, icon, tags...): they are taken out and checked
	// against Grafana's DataLink here.
	var generic map[string]any
	dec := json.NewDecoder(bytes.NewReader(p.FieldConfig))
	dec.UseNumber()
	if err := dec.Decode(&generic); err != nil {
		c.ps.add(where, "%s", describeJSONError(err))
		return
	}
	if defaults, ok := generic["defaults"].(map[string]any); ok {
		if links, ok := defaults["links"]; ok {
			b, _ := json.Marshal(links)
			c.dataLinks(join(where, "defaults.links"), b)
			delete(defaults, "links")
		}
	}
	rest, _ := json.Marshal(generic)
	var fcs dashboard.FieldConfigSource
	c.ps.addBuild(where, fcs.UnmarshalJSONStrict(rest), nil)
	var src struct {
		Overrides []struct {
			Matcher struct {
				ID string `json:"id"`
			} `json:"matcher"`
			Properties []struct {
				ID    string          `json:"id"`
				Value json.RawMessage `json:"value"`
			} `json:"properties"`
		} `json:"overrides"`
	}
	if json.Unmarshal(p.FieldConfig, &src) != nil {
		return
	}
	for i, o := range src.Overrides {
		ow := join(where, fmt.Sprintf("overrides[%d]", i))
		if !matcherIDs[o.Matcher.ID] {
			c.ps.add(join(ow, "matcher.id"), "%q is not a field matcher (one of %s)", o.Matcher.ID, keysOf(matcherIDs))
		}
		for j, prop := range o.Properties {
			pw := join(ow, fmt.Sprintf("properties[%d] (%s)", j, prop.ID))
			c.overrideProperty(pw, p.Type, prop.ID, prop.Value, s, known)
		}
	}
}

func (c *dashChecker) overrideProperty(where, panelType, id string, value json.RawMessage, s panelSchema, known bool) {
	if id == "" {
		c.ps.add(where, "override property without id")
		return
	}
	path := strings.Split(id, ".")
	var v any
	if err := json.Unmarshal(value, &v); err != nil {
		c.ps.add(where, "value: %s", describeJSONError(err))
		return
	}
	obj := nest(path, v)
	if id == "links" {
		c.dataLinks(where, value)
		return
	}
	if path[0] == "custom" {
		if !known {
			return // the panel type is reported
		}
		if s.custom == nil {
			c.ps.add(where, "panel type %s has no custom field config in the schema", panelType)
			return
		}
		cfg, _ := cogConfig(panelType)
		raw, _ := json.Marshal(obj["custom"])
		if _, err := cfg.StrictFieldConfigUnmarshaler(raw); err != nil {
			c.ps.addBuild(where, err, nil)
		}
		return
	}
	raw, _ := json.Marshal(obj)
	var fc dashboard.FieldConfig
	if err := fc.UnmarshalJSONStrict(raw); err != nil {
		c.ps.addBuild(where, err, nil)
	}
}

// nest turns a.b.c and v into {"a": {"b": {"c": v}}}.
func nest(path []string, v any) map[string]any {
	out := map[string]any{path[len(path)-1]: v}
	for i := len(path) - 2; i >= 0; i-- {
		out = map[string]any{path[i]: out}
	}
	return out
}

func (c *dashChecker) targets(where string, p rawPanel) {
	if len(p.Targets) == 0 && len(p.Datasource) == 0 {
		return
	}
	var panelDS DSRef
	_ = json.Unmarshal(p.Datasource, &panelDS)
	mixed := panelDS.Type == "datasource" && panelDS.UID == "-- Mixed --"
	panelOK := false
	if !mixed {
		_, panelOK = c.dsRef(where, "datasource", p.Datasource)
	}
	refIDs := map[string]bool{}
	for i, raw := range p.Targets {
		var head struct {
			RefID      string          `json:"refId"`
			Datasource json.RawMessage `json:"datasource"`
		}
		_ = json.Unmarshal(raw, &head)
		tw := join(where, fmt.Sprintf("targets[%d] (refId %s)", i, head.RefID))
		if head.RefID == "" {
			c.ps.add(tw, "no refId")
		} else if refIDs[head.RefID] {
			c.ps.add(tw, "refId %s used twice in the panel", head.RefID)
		}
		refIDs[head.RefID] = true
		c.ps.checkVarRefsJSON(tw, "", raw, c.defined)
		if len(head.Datasource) == 0 {
			c.ps.add(join(tw, "datasource"), "missing: every target names its datasource (without it the schema cannot be chosen)")
			continue
		}
		typ, ok := c.dsRef(tw, "datasource", head.Datasource)
		if !ok {
			continue
		}
		var td DSRef
		_ = json.Unmarshal(head.Datasource, &td)
		if panelOK && td != panelDS {
			c.ps.add(join(tw, "datasource"), "%+v differs from the panel's %+v", td, panelDS)
		}
		if typ == JobsightType {
			c.validateJobsight(tw, raw)
		}
	}
}

// validateJobsight expands a Jobsight query's variables as the frontend
// does (dashtest.ExpandTarget) and validates it as the backend does, once
// with one value per variable and once with multi-value variables at All.
func (c *dashChecker) validateJobsight(where string, raw json.RawMessage) {
	all := map[string][]string{}
	for k, v := range c.one {
		all[k] = v
	}
	for k, v := range c.allValue {
		all[k] = []string{v}
	}
	seen := map[string]bool{}
	for _, vars := range []map[string][]string{c.one, all} {
		m, err := expandTarget(raw, vars)
		if err != nil {
			c.ps.add(where, "%v", err)
			return
		}
		b, _ := json.Marshal(m)
		q, err := models.ParseQuery(b)
		if err == nil {
			err = q.Validate()
		}
		for _, e := range unjoin(err) {
			if msg := e.Error(); !seen[msg] {
				seen[msg] = true
				c.ps.add(where, "the backend refuses the query: %s (expanded: %s)", msg, b)
			}
		}
	}
}

func unjoin(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// tbAdapter lets dashtest.ExpandTarget, written for tests, run here:
// Errorf is what it reports for undefined variables (reported here by the
// reference checks already), Fatalf stops the expansion.
type tbAdapter struct {
	testing.TB
	fatal string
}

type stopExpansion struct{}

func (a *tbAdapter) Helper()               {}
func (a *tbAdapter) Errorf(string, ...any) {}
func (a *tbAdapter) Fatalf(format string, args ...any) {
	a.fatal = fmt.Sprintf(format, args...)
	panic(stopExpansion{})
}

func expandTarget(raw json.RawMessage, vars map[string][]string) (m map[string]any, err error) {
	a := &tbAdapter{}
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(stopExpansion); ok {
				err = errors.New(a.fatal)
				return
			}
			err = fmt.Errorf("expanding the target's variables: %v", r)
		}
	}()
	return dashtest.ExpandTarget(a, "target", raw, vars), nil
}

// dataLink is Grafana's DataLink, a link on a field's values.
type dataLink struct {
	Title       string          `json:"title"`
	URL         string          `json:"url"`
	TargetBlank *bool           `json:"targetBlank,omitempty"`
	Internal    json.RawMessage `json:"internal,omitempty"`
	OneClick    *bool           `json:"oneClick,omitempty"`
}

func (c *dashChecker) dataLinks(where string, raw json.RawMessage) {
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		c.ps.add(where, "not a list of data links: %s", describeJSONError(err))
		return
	}
	for i, el := range list {
		lw := join(where, fmt.Sprintf("[%d]", i))
		var l dataLink
		if err := decodeExact(el, &l); err != nil {
			for _, e := range unjoin(err) {
				c.ps.add(lw, "%v (a data link has %s)", e, keysOf(jsonKeys(reflect.TypeOf(l))))
			}
			continue
		}
		if l.Title == "" || l.URL == "" {
			c.ps.add(lw, "a data link needs a title and a url")
		}
		c.dashboardURL(lw, "url", l.URL)
	}
}
