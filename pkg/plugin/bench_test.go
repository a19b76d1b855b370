package plugin_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/backend/log"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/jobsight/jobsight/pkg/plugin"
	"github.com/jobsight/jobsight/test/dashtest"
	"github.com/jobsight/jobsight/test/dsbench"
	"github.com/jobsight/jobsight/test/pluginhost"
	"github.com/jobsight/jobsight/test/stack"
)

// BenchmarkDatasource measures the panels of issue 7's "Performance" on a
// seeded environment (test/dsbench: 10,000 finished and 200 running
// jobs on 50 nodes, their series in Prometheus). Per panel:
//
//   - plugin/<panel>: QueryData end to end against ZincSearch and
//     Prometheus, with the backend requests per panel as es-req/op and
//     prom-req/op;
//   - stock/<panel>: the requests Grafana's stock Elasticsearch and
//     Prometheus datasources send for the same panel, to the same servers,
//     in the same run;
//   - own/<panel>: QueryData against an in-process server replaying the
//     answers captured from the real servers: the plugin's own share
//     (decode, join, frame building) with no backend work.
//
// It only runs with JOBSIGHT_DSBENCH=1 (make test never seeds):
//
//	JOBSIGHT_DSBENCH=1 go test -run '^$' -bench . -benchmem -timeout 30m ./pkg/plugin/
//
// The servers are stopped when it ends, fails, or shortly before the test
// binary's -timeout would kill it.
func BenchmarkDatasource(b *testing.B) {
	if os.Getenv(dsbench.EnvVar) != "1" {
		b.Skip("set " + dsbench.EnvVar + "=1 to seed ZincSearch and Prometheus and run the datasource benchmarks")
	}
	stack.Require(b, stack.PrometheusBin)
	quietLogs(b)
	ctx := context.Background()
	env, err := dsbench.Start(ctx, b.TempDir())
	if err != nil {
		b.Fatalf("starting ZincSearch and Prometheus: %v", err)
	}
	defer env.Close()
	if f := flag.Lookup("test.timeout"); f != nil {
		if d, err := time.ParseDuration(f.Value.String()); err == nil && d > 30*time.Second {
			watchdog := time.AfterFunc(d-20*time.Second, func() { _ = env.Close() })
			defer watchdog.Stop()
		}
	}
	t0 := time.Now()
	if err := env.Seed(ctx); err != nil {
		b.Fatalf("seeding: %v", err)
	}
	b.Logf("seeded in %s: %s", time.Since(t0).Round(time.Millisecond), env.Summary())
	env.Feed()

	live := newBenchDS(b, env.ESURL(), env.ESUser(), env.ESPassword(), env.PromURL())
	rec, err := dsbench.NewRecorder(env)
	if err != nil {
		b.Fatal(err)
	}
	defer rec.Close()
	recDS := newBenchDS(b, rec.URL()+"/es", env.ESUser(), env.ESPassword(), rec.URL())
	rp := dsbench.NewReplayer()
	defer rp.Close()
	replayDS := newBenchDS(b, rp.URL()+"/es", env.ESUser(), env.ESPassword(), rp.URL())
	stock := env.NewStockClient()

	panels := env.Panels(time.Now())
	if os.Getenv(envPanels) != "picked" {
		panels = append(panels, dashboardPanels(b, env)...)
	}
	// Two plugin processes, so that the memory figure of the shipped
	// panels is theirs alone: one for the hand-picked panels (a 10,000-row
	// Jobs page among them), one for the dashboards'.
	picked := len(env.Panels(time.Now()))
	hosts := []*benchHost{startBenchHost(b, env), startBenchHost(b, env)}
	for i, p := range panels {
		host := hosts[0]
		if i >= picked {
			host = hosts[1]
		}
		// Capture the real answers once, through the recorder.
		if _, err := runPanel(ctx, recDS, p); err != nil {
			b.Fatalf("%s through the recorder: %v", p.Name, err)
		}
		recording := rec.Take()
		b.Logf("%s: backend answers through the recorder: %s", p.Name, recording.Describe())
		if dir := os.Getenv(envSave); dir != "" {
			if err := savePanel(dir, p, recording); err != nil {
				b.Fatal(err)
			}
		}
		if sr, err := stock.Run(ctx, p); err != nil {
			b.Fatalf("stock %s: %v", p.Name, err)
		} else {
			b.Logf("%s: stock requests: %s; cannot: %s", p.Name, strings.Join(sr.Detail, "; "), p.StockNote)
		}

		b.Run("plugin/"+p.Name, func(b *testing.B) {
			var r panelResult
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if r, err = runPanel(ctx, live, p); err != nil {
					b.Fatal(err)
				}
			}
			r.report(b)
		})
		if len(p.Stock) > 0 {
			b.Run("stock/"+p.Name, func(b *testing.B) {
				var r dsbench.StockResult
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					if r, err = stock.Run(ctx, p); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(r.ES), "es-req/op")
				b.ReportMetric(float64(r.Prom), "prom-req/op")
				b.ReportMetric(float64(r.Rows), "rows")
				b.ReportMetric(float64(r.Bytes), "answer-B")
			})
		}
		b.Run("own/"+p.Name, func(b *testing.B) { benchOwn(b, rp, replayDS, p, recording) })
		b.Run("host/"+p.Name, func(b *testing.B) { host.bench(b, p) })
	}
}

