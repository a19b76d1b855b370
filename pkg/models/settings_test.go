package models_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/jobsight/jobsight/pkg/models"
)

const minimal = `{"elasticsearchUrl":"http://es:9200","prometheusUrl":"http://prom:9090"}`

func load(jsonData string, secure map[string]string) (*models.Settings, error) {
	return models.LoadSettings(backend.DataSourceInstanceSettings{JSONData: []byte(jsonData), DecryptedSecureJSONData: secure})
}

func TestLoadSettingsAppliesDefaults(t *testing.T) {
	s, err := load(minimal, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.ElasticsearchJobIndex != "jobsight-jobs" || s.ElasticsearchNodeIndex != "jobsight-nodes" {
		t.Errorf("indices %q %q, want the defaults", s.ElasticsearchJobIndex, s.ElasticsearchNodeIndex)
	}
	if s.TimeoutSeconds != 30 || s.Timeout().Seconds() != 30 {
		t.Errorf("timeout %d, want 30", s.TimeoutSeconds)
	}
}

func TestLoadSettingsReadsSecretsOnlyFromSecureData(t *testing.T) {
	s, err := load(`{"elasticsearchUrl":"http://es:9200","elasticsearchUser":"u","prometheusUrl":"http://prom:9090","prometheusUser":"r"}`,
		map[string]string{"elasticsearchPassword": "espw", "prometheusPassword": "prompw"})
	if err != nil {
		t.Fatal(err)
	}
	want := models.Secrets{ElasticsearchPassword: "espw", PrometheusPassword: "prompw"}
	if s.Secrets != want {
		t.Errorf("secrets %+v, want %+v", s.Secrets, want)
	}
	// A secret placed in jsonData (stored in clear text by Grafana) is refused.
	_, err = load(`{"elasticsearchUrl":"http://es:9200","prometheusUrl":"http://prom:9090","prometheusBearerToken":"t"}`, nil)
	var fe *models.FieldError
	if !errors.As(err, &fe) || fe.Field != "prometheusBearerToken" {
		t.Errorf("got %v, want a FieldError for prometheusBearerToken", err)
	}
}

func TestLoadSettingsErrorsNameTheField(t *testing.T) {
	cases := []struct {
		jsonData string
		secure   map[string]string
		field    string
		problem  string
	}{
		{`{}`, nil, "elasticsearchUrl", "is required"},
		{`{"elasticsearchUrl":"http://es:9200"}`, nil, "prometheusUrl", "is required"},
		{`{"elasticsearchUrl":"ftp://es","prometheusUrl":"http://p"}`, nil, "elasticsearchUrl", "http:// or https://"},
		{`{"elasticsearchUrl":"http://","prometheusUrl":"http://p"}`, nil, "elasticsearchUrl", "no host"},
		{`{"elasticsearchUrl":"http://es:9200?x=1","prometheusUrl":"http://p"}`, nil, "elasticsearchUrl", "without query"},
		{`{"elasticsearchUrl":"http://es:9200","prometheusUrl":"http://u:pw@p"}`, nil, "prometheusUrl", "must not contain credentials"},
		{`{"elasticsearchUrl":"http://es:9200","prometheusUrl":"http://p","elasticsearchJobIndex":"Jobs"}`, nil, "elasticsearchJobIndex", "lowercase"},
		{`{"elasticsearchUrl":"http://es:9200","prometheusUrl":"http://p","elasticsearchJobIndex":"jobs*"}`, nil, "elasticsearchJobIndex", `"*"`},
		{`{"elasticsearchUrl":"http://es:9200","prometheusUrl":"http://p","elasticsearchNodeIndex":"_nodes"}`, nil, "elasticsearchNodeIndex", "must not start"},
		{`{"elasticsearchUrl":"http://es:9200","prometheusUrl":"http://p","elasticsearchNodeIndex":"jobsight-jobs"}`, nil, "elasticsearchNodeIndex", "must differ"},
		{minimal, map[string]string{"elasticsearchPassword": "x"}, "elasticsearchUser", "password is set"},
		{minimal, map[string]string{"prometheusPassword": "x"}, "prometheusUser", "password is set"},
		{`{"elasticsearchUrl":"http://es:9200","prometheusUrl":"http://p","prometheusUser":"u"}`, map[string]string{"prometheusBearerToken": "t"}, "prometheusBearerToken", "cannot be combined"},
		{`{"elasticsearchUrl":"http://es:9200","prometheusUrl":"http://p","timeoutSeconds":-1}`, nil, "timeoutSeconds", "between 1 and 300"},
		{`{"elasticsearchUrl":"http://es:9200","prometheusUrl":"http://p","timeoutSeconds":301}`, nil, "timeoutSeconds", "between 1 and 300"},
		{`{"elasticsearchUrl":"http://es:9200","prometheusUrl":"http://p","timeoutSeconds":"30"}`, nil, "timeoutSeconds", "must be a whole number, got a JSON string"},
		{`{"elasticsearchUrl":"http://es:9200","prometheusUrl":"http://p","clusterFilter":" alpha"}`, nil, "clusterFilter", "spaces"},
		{`{"elasticsearchUrl":"http://es:9200","prometheusUrl":"http://p","esUrl":"x"}`, nil, "esUrl", "unknown setting"},
		{`{"elasticsearchUrl":"http://es:9200","prometheusUrl":"http://p","prometheusTenant":"a\r\nX-Evil: 1"}`, nil, "prometheusTenant", "only printable ASCII without spaces"},
		{`{"elasticsearchUrl":"http://es:9200","prometheusUrl":"http://p","prometheusTenant":"a","prometheusTenantHeader":"X Org"}`, nil, "prometheusTenantHeader", "not an HTTP header name"},
		{`{"elasticsearchUrl":"http://es:9200","prometheusUrl":"http://p","prometheusTenant":"a","prometheusTenantHeader":"Authorization"}`, nil, "prometheusTenantHeader", "sets itself"},
		{`{"elasticsearchUrl":"http://es:9200","prometheusUrl":"http://p","prometheusTenantHeader":"X-Scope-OrgID"}`, nil, "prometheusTenantHeader", "prometheusTenant is not"},
	}
	for _, c := range cases {
		t.Run(c.field+" "+c.problem, func(t *testing.T) {
			_, err := load(c.jsonData, c.secure)
			if err == nil {
				t.Fatalf("%s: no error", c.jsonData)
			}
			var fe *models.FieldError
			found := false
			for _, e := range flatten(err) {
				if errors.As(e, &fe) && fe.Field == c.field && strings.Contains(fe.Problem, c.problem) {
					found = true
				}
			}
			if !found {
				t.Errorf("%s: got %q, want a problem with %s containing %q", c.jsonData, err, c.field, c.problem)
			}
			if !strings.Contains(err.Error(), "setting "+c.field+": ") {
				t.Errorf("message %q does not name setting %s", err, c.field)
			}
		})
	}
}

func TestLoadSettingsReportsEveryProblem(t *testing.T) {
	_, err := load(`{"timeoutSeconds":1000}`, nil)
	msg := err.Error()
	for _, f := range []string{"elasticsearchUrl", "prometheusUrl", "timeoutSeconds"} {
		if !strings.Contains(msg, "setting "+f) {
			t.Errorf("message %q misses %s", msg, f)
		}
	}
}

func TestLoadSettingsRejectsMalformedJSON(t *testing.T) {
	for _, in := range []string{`{"elasticsearchUrl":`, `[1,2]`, minimal + `{}`} {
		if _, err := load(in, nil); err == nil || !strings.Contains(err.Error(), "jsonData") && !strings.Contains(err.Error(), "setting") {
			t.Errorf("%s: got %v, want an error about jsonData", in, err)
		}
	}
}

// flatten unpacks errors.Join trees.
func flatten(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, flatten(e)...)
		}
		return out
	}
	return []error{err}
}

