package storecheck

import (
	"context"

	"github.com/jobsight/jobsight/internal/config"
	"github.com/jobsight/jobsight/internal/jobmodel"
	es "github.com/jobsight/jobsight/internal/store/elasticsearch"
)

// JobBases are the job, node and result bases of an elasticsearch section.
func JobBases(c config.ElasticsearchConfig) map[string]Base {
	return map[string]Base{
		es.KindJob:    {Name: c.JobIndex, Monthly: true, Mapping: jobmodel.JobMapping()},
		es.KindNode:   {Name: c.NodeIndex, Monthly: true, Mapping: jobmodel.NodeMapping()},
		es.KindResult: {Name: c.ResultIndex, Monthly: true, Mapping: jobmodel.ResultMapping()},
	}
}

// Agent checks the node agent's stores (jobsight-agent check-stores):
// the jobsight_agent role's calls, and a remote write.
func Agent(ctx context.Context, esCfg config.ElasticsearchConfig, rw config.RemoteWrite, cluster string, opts Options) *Report {
	r := &Report{}
	if len(esCfg.URLs) == 0 {
		r.Add(Line{Status: Skipped, Store: "elasticsearch", Call: "all", Detail: "elasticsearch.urls is not set: job documents go to output_dir"})
	} else {
		CheckElasticsearch(ctx, r, Elasticsearch{Conn: esCfg.Elasticsearch, Role: "jobsight_agent", Bases: JobBases(esCfg)}, opts)
	}
	CheckRemoteWriteIfSet(ctx, r, RemoteWrite{Conn: rw, Component: "agent", Cluster: cluster}, opts)
	return r
}

// CheckRemoteWriteIfSet is CheckRemoteWrite, or a skipped line when no
// remote_write_url is set.
func CheckRemoteWriteIfSet(ctx context.Context, r *Report, rw RemoteWrite, opts Options) {
	if rw.Conn.RemoteWriteURL == "" {
		r.Add(Line{Status: Skipped, Store: "prometheus", Call: "remote write", Detail: "prometheus.remote_write_url is not set: no series"})
		return
	}
	CheckRemoteWrite(ctx, r, rw, opts)
}