// benchAllocations are the seeded clusters' yearly CPU- and GPU-hour
// allocations, for the allocation panels.
var benchAllocations = []map[string]any{
	{"cluster": dsbench.Cluster, "resource": "cpu", "hours": 5e7, "periodDays": 365},
	{"cluster": dsbench.Cluster, "resource": "gpu", "hours": 2e6, "periodDays": 365},
	{"cluster": dsbench.Cluster2, "resource": "gpu", "hours": 2e6, "periodDays": 365},
}

// envPanels=picked runs only the hand-picked panels that have stock
// equivalents (env.Panels); by default every shipped dashboard's panels
// are run too.
const envPanels = "JOBSIGHT_DSBENCH_PANELS"

// dashboardPanels are the queries of every panel of the shipped dashboards
// as Grafana sends them with every variable at All (the job variable: the
// seeded multi-node GPU job), over the seeded span, with the time zone
// the frontend adds.
func dashboardPanels(b *testing.B, env *dsbench.Env) []dsbench.Panel {
	root, err := stack.RepoRoot()
	if err != nil {
		b.Fatal(err)
	}
	all := []string{dashtest.AllValue}
	vars := map[string][]string{"cluster": all, "user": all, "account": all, "partition": all, "node": all,
		"job": {env.TimelineJob}, "datasource": {"bench"}}
	var out []dsbench.Panel
	dashboards := dashtest.Load(b, filepath.Join(root, "dashboards"))
	files := make([]string, 0, len(dashboards))
	for f := range dashboards {
		files = append(files, f)
	}
	sort.Strings(files)
	for _, file := range files {
		d := dashboards[file]
		if !dashtest.UsesJobsight(d) {
			continue
		}
		short := strings.TrimPrefix(strings.TrimSuffix(filepath.Base(file), ".json"), "jobsight-")
		for _, panel := range dashtest.AllPanels(d.Panels) {
			for i, raw := range panel.Targets {
				model := dashtest.ExpandTarget(b, file+": "+panel.Title, raw, vars)
				if model["queryType"] == nil {
					continue
				}
				model["timezone"] = "Europe/Berlin"
				q, _ := json.Marshal(model)
				name := short + "/" + benchName(panel.Title)
				if len(panel.Targets) > 1 {
					name += fmt.Sprintf("/%d", i)
				}
				out = append(out, dsbench.Panel{Name: name, Query: string(q), MaxDataPoints: 1000})
			}
		}
	}
	return out
}

// benchName is a panel title as a benchmark name (no spaces or slashes).
func benchName(title string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			return r
		}
		return '_'
	}, title)
}

// benchHost is the plugin executable run by the plugin host (as Grafana
// runs it) on the seeded servers.
type benchHost struct {
	h  *pluginhost.Host
	ds pluginhost.Datasource
}

func startBenchHost(b *testing.B, env *dsbench.Env) *benchHost {
	h := pluginhost.BuildAndStart(b, context.Background())
	jd, _ := json.Marshal(map[string]any{"elasticsearchUrl": env.ESURL(), "elasticsearchUser": env.ESUser(),
		"elasticsearchJobIndex": dsbench.Index, "prometheusUrl": env.PromURL(), "timeoutSeconds": 60, "maxJobs": 20000,
		"allocations": benchAllocations})
	return &benchHost{h: h, ds: pluginhost.Datasource{ID: 1, UID: "bench", Name: "Jobsight", JSONData: jd,
		SecureJSONData: map[string]string{"elasticsearchPassword": env.ESPassword()}, Updated: time.Now()}}
}

