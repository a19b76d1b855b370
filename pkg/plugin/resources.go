package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/backend/resource/httpadapter"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"

	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/internal/report"
	"github.com/jobsight/jobsight/pkg/models"
)

// CallResource serves the resource routes (see routes).
func (d *Datasource) CallResource(ctx context.Context, req *backend.CallResourceRequest, sender backend.CallResourceResponseSender) error {
	return d.resources.CallResource(ctx, req, sender)
}

// routes are the datasource's resource routes, under
// /api/datasources/uid/<uid>/resources/:
//
//	GET options?kind=<clusters|users|accounts|partitions|states|classes>[&cluster=c]
//	    {"values": [...]}: option lists for the query editors.
//	GET job?job=<document id>   (or job=<id>&cluster=<c>: the newest with the id)
//	    The job's page: plain HTML with inline SVG, no JavaScript.
//	GET identity[?login=…]   whom the asking user (an org Admin: a named user) is mapped to, and why (whoami.go)
//
// Both apply the same access rules as queries.
func (d *Datasource) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/options", d.handleOptions)
	mux.HandleFunc("/job", d.handleJobPage)
	mux.HandleFunc("/identity", d.handleIdentity)
	return mux
}

// resourceQC builds a query context for a resource request, resolving
// its viewer.
func (d *Datasource) resourceQC(r *http.Request) (*queryCtx, error) {
	if d.settingsErr != nil {
		return nil, fmt.Errorf("the Jobsight datasource settings are invalid: %s", oneLine(d.settingsErr))
	}
	pc := httpadapter.PluginConfigFromContext(r.Context())
	v, err := viewerFor(r.Context(), d.settings, d.ids, requestOf(pc, r.Header.Get(backend.FromAlertHeaderName), r.Header.Get))
	if err != nil {
		return nil, err
	}
	now := d.now()
	q := &models.Query{}
	if c := r.URL.Query().Get("cluster"); c != "" {
		q.Cluster = []string{c}
	}
	return &queryCtx{ctx: r.Context(), st: &stats{}, v: v, q: q, from: now.Add(-90 * 24 * time.Hour), to: now, now: now, pc: pc}, nil
}

func (d *Datasource) handleOptions(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		http.Error(w, "GET only", http.StatusMethodNotAllowed)
		return
	}
	qc, err := d.resourceQC(r)
	if err != nil {
		writeJSONError(w, http.StatusForbidden, err)
		return
	}
	// Only the cluster comes from the request: check it as a query would.
	check := models.Query{QueryType: models.QueryTypeVariable, Variable: models.VariableClusters, Cluster: qc.q.Cluster}
	if err := check.Validate(); err != nil {
		writeJSONError(w, http.StatusBadRequest, err)
		return
	}
	vals, err := d.options(qc, r.URL.Query().Get("kind"))
	if err != nil {
		var be *backendError
		status := http.StatusBadRequest
		if errors.As(err, &be) {
			status = http.StatusBadGateway
		}
		writeJSONError(w, status, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"values": vals})
}

func writeJSONError(w http.ResponseWriter, status int, err error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": oneLine(err)})
}

// handleJobPage renders a job's page: its facts, request vs use, analysis
// and its GPU and memory timelines as inline SVG (internal/report), as plain
// HTML that needs no JavaScript. A job the viewer may not see is "not
// found", like a job that does not exist.
func (d *Datasource) handleJobPage(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		http.Error(w, "GET only", http.StatusMethodNotAllowed)
		return
	}
	qc, err := d.resourceQC(r)
	if err != nil {
		writePage(w, http.StatusForbidden, "Not allowed", err.Error())
		return
	}
	ref := r.URL.Query().Get("job")
	if ref == "" {
		writePage(w, http.StatusBadRequest, "No job", "Give the job as ?job=<cluster>:<id> (its document id) or ?cluster=<cluster>&job=<id>.")
		return
	}
	if err := (&models.Query{QueryType: models.QueryTypeJobTimeline, JobID: ref, Cluster: qc.q.Cluster}).Validate(); err != nil {
		writePage(w, http.StatusBadRequest, "Bad job reference", oneLine(err))
		return
	}
	job, err := d.findJob(qc, ref, nil)
	if err != nil {
		var be *backendError
		switch {
		case errors.Is(err, errNotFound):
			writePage(w, http.StatusNotFound, "Job not found", err.Error())
		case errors.As(err, &be):
			writePage(w, http.StatusBadGateway, "Store unavailable", be.msg)
		default:
			writePage(w, http.StatusBadRequest, "Bad job reference", err.Error())
		}
		return
	}
	series, serr := d.jobSeries(qc, job)
	page, err := report.HTML(report.Input{Job: *job, Series: series})
	if err != nil {
		writePage(w, http.StatusInternalServerError, "Could not render the job page", err.Error())
		return
	}
	if serr != nil {
		// The page still renders from the document; say what is missing.
		note := `<p role="note" style="margin:1em;padding:.5em;border:1px solid #c90">Time series are missing: ` + html.EscapeString(serr.Error()) + `</p>`
		page = strings.Replace(page, "<body>", "<body>"+note, 1)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src data:")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, _ = io.WriteString(w, page)
}

// jobSeries reads the job's per-GPU utilisation and per-node memory over
// its run for the page's charts, in one request.
func (d *Datasource) jobSeries(qc *queryCtx, j *jobmodel.Job) (*report.Series, error) {
	if j.StartTime == nil {
		return nil, nil
	}
	start, end := j.StartTime.Time, qc.now
	if j.Final && j.EndTime != nil {
		end = j.EndTime.Time
	}
	if !end.After(start) {
		return nil, nil
	}
	sel := "{cluster=" + promQuote(j.Cluster) + ",job_id=" + promQuote(j.JobID) + jobmodel.RunMatcher(j.SubmitTime) + "}"
	expr := labeled("gpu", "max by (node, gpu) (jobsight_job_gpu_utilization_ratio"+sel+")") + " or " +
		labeled("mem", "sum by (node) (jobsight_job_memory_used_bytes"+sel+")")
	step := promStep(start, end, 200)
	m, err := d.promRange(qc.ctx, qc.st, expr, promv1.Range{Start: start, End: end, Step: step})
	if err != nil {
		return nil, err
	}
	var out report.Series
	for _, s := range m {
		pts := make([]report.Point, len(s.Values))
		for i, p := range s.Values {
			pts[i] = report.Point{Time: p.Timestamp.Time(), Value: float64(p.Value)}
		}
		switch s.Metric["jobsight_metric"] {
		case "gpu":
			var idx int64
			fmt.Sscan(string(s.Metric["gpu"]), &idx)
			out.GPUUtilization = append(out.GPUUtilization, report.GPUSeries{Node: string(s.Metric["node"]), Index: idx, Points: pts})
		case "mem":
			out.MemoryUsed = append(out.MemoryUsed, report.NodeSeries{Node: string(s.Metric["node"]), Points: pts})
		}
	}
	if len(out.GPUUtilization) == 0 && len(out.MemoryUsed) == 0 {
		return nil, nil
	}
	return &out, nil
}

// writePage writes a minimal HTML message page (escaped).
func writePage(w http.ResponseWriter, status int, title, msg string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	w.WriteHeader(status)
	fmt.Fprintf(w, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>%s</title></head><body><h1>%s</h1><p>%s</p></body></html>\n",
		html.EscapeString(title), html.EscapeString(title), html.EscapeString(msg))
}
