package jobmodel

import "reflect"

// DefaultResultIndex is the default name of the results index.
const DefaultResultIndex = "jobsight-results"

// Result is one job's analysis in the results index, id the job's DocID. It
// carries the identity fields that per-user, per-account and per-period
// views aggregate on, so they never read the job index.
type Result struct {
	DocID          string   `json:"doc_id"`
	SchemaVersion  int      `json:"schema_version"`
	Cluster        string   `json:"cluster"`
	JobID          string   `json:"job_id"`
	User           string   `json:"user,omitempty"`
	UID            *uint32  `json:"uid,omitempty"`
	Account        string   `json:"account,omitempty"`
	Partition      string   `json:"partition,omitempty"`
	State          string   `json:"state"`
	SubmitTime     *Time    `json:"submit_time,omitempty"`
	StartTime      *Time    `json:"start_time,omitempty"`
	EndTime        *Time    `json:"end_time,omitempty"`
	ElapsedSeconds *float64 `json:"elapsed_seconds,omitempty"`
	Analysis       Analysis `json:"analysis"`
	UpdatedAt      *Time    `json:"updated_at"`
}

// NewResult makes the results-index entry of an analysed job.
func NewResult(job Job, a Analysis, now Time) Result {
	return Result{
		DocID: job.DocID, SchemaVersion: SchemaVersion, Cluster: job.Cluster, JobID: job.JobID,
		User: job.User, UID: job.UID, Account: job.Account, Partition: job.Partition, State: job.State,
		SubmitTime: job.SubmitTime, StartTime: job.StartTime, EndTime: job.EndTime, ElapsedSeconds: job.ElapsedSeconds,
		Analysis: a, UpdatedAt: &now,
	}
}

// ResultMapping returns the explicit Elasticsearch mapping of the results
// index.
func ResultMapping() []byte { return mustMapping(reflect.TypeOf(Result{})) }
