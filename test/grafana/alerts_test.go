package grafana

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/jobsight/jobsight/test/alerting"
	"github.com/jobsight/jobsight/test/pluginhost"
)

// Windows of the test's copy of the shipped rules: the shipped ones wait
// 30 minutes of idleness and 5 minutes pending; the test's hogging job is
// idle for one minute and the rules are evaluated every 10 s with 10 s
// pending. Nothing else of the rules changes.
const (
	testWindow   = 60 * time.Second
	testInterval = 10 * time.Second
	testFor      = 10 * time.Second
)

// testRules loads the shipped hogging rules with the test's windows,
// failing when a rule no longer has the window the test shortens or
// queries no datasource of uid (the provisioned one).
func testRules(t *testing.T, uid string) []alerting.Rule {
	rules, err := alerting.LoadRules(filepath.Join(repoRoot, "provisioning", "alerting", "hogging.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rules) < 2 {
		t.Fatalf("%d hogging rules, want GPUs and cores", len(rules))
	}
	for i, r := range rules {
		found := false
		for j, q := range r.Data {
			if q.DatasourceUID != uid {
				continue
			}
			if _, ok := q.Model["windowSeconds"]; !ok || q.RelativeTimeRange.From == 0 {
				t.Fatalf("rule %s: query %s has no windowSeconds or relative range: update the test", r.UID, q.RefID)
			}
			m := map[string]any{}
			for k, v := range q.Model {
				m[k] = v
			}
			m["windowSeconds"] = int(testWindow.Seconds())
			q.Model = m
			q.RelativeTimeRange.From = testWindow
			rules[i].Data[j] = q
			found = true
		}
		if !found {
			t.Fatalf("rule %s queries no datasource %q", r.UID, uid)
		}
		rules[i].For = testFor
	}
	return rules
}

// evaluate asks the rule's datasource queries as Grafana's alert engine
// asks them (no user, FromAlert, the rule's relative range, interval and
// data points), checks the answers against the data-plane contract and
// applies the rule's expressions.
func (e *env) evaluate(t *testing.T, rule alerting.Rule, c pluginhost.Caller) alerting.Evaluation {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	now := time.Now()
	var qs []pluginhost.Query
	for _, q := range rule.Data {
		if q.IsExpression() {
			continue
		}
		if q.DatasourceUID != e.ds.UID {
			t.Fatalf("rule %s: query %s names datasource %q, not the provisioned %q", rule.UID, q.RefID, q.DatasourceUID, e.ds.UID)
		}
		iv, mdp := number(q.Model["intervalMs"]), number(q.Model["maxDataPoints"])
		qs = append(qs, pluginhost.Query{RefID: q.RefID, Model: q.Model, From: now.Add(-q.RelativeTimeRange.From), To: now.Add(-q.RelativeTimeRange.To),
			Interval: time.Duration(iv) * time.Millisecond, MaxDataPoints: int64(mdp)})
	}
	resp, err := e.host.QueryData(ctx, e.ds, c, qs...)
	if err != nil {
		t.Fatalf("rule %s: QueryData: %v", rule.UID, err)
	}
	answers := map[string]data.Frames{}
	for _, q := range qs {
		r := resp.Responses[q.RefID]
		if r.Error != nil {
			t.Fatalf("rule %s: query %s as %s: %v (Grafana: execErrState %s)", rule.UID, q.RefID, who(c), r.Error, rule.ExecErrState)
		}
		if err := alerting.CheckDataplaneFor(rule, r.Frames); err != nil {
			t.Errorf("rule %s: the answer breaks the data-plane contract alerting reads: %v", rule.UID, err)
		}
		answers[q.RefID] = r.Frames
	}
	ev, err := alerting.EvaluateRule(rule, answers)
	if err != nil {
		t.Fatalf("rule %s: evaluating: %v", rule.UID, err)
	}
	return ev
}

// hoggingAlert starts a job holding idle GPUs and an idle core on a busy
// partition (a job waits for its GPUs), an efficient job beside it and a
// job holding idle GPUs on a quiet partition, and evaluates the shipped
// rules as the alert engine would every testInterval: the hogging job must
// fire both (after their pending period), the others never.
func (e *env) hoggingAlert(t, parent *testing.T) {
	rules := testRules(t, e.ds.UID)
	loop := "nice -n 19 sh -c 'while :; do :; done'"
	hog := e.submit(t, "-p", "debug", "--gres=gpu:4", "--cpus-per-task=1", "--mem=100M", "-J", "hogging", "--wrap", "sleep 900")
	efficient := e.submit(t, "-p", "debug", "--gres=gpu:1", "--cpus-per-task=1", "--mem=50M", "-J", "efficient", "--wrap", loop)
	quiet := e.submit(t, "-p", "multi", "-w", "gnode2", "--gres=gpu:2", "--cpus-per-task=1", "--mem=50M", "-J", "quiet-partition", "--wrap", loop)
	for _, id := range []string{hog, efficient, quiet} {
		e.cancelAt(parent, id)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, id := range []string{hog, efficient, quiet} {
		if st, err := e.st.Slurm.WaitJobState(ctx, id, "RUNNING"); err != nil {
			t.Fatalf("job %s: %s %v", id, st, err)
		}
	}
	// Now debug is full: this one waits for its GPUs, and the
	// cluster-state collector reports the pending demand.
	waiting := e.submit(t, "-p", "debug", "--gres=gpu:8", "--mem=50M", "-J", "waiting", "--wrap", "sleep 5")
	e.cancelAt(parent, waiting)
	started := time.Now()

	// A Viewer's query with the alert header is still the Viewer's: the
	// rule's query as nobody never names root's hogging job.
	for _, r := range rules {
		ev := e.evaluate(t, r, viewer)
		for _, in := range ev.Instances {
			if in.Labels["job_id"] == hog {
				t.Errorf("rule %s asked as the Viewer names root's job %s", r.UID, hog)
			}
		}
	}

	pendingSince := map[string]time.Time{} // rule → when the hog first evaluated Alerting
	fired := map[string]alerting.Instance{}
	deadline := time.Now().Add(5 * time.Minute)
	for len(fired) < len(rules) {
		if time.Now().After(deadline) {
			t.Fatalf("after %s the hogging job %s fired %d of %d rules (pending since %v)", time.Since(started).Round(time.Second), hog, len(fired), len(rules), pendingSince)
		}
		for _, r := range rules {
			ev := e.evaluate(t, r, alertEngine)
			hogAlerting := false
			for _, in := range ev.Instances {
				switch id := in.Labels["job_id"]; {
				case id == hog && in.Firing:
					hogAlerting = true
					if since, ok := pendingSince[r.UID]; !ok {
						pendingSince[r.UID] = time.Now()
					} else if time.Since(since) >= r.For && fired[r.UID].Labels == nil {
						fired[r.UID] = in
					}
				case (id == efficient || id == quiet || id == waiting) && in.Firing:
					t.Errorf("rule %s: fires for job %s (%s), which is not hogging: %v", r.UID, id, in.Labels["resource"], in.Values)
				}
			}
			if !hogAlerting && fired[r.UID].Labels == nil {
				delete(pendingSince, r.UID) // back to Normal: pending starts again
			}
		}
		time.Sleep(testInterval)
	}
	t.Logf("the hogging job fired every rule %s after the waiting job was submitted", time.Since(started).Round(time.Second))
	for _, r := range rules {
		in := fired[r.UID]
		if in.AlertLabels["cluster"] != cluster || in.AlertLabels["user"] != "root" || in.AlertLabels["partition"] != "debug" ||
			in.AlertLabels["alertname"] != r.Title {
			t.Errorf("rule %s: alert labels %v", r.UID, in.AlertLabels)
		}
		if summary := expandTemplate(r.Annotations["summary"], in); !strings.Contains(summary, cluster+":"+hog) || strings.Contains(summary, "<no value>") {
			t.Errorf("rule %s: summary %q", r.UID, summary)
		}
	}
}

var templateRef = regexp.MustCompile(`\{\{\s*\$(labels|values)\.(\w+)\s*\}\}`)

// expandTemplate fills an annotation's {{ $labels.X }} and {{ $values.R }}
// as Grafana's template engine would for these simple references.
func expandTemplate(s string, in alerting.Instance) string {
	return templateRef.ReplaceAllStringFunc(s, func(m string) string {
		sub := templateRef.FindStringSubmatch(m)
		if sub[1] == "labels" {
			if v, ok := in.Labels[sub[2]]; ok {
				return v
			}
			return "<no value>"
		}
		if v, ok := in.Value(sub[2]); ok {
			return fmt.Sprint(v)
		}
		return "<no value>"
	})
}

// number reads a numeric model field decoded from YAML or JSON (0 when
// absent).
func number(v any) int {
	switch n := v.(type) {
	case int:
		return n
	case int64:
		return int(n)
	case float64:
		return int(n)
	}
	return 0
}