// bench runs a panel's query through the plugin host, end to end, and
// reports the plugin process's resident memory after it and at its peak
// so far.
func (bh *benchHost) bench(b *testing.B, p dsbench.Panel) {
	var model map[string]any
	if err := json.Unmarshal([]byte(p.Query), &model); err != nil {
		b.Fatal(err)
	}
	admin := pluginhost.Caller{User: &backend.User{Login: "admin", Name: "Admin", Email: "admin@example.org", Role: "Admin"}}
	ctx := context.Background()
	var es, prom int64
	for i := 0; i < b.N; i++ {
		now := time.Now()
		resp, err := bh.h.QueryData(ctx, bh.ds, admin, pluginhost.Query{RefID: "A", Model: model,
			From: now.Add(-dsbench.FinishedSpan), To: now, MaxDataPoints: max(p.MaxDataPoints, 1000)})
		if err != nil {
			b.Fatal(err)
		}
		dr := resp.Responses["A"]
		if dr.Error != nil {
			b.Fatalf("%s: %v", p.Name, dr.Error)
		}
		for _, f := range dr.Frames {
			if f.Meta != nil {
				if m, ok := f.Meta.Custom.(map[string]any); ok {
					es, prom = asInt(m["elasticsearchRequests"]), asInt(m["prometheusRequests"])
				}
			}
		}
	}
	b.StopTimer()
	rss, peak, err := bh.h.Memory()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(es), "es-req/op")
	b.ReportMetric(float64(prom), "prom-req/op")
	b.ReportMetric(float64(rss)/(1<<20), "plugin-rss-MiB")
	b.ReportMetric(float64(peak)/(1<<20), "plugin-peak-MiB")
}

// Environment variables of the replay benchmark: JOBSIGHT_DSBENCH_SAVE=dir
// makes BenchmarkDatasource save each panel's captured answers under dir;
// JOBSIGHT_DSBENCH_REPLAY=dir makes BenchmarkDatasourceReplay measure the
// plugin's own share on them, with no server running (for profiling:
// -cpuprofile, -memprofile).
const (
	envSave   = "JOBSIGHT_DSBENCH_SAVE"
	envReplay = "JOBSIGHT_DSBENCH_REPLAY"
)

// BenchmarkDatasourceReplay is own/<panel> of BenchmarkDatasource on answers
// saved by an earlier run:
//
//	JOBSIGHT_DSBENCH=1 JOBSIGHT_DSBENCH_SAVE=/tmp/dsbench go test -run '^$' -bench Datasource/own -benchtime 1x ./pkg/plugin/
//	JOBSIGHT_DSBENCH_REPLAY=/tmp/dsbench go test -run '^$' -bench DatasourceReplay -benchmem ./pkg/plugin/
func BenchmarkDatasourceReplay(b *testing.B) {
	dir := os.Getenv(envReplay)
	if dir == "" {
		b.Skip("set " + envReplay + " to a directory saved with " + envSave)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "panels.json"))
	if err != nil {
		b.Fatal(err)
	}
	var panels []dsbench.Panel
	if err := json.Unmarshal(raw, &panels); err != nil {
		b.Fatal(err)
	}
	quietLogs(b)
	rp := dsbench.NewReplayer()
	defer rp.Close()
	ds := newBenchDS(b, rp.URL()+"/es", "bench", "bench", rp.URL())
	for _, p := range panels {
		rc, err := dsbench.LoadRecording(filepath.Join(dir, p.Name))
		if err != nil {
			b.Fatal(err)
		}
		b.Run("own/"+p.Name, func(b *testing.B) { benchOwn(b, rp, ds, p, rc) })
	}
}

// quietLogs silences the SDK's default logger (the plugin logs every query
// at debug level, which would interleave with the benchmark lines).
func quietLogs(b *testing.B) {
	old := log.DefaultLogger
	log.DefaultLogger = log.NewNullLogger()
	b.Cleanup(func() { log.DefaultLogger = old })
}

func benchOwn(b *testing.B, rp *dsbench.Replayer, ds *plugin.Datasource, p dsbench.Panel, rc dsbench.Recording) {
	ctx := context.Background()
	rp.Use(rc)
	var r panelResult
	var err error
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if r, err = runPanel(ctx, ds, p); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	r.report(b)
	b.ReportMetric(float64(rc.Bytes()), "answer-B")
}

