package deliver

// nodedocs.go: reading a job's node documents back from Elasticsearch.

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/internal/store"
)

// NodeDocs returns the stored node documents of a job.
func (o *Outputs) NodeDocs(ctx context.Context, jobDocID string) ([]jobmodel.Node, error) {
	if o.es == nil {
		return nil, nil
	}
	o.mu.Lock()
	if id := o.resolved[jobDocID]; id != "" {
		jobDocID = id
	}
	o.mu.Unlock()
	q, _ := json.Marshal(map[string]any{
		"size":  1000,
		"query": map[string]any{"bool": map[string]any{"filter": []any{map[string]any{"term": map[string]any{"job_doc_id": jobDocID}}}}},
	})
	raw, err := o.es.Search(ctx, jobmodel.SearchIndices(o.cfg.Elasticsearch.NodeIndex), q)
	if err != nil {
		return nil, err
	}
	var ans store.SearchAnswer[jobmodel.Node]
	if err := json.Unmarshal(raw, &ans); err != nil {
		return nil, fmt.Errorf("node documents of %s: %w", jobDocID, err)
	}
	out := make([]jobmodel.Node, 0, len(ans.Hits.Hits))
	for _, h := range ans.Hits.Hits {
		if h.Source.JobDocID == jobDocID {
			out = append(out, h.Source)
		}
	}
	return out, nil
}
