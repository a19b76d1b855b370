package deliver

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jobsight/jobsight/agent/monitor"
)

// BenchmarkPush is one push of a job's 10 s of series (9 job metrics × 10
// samples) plus the agent's health series to the real Prometheus, as the
// monitor does every push_interval.
func BenchmarkPush(b *testing.B) {
	st := servers
	if st == nil {
		b.Skip("needs Prometheus")
	}
	cfg := testConfig(&testing.T{}, st.Elasticsearch.URL, st.Prometheus.URL, b.TempDir())
	cfg.Elasticsearch.URLs = nil
	o := newOutputs(&testing.T{}, cfg)
	h := monitor.NewHealth()
	labels := []monitor.Label{{Name: "cluster", Value: fmt.Sprintf("bench%d", time.Now().UnixNano())}, {Name: "job_id", Value: "1"}, {Name: "node", Value: "n1"}}
	t0 := time.Now().Add(-30 * time.Minute).UnixMilli() // each push is the next 10 s
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		now := t0 + int64(i)*10_000
		var series []monitor.Series
		for m := range monitor.JobMetrics {
			pts := make([]monitor.Point, 10)
			for j := range pts {
				pts[j] = monitor.Point{TimestampMs: now - int64(9-j)*1000, Value: float64(i*10 + j)}
			}
			series = append(series, monitor.Series{Name: monitor.JobMetrics[m].Name, Labels: labels, Samples: pts})
		}
		hs, _ := h.Series(now, labels)
		series = append(series, hs...)
		if err := o.PushSeries(context.Background(), series); err != nil {
			b.Fatal(fmt.Errorf("push %d: %w", i, err))
		}
	}
}
