package plugin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/jobsight/jobsight/internal/jobmodel"
)

// TestJobFinishingBetweenReadsCountsOnce: the grouped panels read the
// running jobs' documents first and aggregate the finished ones after. A
// job whose agent writes its final document between the two reads was in
// both: counted twice for that refresh. On a real ZincSearch, behind a
// proxy that makes the race happen every time (it writes the job's final
// document and waits until it is searchable before answering the running
// jobs' read), reservation and usage history count it once.
func TestJobFinishingBetweenReadsCountsOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	const index = "jobsight-jobs-race"
	st, c := stackWithJobIndex(t, ctx, index)
	es := st.Elasticsearch
	now := time.Now()
	job := func(i int, final bool) jobmodel.Job {
		start := now.Add(-time.Duration(3+i) * time.Hour).Truncate(time.Second)
		cpus := int64(4)
		j := jobmodel.Job{DocID: fmt.Sprintf("c:%d", 100+i), SchemaVersion: jobmodel.SchemaVersion, Cluster: "c",
			JobID: fmt.Sprint(100 + i), User: "u1", Account: "a1", Partition: "p", State: jobmodel.StateRunning,
			NodeCount: 1, SubmitTime: jobmodel.At(start), StartTime: jobmodel.At(start), UpdatedAt: jobmodel.At(now),
			Requested: jobmodel.Request{CPUs: &cpus}}
		if final {
			el := now.Add(-time.Minute).Sub(start).Seconds()
			j.Final, j.State = true, jobmodel.StateCompleted
			j.EndTime, j.ElapsedSeconds = jobmodel.At(start.Add(time.Duration(el)*time.Second)), &el
			j.CPU = &jobmodel.CPUUsage{CoreSeconds: jobmodel.Ptr(2 * el)}
			j.Totals = jobmodel.TotalsOf(&j)
		}
		return j
	}
	put := func(jobs ...jobmodel.Job) { t.Helper(); bulkJobs(t, ctx, c, index, jobs...) }
	// finals waits until n final documents are searchable.
	finals := func(n int) error {
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
			raw, err := c.Search(ctx, index, []byte(`{"size":0,"track_total_hits":true,"query":{"term":{"final":true}}}`))
			if err == nil && strings.Contains(string(raw), fmt.Sprintf(`"value":%d}`, n)) {
				return nil
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%d final documents never became searchable: %s %v", n, raw, err)
			}
		}
	}

	// The race, made certain (a labelled test device in front of the real
	// server): once per query, when the running jobs' documents are read,
	// the job's final document is written and made searchable before
	// that read is answered. The finished aggregation that follows sees
	// it final.
	esURL, _ := url.Parse(es.URL)
	proxy := httputil.NewSingleHostReverseProxy(esURL)
	var mu sync.Mutex
	var finish func() error
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		proxy.ServeHTTP(w, r)
		unfinishedRead := bytes.Contains(body, []byte(`{"term":{"final":false}}`)) && !bytes.Contains(body, []byte(`"aggs"`))
		mu.Lock()
		f := finish
		if unfinishedRead {
			finish = nil
		}
		mu.Unlock()
		if unfinishedRead && f != nil {
			if err := f(); err != nil {
				t.Error(err)
			}
		}
	}))
	t.Cleanup(front.Close)
	ds := newDatasource(t, servers{es: es, prom: st.Prometheus}, index, map[string]any{
		"elasticsearchUrl": front.URL, "timeoutSeconds": 90, "identitySource": "unverifiedLogin", "fullAccessRoles": []string{"Admin"}})
	query := func(q string) *backend.DataResponse {
		t.Helper()
		var model map[string]any
		if err := json.Unmarshal([]byte(q), &model); err != nil {
			t.Fatal(err)
		}
		dr := askRange(t, ds, &backend.User{Login: "admin", Role: "Admin"}, model, now.Add(-12*time.Hour), now, 48)
		if dr.Error != nil {
			t.Fatalf("%s: %v", q, dr.Error)
		}
		return &dr
	}

	// Two finished jobs and one running, four cores each; each query
	// below starts with the running one running and ends it meanwhile.
	n := 0
	for _, q := range []string{
		`{"queryType":"reservation","groupBy":"cluster"}`,
		`{"queryType":"usageHistory"}`,
	} {
		n++
		running := job(10+n, false)
		put(running)
		if n == 1 {
			put(job(1, true), job(2, true))
		}
		if err := finals(2 + (n - 1)); err != nil {
			t.Fatal(err)
		}
		// Searchable as running (its id among the running ones).
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
			raw, err := c.Search(ctx, index, []byte(`{"size":0,"track_total_hits":true,"query":{"term":{"doc_id":"`+running.DocID+`"}}}`))
			if err == nil && strings.Contains(string(raw), `"value":1}`) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the running job never became searchable: %s %v", raw, err)
			}
		}
		mu.Lock()
		finish = func() error {
			put(job(10+n, true))
			return finals(2 + n)
		}
		mu.Unlock()
		dr := query(q)
		mu.Lock()
		raced := finish == nil
		mu.Unlock()
		if !raced {
			t.Fatalf("%s: the running jobs' read was never seen (the race did not happen)", q)
		}
		fr := dr.Frames[0]
		switch {
		case strings.Contains(q, "reservation"):
			// Jobs of the range: the finished ones so far (n−1 of the
			// earlier queries' jobs and the two) and this one, once.
			jobs, _ := fr.FieldByName("jobs")
			if got, want := jobs.At(0).(int64), int64(2+n); got != want {
				t.Errorf("reservation: %d jobs, want %d (the job that ended between the reads counted twice?)", got, want)
			}
		default:
			// Reserved cores at their highest: every job holds 4, and
			// all 2+n run in the last hour (the finished ones end a
			// minute before now).
			most := 0.0
			for _, f := range dr.Frames {
				fl := f.Fields[1]
				if fl.Labels["kind"] != "reserved" {
					continue
				}
				for i := 0; i < fl.Len(); i++ {
					if v, ok := fl.ConcreteAt(i); ok {
						if x, ok := v.(float64); ok && x > most {
							most = x
						}
					}
				}
			}
			if most > float64(4*(2+n))+1e-6 || most < float64(4*(2+n))*0.9 {
				t.Errorf("usage history: %g cores reserved at most, want about %d (%d jobs of 4 cores; more: a job counted twice)", most, 4*(2+n), 2+n)
			}
		}
	}
}
