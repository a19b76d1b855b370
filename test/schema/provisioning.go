package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/prometheus/common/model"
	"gopkg.in/yaml.v3"

	"github.com/jobsight/jobsight/pkg/models"
)

// decodeYAML decodes one YAML document strictly: a key the struct does not
// have is an error naming it and its line.
func decodeYAML(raw []byte, out any) error {
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(out); err != nil {
		return err
	}
	var extra any
	if err := dec.Decode(&extra); err == nil {
		return errors.New("more than one YAML document: Grafana reads the first only")
	}
	return nil
}

func (ps *problems) addYAML(err error) {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		for _, e := range te.Errors {
			ps.add("", "%s", e)
		}
		return
	}
	ps.add("", "%v", err)
}

// Placeholder is a $__env{NAME} (or ${NAME}) of the provisioning files with
// a plausible value for the checks; Optional ones are documented as "empty
// for none" and are checked both set and empty.
type Placeholder struct {
	Value    string
	Optional bool
}

// Placeholders are the environment variables the provisioning files may
// use (provisioning/README.md documents each).
var Placeholders = map[string]Placeholder{
	"JOBSIGHT_ES_URL":                  {Value: "http://elasticsearch:9200"},
	"JOBSIGHT_ES_JOB_INDEX":            {Value: "jobsight-jobs", Optional: true},
	"JOBSIGHT_ES_NODE_INDEX":           {Value: "jobsight-nodes", Optional: true},
	"JOBSIGHT_ES_USER":                 {Value: "jobsight-reader", Optional: true},
	"JOBSIGHT_ES_PASSWORD":             {Value: "test-password", Optional: true},
	"JOBSIGHT_PROMETHEUS_URL":          {Value: "http://prometheus:9090"},
	"JOBSIGHT_PROMETHEUS_BEARER_TOKEN": {Value: "test-token", Optional: true},
	"JOBSIGHT_CLUSTER_FILTER":          {Value: "hpc1", Optional: true},
	"JOBSIGHT_ALLOCATIONS_URL":         {Value: "http://collector:9310/constants", Optional: true},
	"JOBSIGHT_ALLOCATIONS_TOKEN":       {Value: "collector-token", Optional: true},
	"JOBSIGHT_DASHBOARDS_DIR":          {Value: "/var/lib/grafana/dashboards/jobsight"},
}

// envRef finds Grafana's environment expansions in provisioning values:
// $__env{NAME}, ${NAME} and $NAME ($$ is a literal $).
var envRef = regexp.MustCompile(`\$\$|\$__env\{(\w+)\}|\$\{(\w+)\}|\$(\w+)`)

// expandEnv substitutes the placeholders in s (optional ones empty when
// emptyOptional) and reports unknown ones.
func (ps *problems) expandEnv(where, s string, emptyOptional bool) string {
	return envRef.ReplaceAllStringFunc(s, func(m string) string {
		if m == "$$" {
			return "$"
		}
		sub := envRef.FindStringSubmatch(m)
		name := sub[1] + sub[2] + sub[3]
		p, ok := Placeholders[name]
		if !ok {
			ps.add(where, "uses the environment variable %s, which is not a documented placeholder (%s)", name, placeholderNames())
			return m
		}
		if p.Optional && emptyOptional {
			return ""
		}
		return p.Value
	})
}

func placeholderNames() string {
	m := map[string]bool{}
	for k := range Placeholders {
		m[k] = true
	}
	return keysOf(m)
}

// UsedPlaceholders lists the environment variables a provisioning file
// names as $__env{NAME} or ${NAME} outside comments (a bare $name in an
// alerting file is more likely a template's $labels).
func UsedPlaceholders(raw []byte) []string {
	seen := map[string]bool{}
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		for _, m := range envRef.FindAllStringSubmatch(line, -1) {
			if name := m[1] + m[2]; name != "" {
				seen[name] = true
			}
		}
	}
	var out []string
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// checkNoEnv reports what Grafana's alerting file provisioning would
// expand as an environment variable in a field it interpolates (all but
// annotations and query models): a $ that is not $$ and not a documented
// placeholder.
func (ps *problems) checkNoEnv(where, s string) {
	for _, m := range envRef.FindAllStringSubmatch(s, -1) {
		if m[0] == "$$" {
			continue
		}
		if _, ok := Placeholders[m[1]+m[2]+m[3]]; !ok {
			ps.add(where, "%s: Grafana expands %s here as an environment variable (write $$ for a literal $)", quote(s), m[0])
		}
	}
}

