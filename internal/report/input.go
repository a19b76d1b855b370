package report

import (
	"time"

	"github.com/jobsight/jobsight/internal/jobmodel"
)

// Input is what a report is rendered from.
type Input struct {
	// Job is the job document.
	Job jobmodel.Job
	// Analysis is the job's post-job analysis; when nil, Job.Analysis is
	// used, and when that is nil too the report says the job has not been
	// analysed.
	Analysis *jobmodel.Analysis
	// Series holds time series from Prometheus; nil when there are none,
	// and then the charts are drawn from the document's summaries.
	Series *Series
	// JobURL is a link to the job's page (a Grafana dashboard, say); only
	// http and https URLs are rendered.
	JobURL string
}

// Series holds a job's time series as fetched from Prometheus.
type Series struct {
	// GPUUtilization is each GPU's utilisation over time
	// (jobsight_job_gpu_utilization_ratio), values 0–1.
	GPUUtilization []GPUSeries
	// MemoryUsed is each node's memory charged to the job's cgroup over
	// time (jobsight_job_memory_used_bytes), values in bytes.
	MemoryUsed []NodeSeries
}

// GPUSeries is one GPU's values over time.
type GPUSeries struct {
	// Node is the node the GPU is on.
	Node string
	// Index is the device's index on its node (the Prometheus gpu label).
	Index int64
	// Points are the samples, in any order.
	Points []Point
}

// NodeSeries is one node's values over time.
type NodeSeries struct {
	// Node is the node's host name.
	Node string
	// Points are the samples, in any order.
	Points []Point
}

// Point is one sample of a time series.
type Point struct {
	// Time is when the sample was taken.
	Time time.Time
	// Value is the sample: a 0–1 ratio or bytes, as the series says.
	Value float64
}
