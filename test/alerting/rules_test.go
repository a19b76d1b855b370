package alerting_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jobsight/jobsight/test/alerting"
)

const shippedFile = "../../provisioning/alerting/hogging.yaml"

func shippedRules(t *testing.T) []alerting.Rule {
	t.Helper()
	rules, err := alerting.LoadRules(shippedFile)
	if err != nil {
		t.Fatal(err)
	}
	if len(rules) == 0 {
		t.Fatalf("%s has no rules", shippedFile)
	}
	return rules
}

func hoggingRule(t *testing.T) alerting.Rule {
	t.Helper()
	for _, r := range shippedRules(t) {
		if r.UID == "jobsight-gpus-idle" {
			return r
		}
	}
	t.Fatal("no rule jobsight-gpus-idle in " + shippedFile)
	return alerting.Rule{}
}

// Every shipped rule is A (the Jobsight hogging query) → B reduce (last,
// dropNN) → C threshold (gt 0), condition C, and quiet on no data.
func TestShippedRulesChain(t *testing.T) {
	for _, r := range shippedRules(t) {
		t.Run(r.UID, func(t *testing.T) {
			if r.Condition != "C" {
				t.Errorf("condition %q, want C", r.Condition)
			}
			chain, err := r.Chain()
			if err != nil {
				t.Fatal(err)
			}
			var refs []string
			for _, q := range chain {
				refs = append(refs, q.RefID+":"+q.ExpressionType())
			}
			if got := strings.Join(refs, " → "); got != "A: → B:reduce → C:threshold" || len(r.Data) != 3 {
				t.Fatalf("chain %s (%d data), want A → B reduce → C threshold", got, len(r.Data))
			}
			a, b, c := chain[0], chain[1], chain[2]
			if a.DatasourceUID != "jobsight" || a.QueryType != "hogging" || a.Model["queryType"] != "hogging" || a.IsExpression() {
				t.Errorf("A: datasource %q query type %q / model %v", a.DatasourceUID, a.QueryType, a.Model["queryType"])
			}
			if a.RelativeTimeRange.From < 30*time.Minute || a.RelativeTimeRange.To != 0 {
				t.Errorf("A: relative time range %+v", a.RelativeTimeRange)
			}
			if !strings.Contains(string(a.RawModel), `"queryType":"hogging"`) {
				t.Errorf("A: raw model %s", a.RawModel)
			}
			settings, _ := b.Model["settings"].(map[string]any)
			if !b.IsExpression() || b.Model["reducer"] != "last" || settings["mode"] != "dropNN" || b.ExpressionInput() != "A" {
				t.Errorf("B: %v", b.Model)
			}
			if !c.IsExpression() || c.ExpressionInput() != "B" {
				t.Errorf("C: %v", c.Model)
			}
			if r.NoDataState != "OK" || r.ExecErrState != "Error" || r.For != 5*time.Minute || r.Interval != time.Minute {
				t.Errorf("states %s/%s, for %s, interval %s", r.NoDataState, r.ExecErrState, r.For, r.Interval)
			}
			if r.Folder != "Jobsight" || r.OrgID != 1 || r.Title == "" || r.Labels["resource"] == "" {
				t.Errorf("folder %q org %d title %q labels %v", r.Folder, r.OrgID, r.Title, r.Labels)
			}
		})
	}
}

// The labels the annotations read are those CheckDataplane requires, and
// the values they read are refIds of the rule.
func TestShippedTemplatesReadRequiredLabels(t *testing.T) {
	for _, r := range shippedRules(t) {
		labels := r.TemplateLabels()
		if len(labels) == 0 {
			t.Errorf("rule %s: templates read no labels", r.UID)
		}
		for _, l := range labels {
			found := false
			for _, h := range alerting.HoggingLabels {
				found = found || h == l
			}
			if !found {
				t.Errorf("rule %s reads {{ $labels.%s }}, which CheckDataplane does not require (HoggingLabels %v)", r.UID, l, alerting.HoggingLabels)
			}
		}
		for _, v := range r.TemplateValues() {
			if _, ok := r.Query(v); !ok {
				t.Errorf("rule %s reads {{ $values.%s }}, which is not one of its refIds", r.UID, v)
			}
		}
	}
}

func TestLoadRulesNamesTheProblem(t *testing.T) {
	good, err := os.ReadFile(shippedFile)
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct{ from, to, want string }{
		"condition": {"condition: C", "condition: D", "condition D names no refId"},
		"input":     {"expression: B", "expression: X", "reads X, which is not a refId"},
		"for":       {"for: 5m", "for: soon", "for:"},
		"nodata":    {"noDataState: OK", "noDataState: Quiet", `noDataState "Quiet"`},
		"version":   {"apiVersion: 1", "apiVersion: 2", "apiVersion 2"},
	} {
		t.Run(name, func(t *testing.T) {
			s := string(good)
			if !strings.Contains(s, tc.from) {
				t.Fatalf("%q not in %s", tc.from, shippedFile)
			}
			p := filepath.Join(t.TempDir(), "rules.yaml")
			if err := os.WriteFile(p, []byte(strings.Replace(s, tc.from, tc.to, 1)), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := alerting.LoadRules(p)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}