// The example files are shared with src/models.contract.ts, which checks at
// typecheck time that the TypeScript models have the same keys. Here: every
// key in the examples is a Go field (strict decoding) and every Go field is
// in the examples.
func TestModelsMatchTheSharedExamples(t *testing.T) {
	raw, err := os.ReadFile("testdata/jsondata.json")
	if err != nil {
		t.Fatal(err)
	}
	// Decoded without defaults, so that a key missing from the example shows.
	var s models.Settings
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		t.Fatalf("testdata/jsondata.json: %v", err)
	}
	if _, err := models.ParseJSONData(raw); err != nil {
		t.Fatalf("testdata/jsondata.json: %v", err)
	}
	allFieldsSet(t, "Settings", s)

	raw, err = os.ReadFile("testdata/query.json")
	if err != nil {
		t.Fatal(err)
	}
	q, err := models.ParseQuery(raw)
	if err != nil {
		t.Fatal(err)
	}
	allFieldsSet(t, "Query", q)
	if q.QueryType != models.QueryTypeJobTimeline || q.Cluster[0] != "alpha" || q.JobID != "1234_7" {
		t.Errorf("query example decoded to %+v", q)
	}
}

func allFieldsSet(t *testing.T, name string, v any) {
	t.Helper()
	rv := reflect.ValueOf(v)
	for i := range rv.NumField() {
		f := rv.Type().Field(i)
		tag := strings.Split(f.Tag.Get("json"), ",")[0]
		if tag == "-" || tag == "" {
			continue
		}
		if rv.Field(i).IsZero() {
			t.Errorf("%s.%s (json %q) is not in the shared example: add it there and to src/types.ts", name, f.Name, tag)
		}
	}
}

