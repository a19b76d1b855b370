package promremote

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jobsight/jobsight/internal/config"
	"github.com/jobsight/jobsight/test/stack"
)

// testProm is the Prometheus of this package's tests, started once by
// TestMain; nil in -short mode. Set before any test runs, then only read.
var testProm *stack.Server

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "jobsight-prom-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	testProm, err = stack.StartPrometheus(ctx, dir)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting Prometheus:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	_ = testProm.Stop()
	os.RemoveAll(dir)
	os.Exit(code)
}

func newPromClient(t *testing.T) *Client {
	t.Helper()
	if testProm == nil {
		t.Skip("integration test: needs Prometheus (not started with -short)")
	}
	c, err := New(Config{URL: testProm.URL + "/api/v1/write", Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

type vectorResult struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

// query runs an instant PromQL query at time at.
func query(t *testing.T, q string, at time.Time) []vectorResult {
	t.Helper()
	u := testProm.URL + "/api/v1/query?" + url.Values{
		"query": {q}, "time": {strconv.FormatFloat(float64(at.UnixMilli())/1000, 'f', 3, 64)},
	}.Encode()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var answer struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []vectorResult `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil {
		t.Fatalf("query %s: %v", q, err)
	}
	if answer.Status != "success" {
		t.Fatalf("query %s: %s", q, answer.Error)
	}
	return answer.Data.Result
}

// eventually polls cond until it holds, failing after 15 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not true within 15 s", what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func TestWriteLandsQueryableSamples(t *testing.T) {
	c := newPromClient(t)
	now := time.Now().Truncate(time.Millisecond)
	jobID := strconv.FormatInt(now.UnixNano(), 36) // unique per run
	series := []Series{
		{
			Name: "jobsight_test_cpu_usage_ratio",
			// Unsorted on purpose: Encode sorts.
			Labels: []Label{{"node", "n1"}, {"job_id", jobID}, {"cluster", "c1"}},
			Samples: []Sample{
				{TimestampMs: now.UnixMilli(), Value: 0.75},
				{TimestampMs: now.Add(-10 * time.Second).UnixMilli(), Value: 0.25},
			},
		},
		{
			Name:    "jobsight_test_gpu_memory_used_bytes",
			Labels:  []Label{{"cluster", "c1"}, {"job_id", jobID}, {"node", "n1"}, {"gpu", "0"}},
			Samples: []Sample{{TimestampMs: now.UnixMilli(), Value: 17179869184}},
		},
	}
	if err := c.Write(context.Background(), series); err != nil {
		t.Fatal(err)
	}

	var got []vectorResult
	eventually(t, "the CPU sample is queryable", func() bool {
		got = query(t, `jobsight_test_cpu_usage_ratio{job_id="`+jobID+`"}`, now)
		return len(got) == 1
	})
	want := map[string]string{"__name__": "jobsight_test_cpu_usage_ratio", "cluster": "c1", "job_id": jobID, "node": "n1"}
	if fmt.Sprint(got[0].Metric) != fmt.Sprint(want) {
		t.Errorf("labels %v, want %v", got[0].Metric, want)
	}
	if got[0].Value[1] != "0.75" {
		t.Errorf("value at now %v, want 0.75", got[0].Value[1])
	}
	older := query(t, `jobsight_test_cpu_usage_ratio{job_id="`+jobID+`"}`, now.Add(-5*time.Second))
	if len(older) != 1 || older[0].Value[1] != "0.25" {
		t.Errorf("value 5 s earlier %v, want 0.25 (the older sample)", older)
	}
	gpu := query(t, `jobsight_test_gpu_memory_used_bytes{job_id="`+jobID+`",gpu="0"}`, now)
	if len(gpu) != 1 || gpu[0].Value[1] != "17179869184" {
		t.Errorf("GPU series %v, want one series with 17179869184", gpu)
	}
}

func TestWriteEncodedReplaysASpooledBatch(t *testing.T) {
	c := newPromClient(t)
	now := time.Now()
	jobID := "replay-" + strconv.FormatInt(now.UnixNano(), 36)
	payload, err := Encode([]Series{{Name: "jobsight_test_replayed_ratio",
		Labels: []Label{{"cluster", "c1"}, {"job_id", jobID}, {"node", "n1"}}, Samples: []Sample{{now.UnixMilli(), 0.5}}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.WriteEncoded(context.Background(), payload); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the replayed sample is queryable", func() bool {
		r := query(t, `jobsight_test_replayed_ratio{job_id="`+jobID+`"}`, now)
		return len(r) == 1 && r[0].Value[1] == "0.5"
	})
}

func TestOutOfOrderSampleIsPermanent(t *testing.T) {
	c := newPromClient(t)
	now := time.Now()
	labels := []Label{{"cluster", "c1"}, {"job_id", "ooo-" + strconv.FormatInt(now.UnixNano(), 36)}, {"node", "n1"}}
	if err := c.Write(context.Background(), []Series{{Name: "jobsight_test_ooo_ratio", Labels: labels,
		Samples: []Sample{{now.UnixMilli(), 1}}}}); err != nil {
		t.Fatal(err)
	}
	err := c.Write(context.Background(), []Series{{Name: "jobsight_test_ooo_ratio", Labels: labels,
		Samples: []Sample{{now.Add(-time.Minute).UnixMilli(), 2}}}})
	var we *WriteError
	if !errors.As(err, &we) || !errors.Is(err, ErrPermanent) || errors.Is(err, ErrRetryable) || we.Status != http.StatusBadRequest {
		t.Fatalf("writing an out-of-order sample: %v; want a permanent 400 error", err)
	}
	if !strings.Contains(err.Error(), "out of order") {
		t.Errorf("error %q does not carry the server's reason", err)
	}
}

func TestServerDownIsRetryable(t *testing.T) {
	port, err := stack.FreePort() // nothing listens there
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(Config{URL: "http://127.0.0.1:" + strconv.Itoa(port) + "/api/v1/write", MaxRetries: 1, BearerToken: "tok-secret"})
	if err != nil {
		t.Fatal(err)
	}
	err = c.Write(context.Background(), []Series{{Name: "jobsight_test_ratio", Samples: []Sample{{time.Now().UnixMilli(), 1}}}})
	var we *WriteError
	if !errors.As(err, &we) || !errors.Is(err, ErrRetryable) || errors.Is(err, ErrPermanent) || we.Status != 0 {
		t.Fatalf("writing to a closed port: %v; want a retryable error with no status", err)
	}
	if !strings.Contains(err.Error(), "connection refused") || strings.Contains(err.Error(), "tok-secret") {
		t.Errorf("error %q: want it to say connection refused and not show the token", err)
	}
}

func TestServerErrorIsRetryableAndAuthIsSent(t *testing.T) {
	// A stand-in endpoint, for what Prometheus cannot be made to do: answer
	// 503, and check the credentials.
	var gotAuth []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth = append(gotAuth, r.Header.Get("Authorization"))
		_, _ = io.Copy(io.Discard, r.Body)
		http.Error(w, "overloaded", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	c, err := New(Config{URL: srv.URL + "/api/v1/push", Username: "agent", Password: "pw", MaxRetries: 1})
	if err != nil {
		t.Fatal(err)
	}
	err = c.Write(context.Background(), []Series{{Name: "x", Samples: []Sample{{1, 1}}}})
	var we *WriteError
	if !errors.As(err, &we) || !errors.Is(err, ErrRetryable) || we.Status != http.StatusServiceUnavailable {
		t.Fatalf("503: %v; want a retryable error with status 503", err)
	}
	if len(gotAuth) != 2 || gotAuth[0] != "Basic YWdlbnQ6cHc=" {
		t.Errorf("requests carried Authorization %q; want 2 attempts with basic auth agent:pw", gotAuth)
	}
}

// TestTenantHeaderOnEveryRequest: the tenant goes in the configured header
// (X-Scope-OrgID by default) on every request, retries and spool replays
// included, alongside the credentials.
func TestTenantHeaderOnEveryRequest(t *testing.T) {
	// A fake endpoint that records headers: Prometheus ignores tenant
	// headers, so only a recorder can show they are sent. It fails the
	// first request (503) so that a retry is seen too.
	type got struct{ tenant, thanos, auth string }
	var mu sync.Mutex
	var reqs []got
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		reqs = append(reqs, got{r.Header.Get("X-Scope-OrgID"), r.Header.Get("THANOS-TENANT"), r.Header.Get("Authorization")})
		n := len(reqs)
		mu.Unlock()
		if n == 1 {
			http.Error(w, "overloaded", http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	series := []Series{{Name: "x", Samples: []Sample{{1, 1}}}}

	c, err := New(Config{URL: srv.URL + "/api/v1/push", BearerToken: "tok", Tenant: "team-a", MaxRetries: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Write(context.Background(), series); err != nil {
		t.Fatal(err)
	}
	payload, _ := Encode(series)
	if err := c.WriteEncoded(context.Background(), payload); err != nil { // a spool replay
		t.Fatal(err)
	}
	// The agent's and the collector's configuration section.
	c, err = FromConfig(config.RemoteWrite{RemoteWriteURL: srv.URL + "/api/v1/push", Timeout: 5 * time.Second,
		Tenant: "team-b", TenantHeader: "THANOS-TENANT"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Write(context.Background(), series); err != nil {
		t.Fatal(err)
	}
	c, err = New(Config{URL: srv.URL + "/api/v1/push"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Write(context.Background(), series); err != nil {
		t.Fatal(err)
	}
	want := []got{{"team-a", "", "Bearer tok"}, {"team-a", "", "Bearer tok"}, {"team-a", "", "Bearer tok"},
		{"", "team-b", ""}, {"", "", ""}}
	if !reflect.DeepEqual(reqs, want) {
		t.Errorf("requests carried (X-Scope-OrgID, THANOS-TENANT, Authorization)\n%q\nwant\n%q", reqs, want)
	}
}

func TestEncodeValidates(t *testing.T) {
	s := []Sample{{1, 1}}
	for _, tc := range []struct {
		series Series
		want   string
	}{
		{Series{Name: "bad-name", Samples: s}, `"bad-name"`},
		{Series{Name: "ok", Labels: []Label{{"bad-label", "v"}}, Samples: s}, `"bad-label"`},
		{Series{Name: "ok", Labels: []Label{{"__name__", "v"}}, Samples: s}, "reserved"},
		{Series{Name: "ok", Labels: []Label{{"node", ""}}, Samples: s}, "empty value"},
		{Series{Name: "ok", Labels: []Label{{"node", "a"}, {"node", "b"}}, Samples: s}, "twice"},
	} {
		_, err := Encode([]Series{tc.series})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Encode(%+v): %v; want an error containing %s", tc.series, err, tc.want)
		}
	}
	if b, err := Encode([]Series{{Name: "no_samples"}}); b != nil || err != nil {
		t.Errorf("Encode of a series without samples: %v, %v; want nothing", b, err)
	}
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	in := []Series{{Name: "jobsight_job_memory_used_bytes", Labels: []Label{{"node", "n1"}, {"cluster", "c1"}},
		Samples: []Sample{{2000, 2}, {1000, 1}}}}
	b, err := Encode(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	want := "[{jobsight_job_memory_used_bytes [{cluster c1} {node n1}] [{1000 1} {2000 2}]}]"
	if fmt.Sprint(out) != want {
		t.Errorf("round trip gave %v, want %s (labels and samples sorted)", out, want)
	}
	if _, err := Decode([]byte{0xff, 0xff}); err == nil {
		t.Error("Decode of garbage: no error")
	}
}

func TestNewValidatesConfig(t *testing.T) {
	for _, cfg := range []Config{
		{URL: ""},
		{URL: "prometheus:9090"},
		{URL: "http://user:pw@prom:9090/api/v1/write"},
		{URL: "http://prom:9090/api/v1/write", BearerToken: "t", Username: "u"},
		{URL: "http://prom:9090/api/v1/write", Tenant: "a\r\nX-Evil: 1"},
		{URL: "http://prom:9090/api/v1/write", Tenant: "a", TenantHeader: "X Scope"},
		{URL: "http://prom:9090/api/v1/write", Tenant: "a", TenantHeader: "Authorization"},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v): no error", cfg)
		}
	}
}

func benchSeries(n int) []Series {
	out := make([]Series, n)
	for i := range out {
		out[i] = Series{
			Name:    "jobsight_job_cpu_usage_ratio",
			Labels:  []Label{{"cluster", "c1"}, {"job_id", strconv.Itoa(100000 + i/8)}, {"node", "node" + strconv.Itoa(i%8)}},
			Samples: []Sample{{TimestampMs: 1700000000000 + int64(i), Value: float64(i) / 7}},
		}
	}
	return out
}

func BenchmarkEncode(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		b.Run(strconv.Itoa(n)+"series", func(b *testing.B) {
			s := benchSeries(n)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Encode(s); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestValidName(t *testing.T) {
	for _, tc := range []struct {
		name  string
		colon bool
		want  bool
	}{
		{"jobsight_job_cpu_usage_ratio", true, true},
		{"job:cpu:rate5m", true, true},
		{"job:cpu", false, false},
		{"_x9", false, true},
		{"9x", false, false},
		{"", true, false},
		{"a-b", true, false},
		{"é", true, false},
	} {
		if got := validName(tc.name, tc.colon); got != tc.want {
			t.Errorf("validName(%q, %v) = %v, want %v", tc.name, tc.colon, got, tc.want)
		}
	}
}

// BenchmarkEncodeNodePush is one push of a node agent watching 8 jobs at
// 1 s with remote write every 10 s: 20 series of 10 points per job, and
// 60 health series of one point.
func BenchmarkEncodeNodePush(b *testing.B) {
	var s []Series
	for job := 0; job < 8; job++ {
		for m := 0; m < 20; m++ {
			pts := make([]Sample, 10)
			for i := range pts {
				pts[i] = Sample{TimestampMs: 1700000000000 + int64(i)*1000, Value: float64(job*m + i)}
			}
			s = append(s, Series{Name: "jobsight_job_metric_" + strconv.Itoa(m),
				Labels: []Label{{"cluster", "c1"}, {"job_id", strconv.Itoa(100000 + job)}, {"node", "node1"}}, Samples: pts})
		}
	}
	for h := 0; h < 60; h++ {
		s = append(s, Series{Name: "jobsight_agent_health_" + strconv.Itoa(h), Labels: []Label{{"cluster", "c1"}, {"node", "node1"}},
			Samples: []Sample{{TimestampMs: 1700000000000, Value: 1}}})
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Encode(s); err != nil {
			b.Fatal(err)
		}
	}
}
