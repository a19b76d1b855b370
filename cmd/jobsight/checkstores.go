package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"

	"github.com/jobsight/jobsight/internal/config"
	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/internal/site/clusterstate"
	"github.com/jobsight/jobsight/internal/site/feedback"
	es "github.com/jobsight/jobsight/internal/store/elasticsearch"
	"github.com/jobsight/jobsight/internal/storecheck"
)

// checkCollectorStores checks the cluster-state collector's stores (jobsight
// cluster-state --check-stores): the jobsight_collector role's calls that
// its configuration makes (lost jobs with lost_after, retention with
// retention_months), and a remote write.
func checkCollectorStores(ctx context.Context, cfg clusterstate.Config, opts storecheck.Options) *storecheck.Report {
	r := &storecheck.Report{}
	e := cfg.Elasticsearch
	if len(e.URLs) == 0 {
		r.Add(storecheck.Line{Status: storecheck.Skipped, Store: "elasticsearch", Call: "all", Detail: "elasticsearch.urls is not set: no documents"})
	} else {
		bases := storecheck.JobBases(config.ElasticsearchConfig{JobIndex: e.JobIndex, NodeIndex: e.NodeIndex, ResultIndex: e.ResultIndex})
		bases[es.KindClusterState] = storecheck.Base{Name: e.Index, Mapping: clusterstate.Mapping()}
		skip := map[string]string{}
		if e.LostAfter <= 0 {
			for _, c := range []string{"job/search", "job/bulk", "job/bulk create"} {
				skip[c] = "elasticsearch.lost_after is 0 (lost jobs are not closed)"
			}
			if e.UnmonitoredAfter <= 0 {
				skip["node/search"] = "elasticsearch.lost_after and unmonitored_after are 0"
			}
		}
		if e.RetentionMonths <= 0 {
			for _, k := range []string{es.KindJob, es.KindNode, es.KindResult} {
				skip[k+"/list monthly"] = "elasticsearch.retention_months is 0 (every month is kept)"
				skip[k+"/delete index"] = "elasticsearch.retention_months is 0 (every month is kept)"
			}
		}
		storecheck.CheckElasticsearch(ctx, r, storecheck.Elasticsearch{Conn: e.Elasticsearch, Role: "jobsight_collector", Bases: bases, Skip: skip}, opts)
	}
	storecheck.CheckRemoteWriteIfSet(ctx, r, storecheck.RemoteWrite{Conn: cfg.Prometheus.RemoteWrite, Component: "collector", Cluster: cfg.Cluster}, opts)
	return r
}

// checkSiteStores checks the site command's stores (jobsight check-stores): the
// jobsight_site role's calls with the elasticsearch section's credential,
// the jobsight_report role's with the report credential where one is set,
// and a query of the Prometheus API where prometheus.url is set.
func checkSiteStores(ctx context.Context, cfg feedback.Config, opts storecheck.Options) *storecheck.Report {
	opts.Defaults()
	r := &storecheck.Report{}
	bases := storecheck.JobBases(cfg.Elasticsearch)
	bases[es.KindHistory] = storecheck.Base{Name: cfg.History.Index, Mapping: jobmodel.HistoryMapping()}
	storecheck.CheckElasticsearch(ctx, r, storecheck.Elasticsearch{Conn: cfg.Elasticsearch.Elasticsearch, Role: "jobsight_site", Bases: bases}, opts)
	if cfg.Report.Username != "" {
		conn, err := cfg.ReportElasticsearch(false)
		if err != nil {
			r.Add(storecheck.Line{Status: storecheck.Problem, Store: "elasticsearch [report credential]", Call: "connect", Detail: err.Error()})
		} else {
			storecheck.CheckElasticsearch(ctx, r, storecheck.Elasticsearch{Conn: conn, Role: "jobsight_report", Bases: bases, Label: "report credential"}, opts)
		}
	} else {
		r.Add(storecheck.Line{Status: storecheck.Skipped, Store: "elasticsearch [report credential]", Call: "all",
			Detail: "report.username is not set: `jobsight report` reads with the elasticsearch section's credential (checked above)"})
	}
	if cfg.Prometheus.URL == "" {
		r.Add(storecheck.Line{Status: storecheck.Skipped, Store: "prometheus", Call: "query", Detail: "prometheus.url is not set: reports have no charts"})
		return r
	}
	l := storecheck.Line{Store: "prometheus", Call: "query", Target: "GET " + storecheck.Redacted(cfg.Prometheus.URL) + "/api/v1/query_range"}
	series, err := feedback.NewSeries(cfg.Prometheus)
	if err == nil {
		err = series.Check(ctx, opts.Now)
	}
	if err == nil {
		l.Status, l.Detail = storecheck.OK, "the query API answers"
	} else {
		l.Status, l.Detail = storecheck.Problem, explainQuery(err, cfg.Prometheus)
	}
	r.Add(l)
	return r
}

// explainQuery says what a failed query means.
func explainQuery(err error, c feedback.PrometheusQuery) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return storecheck.TransportProblem(storecheck.Redacted(c.URL), ue.Err, "prometheus.ca_file", c.CAFile)
	}
	return fmt.Sprintf("failed: %v", err)
}

// reportStores prints r; 1 when a call failed.
func reportStores(r *storecheck.Report, stdout io.Writer) int {
	r.Write(stdout)
	if r.Problems() > 0 {
		return 1
	}
	return 0
}