func TestAccessAndAllocationSettingsNameTheProblem(t *testing.T) {
	cases := map[string]string{
		`"userMapping":"uid"`:        "setting userMapping: must be login, email or emailLocalPart",
		`"fullAccessRoles":["Root"]`: "setting fullAccessRoles: must list Grafana roles",
		`"maxJobs":0`:                "",
		`"maxJobs":-5`:               "setting maxJobs: must be between 1 and 100000, got -5",
		`"allocations":[{"cluster":"c","resource":"disk","hours":1}]`:                      `setting allocations[0]: resource must be cpu or gpu, got "disk"`,
		`"allocations":[{"resource":"gpu","hours":1}]`:                                     "setting allocations[0]: cluster is required",
		`"allocations":[{"cluster":"c","resource":"gpu","hours":-1}]`:                      "setting allocations[0]: hours must be positive",
		`"allocations":[{"cluster":"c","resource":"gpu","hours":1,"start":"soon"}]`:        `start "soon" is not a date`,
		`"allocations":[{"cluster":"c","resource":"gpu","hours":1,"periodDays":0.000001}]`: "setting allocations[0]: periodDays must be between 1 and 3660",
		`"allocationsUrl":"ftp://x/constants"`:                                             "setting allocationsUrl: must be an http:// or https:// URL",
		`"allocationsUrl":"http://u:p@x/constants"`:                                        "setting allocationsUrl: must be an http:// or https:// URL without credentials",
		`"tlsCaCert":"not a cert"`:                                                         "setting tlsCaCert: must be a PEM certificate bundle",
		`"jobPageUrl":"javascript:alert(1)"`:                                               "setting jobPageUrl: must be a path",
		`"identitySource":"login"`:                                                         "setting identitySource: must be idToken or unverifiedLogin",
		`"trustedAuthMethods":["password"]`:                                                `setting trustedAuthMethods: "password" is Grafana's own sign-in`,
		`"trustedAuthMethods":["*"]`:                                                       "setting trustedAuthMethods: must list Grafana authentication methods",
		`"trustedAuthMethods":["o*auth"]`:                                                  "* is allowed only at the end",
		`"userIdMap":{"user:":"bob"}`:                                                      `setting userIdMap: key "user:" can never match`,
		`"userIdMap":{"user:42":""}`:                                                       "setting userIdMap: entries must map a Grafana user id",
		`"userIdMap":{"user:42":"bob","ae3fk2n1lz9xcb":"carol","u000000007":"dan"}`:        "",
		`"userIdMap":{"user:ae3fk2n1lz9xcb":"bob"}`:                                        `setting userIdMap: key "user:ae3fk2n1lz9xcb" can never match: Grafana's ID token has sub "user:<numeric database id>"`,
		`"userIdMap":{"user:0":"bob"}`:                                                     `setting userIdMap: key "user:0" can never match`,
		`"userIdMap":{"user:042":"bob"}`:                                                   `setting userIdMap: key "user:042" can never match`,
		`"userIdMap":{"42":"bob"}`:                                                         `setting userIdMap: key "42" is a bare number`,
		`"userIdMap":{"service-account:3":"bob"}`:                                          `setting userIdMap: key "service-account:3" can never match`,
		`"userIdMap":{"alice@uni.edu":"bob"}`:                                              `setting userIdMap: key "alice@uni.edu" can never match`,
		`"userIdMap":{" ae3f":"bob"}`:                                                      `setting userIdMap: key " ae3f": must be`,
		`"grafanaUrl":"grafana:3000"`:                                                      "setting grafanaUrl: must be Grafana's base URL",
		`"forwardGrafanaIdToken":true`:                                                     "",
	}
	for extra, want := range cases {
		in := strings.TrimSuffix(minimal, "}") + "," + extra + "}"
		_, err := load(in, nil)
		if want == "" {
			if err != nil {
				t.Errorf("%s: %v", extra, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", extra, err, want)
		}
	}
}

func TestParseJobRef(t *testing.T) {
	cases := []struct{ ref, cluster, id, suffix, err string }{
		{"1234", "", "1234", "", ""},
		{"alpha:1234_7", "alpha", "1234_7", "", ""},
		{"alpha:200+1", "alpha", "200+1", "", ""},
		{"alpha:1234@20261123T101500Z", "alpha", "1234", "20261123T101500Z", ""},
		{"1234@20261123T101500Z", "", "", "", "must name its cluster"},
		{"alpha:1234@yesterday", "", "", "", "after @ must come a submit time"},
		{"alpha:12 34", "", "", "", "is not a Slurm job id"},
		{`alpha:1"}) or up{x="`, "", "", "", "is not a Slurm job id"},
	}
	for _, c := range cases {
		cl, id, suf, err := models.ParseJobRef(c.ref)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: err %v, want %q", c.ref, err, c.err)
			}
			continue
		}
		if err != nil || cl != c.cluster || id != c.id || suf != c.suffix {
			t.Errorf("%q: %q %q %q %v", c.ref, cl, id, suf, err)
		}
	}
}
