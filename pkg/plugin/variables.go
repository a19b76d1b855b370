package plugin

import (
	"fmt"
	"sort"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/jobsight/jobsight/pkg/models"
)

// maxOptions bounds the values of one variable or option list.
const maxOptions = 1000

// optionField maps an option kind to its job-index field.
var optionField = map[string]string{
	models.VariableClusters: "cluster", models.VariableUsers: "user", models.VariableAccounts: "account",
	models.VariablePartitions: "partition", "states": "state", "classes": "analysis.class",
}

// options lists the values of a kind among the jobs the viewer may see in
// the scope (one terms aggregation). Users are named as they are: the
// scope holds only jobs the viewer may see (docs/datasource.md, "Who sees
// what").
func (d *Datasource) options(qc *queryCtx, kind string) ([]string, error) {
	field, ok := optionField[kind]
	if !ok {
		return nil, fmt.Errorf("unknown option kind %q (one of clusters, users, accounts, partitions, states, classes)", kind)
	}
	query, err := d.esQuery(jobScope{q: qc.q, v: qc.v, from: qc.from, to: qc.to})
	if err != nil {
		return nil, err
	}
	body := map[string]any{"size": 0, "query": query, "aggs": map[string]any{
		"v": map[string]any{"terms": map[string]any{"field": field, "size": maxOptions}}}}
	ans, err := d.search(qc.ctx, qc.st, d.settings.ElasticsearchJobIndex, body)
	if err != nil {
		return nil, err
	}
	vals, err := terms(ans, "v")
	if err != nil {
		return nil, err
	}
	sort.Strings(vals)
	return vals, nil
}

// queryVariable answers a template variable: one frame with "text" and
// "value" fields.
func (d *Datasource) queryVariable(qc *queryCtx) (data.Frames, error) {
	var text, value []string
	if qc.q.Variable == models.VariableJobs {
		sortNewest := []any{map[string]any{"start_time": map[string]any{"order": "desc"}}}
		jobs, _, err := d.fetchJobs(*qc, jobScope{q: qc.q, v: qc.v, from: qc.from, to: qc.to}, sortNewest, 0, maxOptions,
			[]string{"doc_id", "cluster", "job_id", "name", "user", "account"})
		if err != nil {
			return nil, err
		}
		for _, j := range jobs {
			label := j.DocID
			if j.Name != "" {
				label += " " + j.Name
			}
			text = append(text, label)
			value = append(value, j.DocID)
		}
	} else if qc.q.Variable == models.VariableNodes {
		vals, err := d.agentNodes(qc)
		if err != nil {
			return nil, err
		}
		text, value = vals, vals
	} else {
		vals, err := d.options(qc, qc.q.Variable)
		if err != nil {
			return nil, err
		}
		text, value = vals, vals
	}
	if text == nil {
		text, value = []string{}, []string{}
	}
	return data.Frames{data.NewFrame("variable", data.NewField("text", nil, text), data.NewField("value", nil, value))}, nil
}