// savePanel saves a panel's recording under dir/<panel> and adds the panel
// to dir/panels.json.
func savePanel(dir string, p dsbench.Panel, rc dsbench.Recording) error {
	if err := rc.Save(filepath.Join(dir, p.Name)); err != nil {
		return err
	}
	var panels []dsbench.Panel
	if raw, err := os.ReadFile(filepath.Join(dir, "panels.json")); err == nil {
		_ = json.Unmarshal(raw, &panels)
	}
	kept := panels[:0]
	for _, q := range panels {
		if q.Name != p.Name {
			kept = append(kept, q)
		}
	}
	p.Stock = nil
	raw, err := json.MarshalIndent(append(kept, p), "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "panels.json"), raw, 0o644)
}

// newBenchDS is a datasource instance for the seeded servers, reading up to
// 20,000 jobs per panel (the per-job reservation covers all 10,200).
func newBenchDS(b *testing.B, esURL, esUser, esPassword, promURL string) *plugin.Datasource {
	b.Helper()
	jd, _ := json.Marshal(map[string]any{
		"elasticsearchUrl":      esURL,
		"elasticsearchUser":     esUser,
		"elasticsearchJobIndex": dsbench.Index,
		"prometheusUrl":         promURL,
		"timeoutSeconds":        60,
		"maxJobs":               20000,
		"allocations":           benchAllocations,
	})
	inst, err := plugin.NewDatasource(context.Background(), backend.DataSourceInstanceSettings{
		UID: "bench", Name: "Jobsight", JSONData: jd,
		DecryptedSecureJSONData: map[string]string{"elasticsearchPassword": esPassword},
	})
	if err != nil {
		b.Fatal(err)
	}
	ds := inst.(*plugin.Datasource)
	b.Cleanup(ds.Dispose)
	return ds
}

// panelResult is what one QueryData answered.
type panelResult struct {
	es, prom      int64
	frames, rows  int
	notices       []string
	firstRowCount int
}

func (r panelResult) report(b *testing.B) {
	b.ReportMetric(float64(r.es), "es-req/op")
	b.ReportMetric(float64(r.prom), "prom-req/op")
	b.ReportMetric(float64(r.rows), "rows")
	b.ReportMetric(float64(r.frames), "frames")
}

func runPanel(ctx context.Context, ds *plugin.Datasource, p dsbench.Panel) (panelResult, error) {
	now := time.Now()
	req := &backend.QueryDataRequest{
		PluginContext: backend.PluginContext{
			User:                       &backend.User{Login: "admin", Name: "Admin", Email: "admin@example.org", Role: "Admin"},
			DataSourceInstanceSettings: &backend.DataSourceInstanceSettings{UID: "bench"},
		},
		Queries: []backend.DataQuery{{
			RefID: "A", QueryType: "", JSON: json.RawMessage(p.Query), MaxDataPoints: max(p.MaxDataPoints, 1000),
			Interval: 15 * time.Second, TimeRange: backend.TimeRange{From: now.Add(-dsbench.FinishedSpan), To: now},
		}},
	}
	resp, err := ds.QueryData(ctx, req)
	if err != nil {
		return panelResult{}, err
	}
	dr := resp.Responses["A"]
	if dr.Error != nil {
		return panelResult{}, fmt.Errorf("%s: %v", p.Name, dr.Error)
	}
	var r panelResult
	r.frames = len(dr.Frames)
	for i, f := range dr.Frames {
		n, _ := f.RowLen()
		r.rows += n
		if i == 0 {
			r.firstRowCount = n
		}
		if f.Meta != nil {
			if m, ok := f.Meta.Custom.(map[string]any); ok {
				r.es, r.prom = asInt(m["elasticsearchRequests"]), asInt(m["prometheusRequests"])
			}
			for _, n := range f.Meta.Notices {
				if n.Severity == data.NoticeSeverityWarning {
					r.notices = append(r.notices, n.Text)
				}
			}
		}
	}
	if len(r.notices) > 0 {
		return r, fmt.Errorf("%s: warnings: %s", p.Name, strings.Join(r.notices, "; "))
	}
	return r, nil
}

func asInt(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case int:
		return int64(x)
	case float64:
		return int64(x)
	}
	return 0
}
