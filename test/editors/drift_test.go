package editors

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestDecodingCatchesDrift shows that the checks TestEditors applies to
// each emission fail when the editors and the Go models drift apart, or a
// secret goes astray: hand-made emissions, no browser needed.
func TestDecodingCatchesDrift(t *testing.T) {
	settings := func(top, jsonData, secure string) string {
		s := `{"id":1,"uid":"jobsight","name":"Jobsight","type":"jobsight-slurm-datasource","access":"proxy",` +
			`"jsonData":` + jsonData + `,"secureJsonFields":{}`
		if secure != "" {
			s += `,"secureJsonData":` + secure
		}
		return s + top + `}`
	}
	const okJSONData = `{"elasticsearchUrl":"http://127.0.0.1:9200","prometheusUrl":"http://127.0.0.1:9090"}`
	valid := []checkpoint{{Label: "done"}}
	cases := []struct {
		name, editor, event, value string
		checkpoints                []checkpoint
		wantErr                    string // "" when the emission must pass
	}{
		{"query ok", "query", "onChange",
			`{"refId":"A","datasource":{"uid":"x"},"hide":false,"queryType":"jobs","user":["alice"],"limit":5}`, valid, ""},
		{"query field the Go model does not know", "query", "onChange",
			`{"refId":"A","queryType":"jobs","jobID":"1234"}`, nil, `unknown field "jobID"`},
		{"query field of the wrong type", "query", "onRunQuery",
			`{"refId":"A","queryType":"jobs","limit":"10"}`, nil, "limit"},
		{"query invalid at a checkpoint", "query", "onChange",
			`{"refId":"A","queryType":"jobTimeline"}`, valid, "jobId is required"},
		{"query error other than expected", "query", "onChange",
			`{"refId":"A","queryType":"jobs","sortBy":"nope"}`, []checkpoint{{Label: "x", ExpectError: "windowSeconds"}}, "want an error containing"},
		{"query expected invalid but valid", "query", "onChange",
			`{"refId":"A","queryType":"jobs"}`, []checkpoint{{Label: "x", ExpectError: "sortBy"}}, "got none"},
		{"variable without its query type", "variable", "onChange",
			`{"variable":"users"}`, nil, "queryType"},
		{"variable that runs a query", "variable", "onRunQuery",
			`{"queryType":"variable","variable":"users"}`, nil, "unexpected event"},
		{"settings ok", "config", "onOptionsChange",
			settings("", okJSONData, `{"prometheusBearerToken":"tok-123"}`), valid, ""},
		{"settings key the Go model does not know", "config", "onOptionsChange",
			settings("", `{"elasticsearchURL":"http://127.0.0.1:9200"}`, ""), nil, "elasticsearchURL"},
		{"nested setting key in another case", "config", "onOptionsChange",
			settings("", `{"allocations":[{"cluster":"a","Resource":"gpu","hours":1}]}`, ""), nil, `"Resource" at allocations[0]`},
		{"secret in jsonData", "config", "onOptionsChange",
			settings("", `{"elasticsearchPassword":"hunter22"}`, ""), nil, "elasticsearchPassword"},
		{"secret value copied into jsonData", "config", "onOptionsChange",
			settings("", `{"elasticsearchUser":"hunter22"}`, `{"elasticsearchPassword":"hunter22"}`), nil, "appears in jsonData"},
		{"secure field the backend does not read", "config", "onOptionsChange",
			settings("", okJSONData, `{"esPassword":"x"}`), nil, "esPassword"},
		{"setting written beside jsonData", "config", "onOptionsChange",
			settings(`,"elasticsearchUrl":"http://127.0.0.1:9200"`, okJSONData, ""), nil, "elasticsearchUrl"},
		{"settings invalid at a checkpoint", "config", "onOptionsChange",
			settings("", `{"elasticsearchUrl":"ftp://x"}`, ""), valid, "prometheusUrl"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			raw, err := json.Marshal(emission{Seq: 1, Editor: c.editor, Event: c.event, Value: json.RawMessage(c.value),
				Definition: definitionFor(c.editor), Case: "drift", Checkpoints: c.checkpoints})
			if err != nil {
				t.Fatal(err)
			}
			err = checkEmission(raw, newCoverage())
			switch {
			case c.wantErr == "" && err != nil:
				t.Fatalf("want it accepted, got %v", err)
			case c.wantErr != "" && err == nil:
				t.Fatalf("want an error containing %q, got none", c.wantErr)
			case c.wantErr != "" && !strings.Contains(err.Error(), c.wantErr):
				t.Fatalf("want an error containing %q, got %v", c.wantErr, err)
			}
		})
	}
}

func definitionFor(editor string) *string {
	if editor != "variable" {
		return nil
	}
	d := "Users"
	return &d
}

// TestCoverageNamesWhatIsMissing: a run without emissions of some kind fails.
func TestCoverageNamesWhatIsMissing(t *testing.T) {
	err := newCoverage().complete()
	if err == nil {
		t.Fatal("empty coverage passed")
	}
	for _, want := range []string{"no emissions from the config editor", "no valid hogging query", "no valid jobs variable"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q missing from %v", want, err)
		}
	}
}