func expandEnvAll(ps *problems, where string, v any, emptyOptional bool) any {
	switch x := v.(type) {
	case string:
		return ps.expandEnv(where, x, emptyOptional)
	case []any:
		out := make([]any, len(x))
		for i, el := range x {
			out[i] = expandEnvAll(ps, where, el, emptyOptional)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, el := range x {
			out[k] = expandEnvAll(ps, join(where, k), el, emptyOptional)
		}
		return out
	}
	return v
}

// ---- datasources ----

type datasourcesFile struct {
	APIVersion        int                `yaml:"apiVersion"`
	Datasources       []provDatasource   `yaml:"datasources"`
	DeleteDatasources []deleteDatasource `yaml:"deleteDatasources"`
	Prune             bool               `yaml:"prune"`
}

type deleteDatasource struct {
	Name  string `yaml:"name"`
	UID   string `yaml:"uid"`
	OrgID int64  `yaml:"orgId"`
}

type provDatasource struct {
	Name            string            `yaml:"name"`
	Type            string            `yaml:"type"`
	UID             string            `yaml:"uid"`
	Access          string            `yaml:"access"`
	OrgID           int64             `yaml:"orgId"`
	URL             string            `yaml:"url"`
	User            string            `yaml:"user"`
	Database        string            `yaml:"database"`
	BasicAuth       bool              `yaml:"basicAuth"`
	BasicAuthUser   string            `yaml:"basicAuthUser"`
	WithCredentials bool              `yaml:"withCredentials"`
	IsDefault       bool              `yaml:"isDefault"`
	JSONData        map[string]any    `yaml:"jsonData"`
	SecureJSONData  map[string]string `yaml:"secureJsonData"`
	Version         int               `yaml:"version"`
	Editable        bool              `yaml:"editable"`
}

var uidPattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,40}$`)

// ProvisionedUIDs returns the uid of each datasource type a datasources
// provisioning file provisions.
// It reads the file loosely: CheckDatasources is the strict check.
func ProvisionedUIDs(raw []byte) (map[string]string, error) {
	var f struct {
		Datasources []struct {
			Type string `yaml:"type"`
			UID  string `yaml:"uid"`
		} `yaml:"datasources"`
	}
	if err := yaml.Unmarshal(raw, &f); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, ds := range f.Datasources {
		if prev, ok := out[ds.Type]; ok {
			return nil, fmt.Errorf("two datasources of type %s (%s, %s): the dashboards' default would be ambiguous", ds.Type, prev, ds.UID)
		}
		out[ds.Type] = ds.UID
	}
	return out, nil
}

// secureKeys are the secure fields the plugin reads (models.LoadSettings).
var secureKeys = func() map[string]bool {
	m := map[string]bool{}
	for _, k := range models.SecureFields {
		m[k] = true
	}
	return m
}()

// prometheusJSONData are the jsonData keys of Grafana's Prometheus
// datasource (its configuration page and provisioning documentation).
var prometheusJSONData = map[string]bool{
	"httpMethod": true, "timeInterval": true, "queryTimeout": true, "manageAlerts": true,
	"prometheusType": true, "prometheusVersion": true, "cacheLevel": true, "incrementalQuerying": true,
	"incrementalQueryOverlapWindow": true, "disableRecordingRules": true, "customQueryParameters": true,
	"exemplarTraceIdDestinations": true, "defaultEditor": true, "disableMetricsLookup": true,
	"tlsAuth": true, "tlsAuthWithCACert": true, "tlsSkipVerify": true, "serverName": true,
	"oauthPassThru": true, "keepCookies": true, "timeout": true, "seriesEndpoint": true,
}

var httpHeaderName = regexp.MustCompile(`^httpHeaderName[0-9]+$`)

// CheckDatasources checks a datasources provisioning file.
func CheckDatasources(file string, raw []byte) []error {
	ps := &problems{file: file}
	var f datasourcesFile
	if err := decodeYAML(raw, &f); err != nil {
		ps.addYAML(err)
		return ps.list
	}
	if f.APIVersion != 1 {
		ps.add("apiVersion", "is %d; Grafana's datasource provisioning is version 1", f.APIVersion)
	}
	names, uids := map[string]bool{}, map[string]bool{}
	defaults := 0
	for i, ds := range f.Datasources {
		where := fmt.Sprintf("datasources[%d] %q", i, ds.Name)
		switch {
		case ds.Name == "":
			ps.add(where, "no name")
		case names[ds.Name]:
			ps.add(where, "name used twice")
		}
		names[ds.Name] = true
		switch {
		case !uidPattern.MatchString(ds.UID):
			ps.add(join(where, "uid"), "%q: a fixed uid of 1–40 letters, digits, - and _ is needed (dashboards and rules name it)", ds.UID)
		case uids[ds.UID]:
			ps.add(join(where, "uid"), "%q used twice", ds.UID)
		}
		uids[ds.UID] = true
		if ds.IsDefault {
			defaults++
		}
		if ds.Access != "" && ds.Access != "proxy" {
			ps.add(join(where, "access"), "%q: must be proxy (server access, the default): a backend plugin has no browser access", ds.Access)
		}
		if ds.OrgID < 0 {
			ps.add(join(where, "orgId"), "%d", ds.OrgID)
		}
		for _, empty := range []bool{false, true} {
			switch ds.Type {
			case JobsightType:
				checkJobsightDatasource(ps, where, ds, empty)
			case PrometheusType:
				checkPrometheusDatasource(ps, where, ds, empty)
				if ds.OrgID <= 1 && !empty {
					ps.add(join(where, "orgId"), "a raw Prometheus datasource in the organisation of the Jobsight dashboards (orgId %d): Grafana OSS has no per-datasource permissions, so every Viewer could read every user's jobsight_job_* series through it; the dashboards read the cluster series through the Jobsight datasource (query type clusterSeries), and a raw one belongs in an organisation without Viewers (provisioning/README.md)", max(ds.OrgID, 1))
				}
			default:
				ps.add(join(where, "type"), "%q: this checker has no schema for that datasource type", ds.Type)
			}
		}
	}
	if defaults > 1 {
		ps.add("datasources", "%d datasources are isDefault; at most one may be", defaults)
	}
	for i, d := range f.DeleteDatasources {
		if d.Name == "" && d.UID == "" {
			ps.add(fmt.Sprintf("deleteDatasources[%d]", i), "names no datasource (name or uid)")
		}
	}
	return dedupe(ps.list)
}

func checkJobsightDatasource(ps *problems, where string, ds provDatasource, emptyOptional bool) {
	pass := "placeholders set"
	if emptyOptional {
		pass = "optional placeholders empty"
	}
	if ds.URL != "" || ds.User != "" || ds.Database != "" || ds.BasicAuth || ds.BasicAuthUser != "" || ds.WithCredentials {
		ps.add(where, "url, user, database, basicAuth, basicAuthUser and withCredentials are not read by the Jobsight plugin: its backends are set in jsonData")
	}
	jd := expandEnvAll(ps, join(where, "jsonData"), map[string]any(ds.JSONData), emptyOptional)
	raw, err := json.Marshal(jd)
	if err != nil {
		ps.add(join(where, "jsonData"), "cannot be JSON: %v", err)
		return
	}
	var exact models.Settings
	if err := decodeExact(raw, &exact); err != nil {
		for _, e := range unjoin(err) {
			ps.add(join(where, "jsonData"), "%v (the plugin's settings: %s)", e, keysOf(jsonKeys(typeOf(exact))))
		}
		return
	}
	s, err := models.ParseJSONData(raw)
	if err != nil {
		ps.add(join(where, "jsonData"), "the plugin refuses it: %v", err)
		return
	}
	for k := range ds.SecureJSONData {
		if !secureKeys[k] {
			ps.add(join(where, "secureJsonData."+k), "is not a secure field the plugin reads (%s)", keysOf(secureKeys))
		}
	}
	sec := map[string]string{}
	for k, v := range ds.SecureJSONData {
		sec[k] = ps.expandEnv(join(where, "secureJsonData."+k), v, emptyOptional)
	}
	s.Secrets = models.SecretsFrom(sec)
	for _, e := range unjoin(s.Validate()) {
		ps.add(join(where, "jsonData"), "with the %s, the plugin refuses it: %v", pass, e)
	}
}

func checkPrometheusDatasource(ps *problems, where string, ds provDatasource, emptyOptional bool) {
	u := ps.expandEnv(join(where, "url"), ds.URL, emptyOptional)
	if pu, err := url.Parse(u); err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
		ps.add(join(where, "url"), "%q is not an http(s) URL", u)
	}
	keys := make([]string, 0, len(ds.JSONData))
	for k := range ds.JSONData {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := ds.JSONData[k]
		if !prometheusJSONData[k] && !httpHeaderName.MatchString(k) {
			ps.add(join(where, "jsonData."+k), "is not a setting of Grafana's Prometheus datasource (%s)", keysOf(prometheusJSONData))
			continue
		}
		s, _ := v.(string)
		switch k {
		case "httpMethod":
			if s != "GET" && s != "POST" {
				ps.add(join(where, "jsonData."+k), "%v: GET or POST", v)
			}
		case "timeInterval", "queryTimeout":
			if _, err := model.ParseDuration(s); err != nil {
				ps.add(join(where, "jsonData."+k), "%v is not a duration: %v", v, err)
			}
		}
	}
	for k := range ds.SecureJSONData {
		if k != "basicAuthPassword" && k != "tlsCACert" && k != "tlsClientCert" && k != "tlsClientKey" && !strings.HasPrefix(k, "httpHeaderValue") {
			ps.add(join(where, "secureJsonData."+k), "is not a secure field of Grafana's Prometheus datasource")
		}
	}
}

func dedupe(errs []error) []error {
	seen := map[string]bool{}
	var out []error
	for _, e := range errs {
		if !seen[e.Error()] {
			seen[e.Error()] = true
			out = append(out, e)
		}
	}
	return out
}

// ---- dashboard providers ----

type dashboardsFile struct {
	APIVersion int                 `yaml:"apiVersion"`
	Providers  []dashboardProvider `yaml:"providers"`
}

type dashboardProvider struct {
	Name                  string `yaml:"name"`
	OrgID                 int64  `yaml:"orgId"`
	Folder                string `yaml:"folder"`
	FolderUID             string `yaml:"folderUid"`
	Type                  string `yaml:"type"`
	DisableDeletion       bool   `yaml:"disableDeletion"`
	UpdateIntervalSeconds int64  `yaml:"updateIntervalSeconds"`
	AllowUIUpdates        bool   `yaml:"allowUiUpdates"`
	Options               struct {
		Path                      string `yaml:"path"`
		FoldersFromFilesStructure bool   `yaml:"foldersFromFilesStructure"`
	} `yaml:"options"`
}

// CheckDashboardProviders checks a dashboards provisioning file.
func CheckDashboardProviders(file string, raw []byte) []error {
	ps := &problems{file: file}
	var f dashboardsFile
	if err := decodeYAML(raw, &f); err != nil {
		ps.addYAML(err)
		return ps.list
	}
	if f.APIVersion != 1 {
		ps.add("apiVersion", "is %d; Grafana's dashboard provisioning is version 1", f.APIVersion)
	}
	if len(f.Providers) == 0 {
		ps.add("providers", "none")
	}
	names := map[string]bool{}
	for i, p := range f.Providers {
		where := fmt.Sprintf("providers[%d] %q", i, p.Name)
		if p.Name == "" || names[p.Name] {
			ps.add(where, "needs a unique name")
		}
		names[p.Name] = true
		if p.Type != "file" {
			ps.add(join(where, "type"), "%q: Grafana's dashboard provider type is file", p.Type)
		}
		if p.FolderUID != "" && !uidPattern.MatchString(p.FolderUID) {
			ps.add(join(where, "folderUid"), "%q is not a uid (1–40 letters, digits, - and _)", p.FolderUID)
		}
		if p.Options.FoldersFromFilesStructure && (p.Folder != "" || p.FolderUID != "") {
			ps.add(where, "folder and folderUid must be empty with options.foldersFromFilesStructure")
		}
		if p.UpdateIntervalSeconds < 0 {
			ps.add(join(where, "updateIntervalSeconds"), "is negative")
		}
		if path := ps.expandEnv(join(where, "options.path"), p.Options.Path, false); !strings.HasPrefix(path, "/") {
			ps.add(join(where, "options.path"), "%q: an absolute path to the dashboards is needed", p.Options.Path)
		}
	}
	return ps.list
}

// ---- alerting ----

type alertingFile struct {
	APIVersion          int             `yaml:"apiVersion"`
	Groups              []ruleGroup     `yaml:"groups"`
	DeleteRules         []orgUID        `yaml:"deleteRules"`
	ContactPoints       []contactPoint  `yaml:"contactPoints"`
	DeleteContactPoints []orgUID        `yaml:"deleteContactPoints"`
	Policies            []policy        `yaml:"policies"`
	ResetPolicies       []int64         `yaml:"resetPolicies"`
	Templates           []alertTemplate `yaml:"templates"`
	DeleteTemplates     []orgName       `yaml:"deleteTemplates"`
	MuteTimes           []muteTime      `yaml:"muteTimes"`
	DeleteMuteTimes     []orgName       `yaml:"deleteMuteTimes"`
}

type orgUID struct {
	OrgID int64  `yaml:"orgId"`
	UID   string `yaml:"uid"`
}

type orgName struct {
	OrgID int64  `yaml:"orgId"`
	Name  string `yaml:"name"`
}

type ruleGroup struct {
	OrgID    int64  `yaml:"orgId"`
	Name     string `yaml:"name"`
	Folder   string `yaml:"folder"`
	Interval string `yaml:"interval"`
	Rules    []rule `yaml:"rules"`
}

type rule struct {
	UID                  string                `yaml:"uid"`
	Title                string                `yaml:"title"`
	Condition            string                `yaml:"condition"`
	Data                 []ruleQuery           `yaml:"data"`
	DashboardUID         string                `yaml:"dashboardUid"`
	PanelID              int64                 `yaml:"panelId"`
	NoDataState          string                `yaml:"noDataState"`
	ExecErrState         string                `yaml:"execErrState"`
	For                  string                `yaml:"for"`
	Annotations          map[string]string     `yaml:"annotations"`
	Labels               map[string]string     `yaml:"labels"`
	IsPaused             bool                  `yaml:"isPaused"`
	NotificationSettings *notificationSettings `yaml:"notification_settings"`
}

type ruleQuery struct {
	RefID             string `yaml:"refId"`
	QueryType         string `yaml:"queryType"`
	RelativeTimeRange struct {
		From int64 `yaml:"from"`
		To   int64 `yaml:"to"`
	} `yaml:"relativeTimeRange"`
	DatasourceUID string         `yaml:"datasourceUid"`
	Model         map[string]any `yaml:"model"`
}

type notificationSettings struct {
	Receiver          string   `yaml:"receiver"`
	GroupBy           []string `yaml:"group_by"`
	GroupWait         string   `yaml:"group_wait"`
	GroupInterval     string   `yaml:"group_interval"`
	RepeatInterval    string   `yaml:"repeat_interval"`
	MuteTimeIntervals []string `yaml:"mute_time_intervals"`
}

type contactPoint struct {
	OrgID     int64      `yaml:"orgId"`
	Name      string     `yaml:"name"`
	Receivers []receiver `yaml:"receivers"`
}

type receiver struct {
	UID                   string         `yaml:"uid"`
	Type                  string         `yaml:"type"`
	Settings              map[string]any `yaml:"settings"`
	DisableResolveMessage bool           `yaml:"disableResolveMessage"`
}

type route struct {
	Receiver            string     `yaml:"receiver"`
	GroupBy             []string   `yaml:"group_by"`
	Matchers            []string   `yaml:"matchers"`
	ObjectMatchers      [][]string `yaml:"object_matchers"`
	MuteTimeIntervals   []string   `yaml:"mute_time_intervals"`
	ActiveTimeIntervals []string   `yaml:"active_time_intervals"`
	Continue            bool       `yaml:"continue"`
	GroupWait           string     `yaml:"group_wait"`
	GroupInterval       string     `yaml:"group_interval"`
	RepeatInterval      string     `yaml:"repeat_interval"`
	Routes              []route    `yaml:"routes"`
}

type policy struct {
	OrgID int64 `yaml:"orgId"`
	route `yaml:",inline"`
}

type alertTemplate struct {
	OrgID    int64  `yaml:"orgId"`
	Name     string `yaml:"name"`
	Template string `yaml:"template"`
}

type muteTime struct {
	OrgID         int64  `yaml:"orgId"`
	Name          string `yaml:"name"`
	TimeIntervals []struct {
		Times []struct {
			StartTime string `yaml:"start_time"`
			EndTime   string `yaml:"end_time"`
		} `yaml:"times"`
		Weekdays    []string `yaml:"weekdays"`
		DaysOfMonth []string `yaml:"days_of_month"`
		Months      []string `yaml:"months"`
		Years       []string `yaml:"years"`
		Location    string   `yaml:"location"`
	} `yaml:"time_intervals"`
}

// ContactPointNames lists the contact points an alerting provisioning
// file defines (for the routing checks of the others).
func ContactPointNames(raw []byte) []string {
	var f alertingFile
	if decodeYAML(raw, &f) != nil {
		return nil
	}
	var out []string
	for _, cp := range f.ContactPoints {
		out = append(out, cp.Name)
	}
	return out
}

// States Grafana 10 to 13 all accept (KeepLast came with Grafana 11.5).
var (
	noDataStates  = map[string]bool{"Alerting": true, "NoData": true, "OK": true}
	execErrStates = map[string]bool{"Alerting": true, "Error": true, "OK": true}
)

// Server-side expression vocabularies that Grafana 10 to 13 all evaluate
// (the SDK's expression schema has newer ones: median, eq, ne, ...).
var (
	reducers        = map[string]bool{"last": true, "mean": true, "min": true, "max": true, "sum": true, "count": true}
	reduceModes     = map[string]bool{"": true, "dropNN": true, "replaceNN": true}
	thresholdEvals  = map[string]int{"gt": 1, "lt": 1, "within_range": 2, "outside_range": 2}
	classicEvals    = map[string]int{"gt": 1, "lt": 1, "within_range": 2, "outside_range": 2, "no_value": 0}
	classicReducers = map[string]bool{"avg": true, "min": true, "max": true, "sum": true, "count": true, "last": true,
		"median": true, "diff": true, "diff_abs": true, "percent_diff": true, "percent_diff_abs": true, "count_non_null": true}
	upsamplers = map[string]bool{"pad": true, "backfilling": true, "fillna": true}
)

const exprUID = "__expr__"

var labelName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// CheckAlerting checks an alerting provisioning file: rule groups, contact
// points, notification policies, templates and mute timings. env.UIDs are
// the provisioned datasources; env.ContactPoints, when not nil, are the
// contact points the routing may name; env.DashboardUIDs the dashboards
// rules may link.
func CheckAlerting(file string, raw []byte, env Env) []error {
	register()
	ps := &problems{file: file}
	var f alertingFile
	if err := decodeYAML(raw, &f); err != nil {
		ps.addYAML(err)
		return ps.list
	}
	if f.APIVersion != 1 {
		ps.add("apiVersion", "is %d; Grafana's alerting provisioning is version 1", f.APIVersion)
	}
	typeOfUID := map[string]string{}
	for t, uid := range env.UIDs {
		typeOfUID[uid] = t
	}
	ruleUIDs := map[string]bool{}
	for gi, g := range f.Groups {
		gw := fmt.Sprintf("group %q", g.Name)
		if g.Name == "" {
			gw = fmt.Sprintf("groups[%d]", gi)
			ps.add(gw, "no name")
		}
		if g.OrgID < 1 {
			ps.add(join(gw, "orgId"), "%d: organisations are numbered from 1", g.OrgID)
		}
		if g.Folder == "" {
			ps.add(join(gw, "folder"), "missing: a rule group is stored in a folder")
		}
		if d, err := model.ParseDuration(g.Interval); err != nil || d <= 0 || time.Duration(d)%(10*time.Second) != 0 {
			ps.add(join(gw, "interval"), "%q: a duration that is a multiple of Grafana's 10 s evaluation base", g.Interval)
		}
		if len(g.Rules) == 0 {
			ps.add(gw, "no rules")
		}
		titles := map[string]bool{}
		for ri, r := range g.Rules {
			rw := join(gw, fmt.Sprintf("rule %q", r.UID))
			if r.UID == "" {
				rw = join(gw, fmt.Sprintf("rules[%d]", ri))
			}
			switch {
			case !uidPattern.MatchString(r.UID):
				ps.add(join(rw, "uid"), "%q: a fixed uid of 1–40 letters, digits, - and _ is needed", r.UID)
			case ruleUIDs[r.UID]:
				ps.add(join(rw, "uid"), "used twice")
			}
			ruleUIDs[r.UID] = true
			ps.checkNoEnv(join(rw, "title"), r.Title)
			if r.Title == "" || titles[r.Title] {
				ps.add(join(rw, "title"), "%q: a rule needs a title unique in its group", r.Title)
			}
			titles[r.Title] = true
			checkRule(ps, rw, r, env, typeOfUID)
		}
	}
	cps := map[string]bool{}
	for ci, cp := range f.ContactPoints {
		cw := fmt.Sprintf("contact point %q", cp.Name)
		if cp.Name == "" || cps[cp.Name] {
			ps.add(fmt.Sprintf("contactPoints[%d]", ci), "needs a unique name")
		}
		cps[cp.Name] = true
		if cp.OrgID < 1 {
			ps.add(join(cw, "orgId"), "%d: organisations are numbered from 1", cp.OrgID)
		}
		if len(cp.Receivers) == 0 {
			ps.add(cw, "no receivers")
		}
		for i, rc := range cp.Receivers {
			checkReceiver(ps, join(cw, fmt.Sprintf("receivers[%d]", i)), rc)
		}
	}
	var contacts map[string]bool
	if env.ContactPoints != nil {
		contacts = map[string]bool{}
		for k := range env.ContactPoints {
			contacts[k] = true
		}
		for k := range cps {
			contacts[k] = true
		}
	}
	for i, p := range f.Policies {
		pw := fmt.Sprintf("policies[%d]", i)
		if p.OrgID < 1 {
			ps.add(join(pw, "orgId"), "%d: organisations are numbered from 1", p.OrgID)
		}
		if p.Receiver == "" {
			ps.add(join(pw, "receiver"), "the root policy needs a receiver")
		}
		checkRoute(ps, pw, p.route, contacts)
	}
	for i, t := range f.Templates {
		if t.Name == "" || t.Template == "" {
			ps.add(fmt.Sprintf("templates[%d]", i), "needs a name and a template")
		}
	}
	for i, m := range f.MuteTimes {
		if m.Name == "" {
			ps.add(fmt.Sprintf("muteTimes[%d]", i), "needs a name")
		}
	}
	return ps.list
}

func checkRule(ps *problems, rw string, r rule, env Env, typeOfUID map[string]string) {
	refIDs := map[string]bool{}
	for _, q := range r.Data {
		if refIDs[q.RefID] {
			ps.add(join(rw, "data"), "refId %q used twice", q.RefID)
		}
		refIDs[q.RefID] = true
	}
	if len(r.Data) == 0 {
		ps.add(join(rw, "data"), "no queries")
	}
	if !refIDs[r.Condition] {
		ps.add(join(rw, "condition"), "%q is not a refId of the rule's data (%s)", r.Condition, keysOf(refIDs))
	}
	for i, q := range r.Data {
		qw := join(rw, fmt.Sprintf("data[%d] (refId %s)", i, q.RefID))
		if q.RefID == "" {
			ps.add(qw, "no refId")
		}
		modelJSON, err := json.Marshal(q.Model)
		if err != nil {
			ps.add(join(qw, "model"), "cannot be JSON: %v", err)
			continue
		}
		if ref, ok := q.Model["refId"]; ok && ref != q.RefID {
			ps.add(join(qw, "model.refId"), "%v differs from the query's refId %q", ref, q.RefID)
		}
		if q.DatasourceUID == exprUID {
			checkExpression(ps, qw, q, modelJSON, refIDs)
			continue
		}
		typ, ok := typeOfUID[q.DatasourceUID]
		if !ok {
			ps.add(join(qw, "datasourceUid"), "%q is not a provisioned datasource uid (%s) nor %s", q.DatasourceUID, provisionedUIDList(env), exprUID)
			continue
		}
		if q.RelativeTimeRange.From <= q.RelativeTimeRange.To || q.RelativeTimeRange.To < 0 {
			ps.add(join(qw, "relativeTimeRange"), "from %d to %d (seconds before now): from must be further back than to", q.RelativeTimeRange.From, q.RelativeTimeRange.To)
		}
		if ds, ok := q.Model["datasource"].(map[string]any); ok {
			if ds["uid"] != q.DatasourceUID || ds["type"] != typ {
				ps.add(join(qw, "model.datasource"), "%v differs from datasourceUid %q (type %s)", ds, q.DatasourceUID, typ)
			}
		}
		ps.checkNoVariables(join(qw, "model"), q.Model)
		switch typ {
		case JobsightType:
			m, err := DecodeJobsightAlertModel(modelJSON)
			if err != nil {
				ps.add(join(qw, "model"), "%v", err)
				continue
			}
			if q.QueryType != "" && q.QueryType != string(m.QueryType) {
				ps.add(join(qw, "queryType"), "%q differs from the model's queryType %q", q.QueryType, m.QueryType)
			}
			query := m.Query
			for _, e := range unjoin(query.Validate()) {
				ps.add(join(qw, "model"), "the backend refuses the query: %v", e)
			}
		case PrometheusType:
			if _, err := cog.StrictUnmarshalDataquery(modelJSON, PrometheusType); err != nil {
				ps.addBuild(join(qw, "model"), err, nil)
			}
		default:
			ps.add(join(qw, "datasourceUid"), "datasource type %s: this checker has no query schema for it", typ)
		}
	}
	if r.NoDataState != "" && !noDataStates[r.NoDataState] {
		ps.add(join(rw, "noDataState"), "%q is not one of %s", r.NoDataState, keysOf(noDataStates))
	}
	if r.ExecErrState != "" && !execErrStates[r.ExecErrState] {
		ps.add(join(rw, "execErrState"), "%q is not one of %s", r.ExecErrState, keysOf(execErrStates))
	}
	if r.For != "" {
		if _, err := model.ParseDuration(r.For); err != nil {
			ps.add(join(rw, "for"), "%q is not a duration: %v", r.For, err)
		}
	}
	for k, v := range r.Labels {
		if !labelName.MatchString(k) {
			ps.add(join(rw, "labels."+k), "is not a valid label name")
		}
		ps.checkNoEnv(join(rw, "labels."+k), v)
		checkAlertTemplate(ps, join(rw, "labels."+k), strings.ReplaceAll(v, "$$", "$"))
	}
	for k, v := range r.Annotations {
		checkAlertTemplate(ps, join(rw, "annotations."+k), v)
		if m := dashboardLink.FindStringSubmatch(v); m != nil && env.DashboardUIDs != nil && !env.DashboardUIDs[m[1]] {
			ps.add(join(rw, "annotations."+k), "links to dashboard uid %q, which no shipped dashboard has", m[1])
		}
	}
	if r.DashboardUID != "" && env.DashboardUIDs != nil && !env.DashboardUIDs[r.DashboardUID] {
		ps.add(join(rw, "dashboardUid"), "%q is not a shipped dashboard", r.DashboardUID)
	}
	if r.PanelID != 0 && r.DashboardUID == "" {
		ps.add(join(rw, "panelId"), "set without dashboardUid")
	}
	if ns := r.NotificationSettings; ns != nil {
		if ns.Receiver == "" {
			ps.add(join(rw, "notification_settings.receiver"), "missing")
		} else if env.ContactPoints != nil && !env.ContactPoints[ns.Receiver] {
			ps.add(join(rw, "notification_settings.receiver"), "%q is not a provisioned contact point", ns.Receiver)
		}
		for k, d := range map[string]string{"group_wait": ns.GroupWait, "group_interval": ns.GroupInterval, "repeat_interval": ns.RepeatInterval} {
			if d != "" {
				if _, err := model.ParseDuration(d); err != nil {
					ps.add(join(rw, "notification_settings."+k), "%q is not a duration", d)
				}
			}
		}
	}
}

func provisionedUIDList(env Env) string {
	m := map[string]bool{}
	for _, uid := range env.UIDs {
		m[uid] = true
	}
	return keysOf(m)
}

// checkNoVariables reports template variable references in an alert
// query: the alert engine has no dashboard to expand them from.
func (ps *problems) checkNoVariables(where string, m map[string]any) {
	walkStrings("", m, func(path, s string) {
		for _, u := range findVarRefs(s) {
			ps.add(join(where, path), "%s: alert rules have no template variables", u.text)
		}
	})
}

var mathRef = regexp.MustCompile(`\$\{?(\w+)\}?`)

// checkExpression decodes a server-side expression strictly with the SDK's
// expression schema of its type and checks what it refers to.
func checkExpression(ps *problems, qw string, q ruleQuery, raw []byte, refIDs map[string]bool) {
	mw := join(qw, "model")
	var head struct {
		Type       string          `json:"type"`
		Expression string          `json:"expression"`
		Datasource json.RawMessage `json:"datasource"`
	}
	_ = json.Unmarshal(raw, &head)
	if len(head.Datasource) > 0 {
		var ds DSRef
		if err := decodeExact(head.Datasource, &ds); err != nil || ds.Type != exprUID || ds.UID != exprUID {
			ps.add(join(mw, "datasource"), "%s is not {type: %s, uid: %s}", head.Datasource, exprUID, exprUID)
		}
	}
	refersTo := func(field, ref string) {
		switch {
		case ref == q.RefID:
			ps.add(join(mw, field), "%q refers to the expression itself", ref)
		case !refIDs[ref]:
			ps.add(join(mw, field), "%q is not a refId of the rule (%s)", ref, keysOf(refIDs))
		}
	}
	e, err := decodeExpr(head.Type, raw)
	if err != nil {
		ps.addBuild(mw, err, nil)
		return
	}
	switch x := e.(type) {
	case *exprMath:
		refs := mathRef.FindAllStringSubmatch(x.Expression, -1)
		if len(refs) == 0 {
			ps.add(join(mw, "expression"), "%q refers to no query ($A)", x.Expression)
		}
		for _, m := range refs {
			refersTo("expression", m[1])
		}
	case *exprReduce:
		refersTo("expression", x.Expression)
		if !reducers[string(x.Reducer)] {
			ps.add(join(mw, "reducer"), "%q is not one of %s", x.Reducer, keysOf(reducers))
		}
		if x.Settings != nil {
			if !reduceModes[string(x.Settings.Mode)] {
				ps.add(join(mw, "settings.mode"), "%q is not one of dropNN, replaceNN (or empty: strict)", x.Settings.Mode)
			}
			if x.Settings.Mode == "replaceNN" && x.Settings.ReplaceWithValue == nil {
				ps.add(join(mw, "settings.replaceWithValue"), "missing for mode replaceNN")
			}
		}
	case *exprResample:
		refersTo("expression", x.Expression)
		if _, err := model.ParseDuration(x.Window); err != nil {
			ps.add(join(mw, "window"), "%q is not a duration", x.Window)
		}
		if !reducers[string(x.Downsampler)] {
			ps.add(join(mw, "downsampler"), "%q is not one of %s", x.Downsampler, keysOf(reducers))
		}
		if !upsamplers[string(x.Upsampler)] {
			ps.add(join(mw, "upsampler"), "%q is not one of %s", x.Upsampler, keysOf(upsamplers))
		}
	case *exprThreshold:
		refersTo("expression", x.Expression)
		if len(x.Conditions) != 1 {
			ps.add(join(mw, "conditions"), "a threshold has one condition, not %d", len(x.Conditions))
		}
		for i, c := range x.Conditions {
			n, ok := thresholdEvals[string(c.Evaluator.Type)]
			cw := join(mw, fmt.Sprintf("conditions[%d].evaluator", i))
			switch {
			case !ok:
				ps.add(join(cw, "type"), "%q is not one of gt, lt, within_range, outside_range", c.Evaluator.Type)
			case len(c.Evaluator.Params) != n:
				ps.add(join(cw, "params"), "%v: %s takes %d", c.Evaluator.Params, c.Evaluator.Type, n)
			}
		}
	case *exprClassic:
		if len(x.Conditions) == 0 {
			ps.add(join(mw, "conditions"), "none")
		}
		for i, c := range x.Conditions {
			cw := join(mw, fmt.Sprintf("conditions[%d]", i))
			if len(c.Query.Params) != 1 {
				ps.add(join(cw, "query.params"), "%v: names one refId", c.Query.Params)
			} else {
				refersTo(fmt.Sprintf("conditions[%d].query.params[0]", i), c.Query.Params[0])
			}
			if n, ok := classicEvals[c.Evaluator.Type]; !ok {
				ps.add(join(cw, "evaluator.type"), "%q is unknown", c.Evaluator.Type)
			} else if len(c.Evaluator.Params) < n {
				ps.add(join(cw, "evaluator.params"), "%v: %s takes %d", c.Evaluator.Params, c.Evaluator.Type, n)
			}
			if !classicReducers[c.Reducer.Type] {
				ps.add(join(cw, "reducer.type"), "%q is unknown", c.Reducer.Type)
			}
		}
	}
}

func checkRoute(ps *problems, where string, r route, contacts map[string]bool) {
	if r.Receiver != "" && contacts != nil && !contacts[r.Receiver] {
		ps.add(join(where, "receiver"), "%q is not a provisioned contact point", r.Receiver)
	}
	for i, m := range r.ObjectMatchers {
		if len(m) != 3 || (m[1] != "=" && m[1] != "!=" && m[1] != "=~" && m[1] != "!~") {
			ps.add(join(where, fmt.Sprintf("object_matchers[%d]", i)), "%v is not [label, =|!=|=~|!~, value]", m)
		}
	}
	for k, d := range map[string]string{"group_wait": r.GroupWait, "group_interval": r.GroupInterval, "repeat_interval": r.RepeatInterval} {
		if d != "" {
			if _, err := model.ParseDuration(d); err != nil {
				ps.add(join(where, k), "%q is not a duration", d)
			}
		}
	}
	for i, sub := range r.Routes {
		checkRoute(ps, join(where, fmt.Sprintf("routes[%d]", i)), sub, contacts)
	}
}

// receiverTypes are the contact point integrations of Grafana 11–13.
var receiverTypes = map[string]bool{
	"alertmanager": true, "dingding": true, "discord": true, "email": true, "googlechat": true,
	"kafka": true, "line": true, "opsgenie": true, "pagerduty": true, "pushover": true,
	"sensugo": true, "slack": true, "teams": true, "telegram": true, "threema": true,
	"victorops": true, "webhook": true, "wecom": true, "webex": true, "sns": true, "oncall": true,
}

// emailSettings are the settings of Grafana's email integration.
type emailSettings struct {
	Addresses   string `json:"addresses"`
	SingleEmail *bool  `json:"singleEmail,omitempty"`
	Message     string `json:"message,omitempty"`
	Subject     string `json:"subject,omitempty"`
}

func checkReceiver(ps *problems, where string, rc receiver) {
	if !uidPattern.MatchString(rc.UID) {
		ps.add(join(where, "uid"), "%q: a fixed uid of 1–40 letters, digits, - and _ is needed", rc.UID)
	}
	if !receiverTypes[rc.Type] {
		ps.add(join(where, "type"), "%q is not a Grafana contact point integration", rc.Type)
		return
	}
	walkStrings("", rc.Settings, func(path, s string) { ps.checkNoEnv(join(where, "settings."+path), s) })
	if rc.Type != "email" {
		return // settings of the other integrations are not checked here
	}
	raw, _ := json.Marshal(rc.Settings)
	var s emailSettings
	if err := decodeExact(raw, &s); err != nil {
		for _, e := range unjoin(err) {
			ps.add(join(where, "settings"), "%v (email settings: %s)", e, keysOf(jsonKeys(typeOf(s))))
		}
		return
	}
	if strings.TrimSpace(s.Addresses) == "" {
		ps.add(join(where, "settings.addresses"), "missing")
	}
	for _, a := range strings.FieldsFunc(s.Addresses, func(r rune) bool { return r == ';' || r == ',' || r == '\n' }) {
		if a = strings.TrimSpace(a); a != "" && !strings.Contains(a, "@") {
			ps.add(join(where, "settings.addresses"), "%q is not an address", a)
		}
	}
}
