package jobmodel

import "reflect"

// DefaultHistoryIndex is the default name of the history index.
const DefaultHistoryIndex = "jobsight-history"

// History is one user's or account's efficiency over one period, in the
// history index, id "<cluster>:<kind>:<name>:<period end date>". It is
// computed from the results index by `jobsight history` and is meant for
// admins: it names users.
type History struct {
	DocID         string `json:"doc_id"`
	SchemaVersion int    `json:"schema_version"`
	Cluster       string `json:"cluster"`
	// Kind is "user" or "account"; Name the user or account.
	Kind string `json:"kind"`
	Name string `json:"name"`
	// PeriodStart and PeriodEnd bound the jobs counted (by end time).
	PeriodStart *Time `json:"period_start"`
	PeriodEnd   *Time `json:"period_end"`
	// Jobs is the number of analysed jobs; Judged those with a class other
	// than short or unknown.
	Jobs   int64 `json:"jobs"`
	Judged int64 `json:"judged"`
	// Classes counts the jobs per class; Shares divides by Judged.
	Classes ClassCounts `json:"classes"`
	Shares  ClassShares `json:"shares"`
	// MedianGPUUtilization and MedianCPUEfficiency are over the judged GPU
	// and CPU jobs (absent without any).
	MedianGPUUtilization *float64 `json:"median_gpu_utilization,omitempty"`
	MedianCPUEfficiency  *float64 `json:"median_cpu_efficiency,omitempty"`
	// MedianScore is the median class score of the judged jobs; Trend is
	// its change since the previous period (absent when either is).
	MedianScore     *float64 `json:"median_score,omitempty"`
	Trend           *float64 `json:"trend,omitempty"`
	GPUHours        *float64 `json:"gpu_hours,omitempty"`
	GPUHoursWasted  *float64 `json:"gpu_hours_wasted,omitempty"`
	CoreHours       *float64 `json:"core_hours,omitempty"`
	CoreHoursWasted *float64 `json:"core_hours_wasted,omitempty"`
	// Advisory is set after repeated inefficiency (the rule is in
	// docs/analysis.md); AdvisoryReason says which figures set it. It is
	// advisory only: nothing is enforced.
	Advisory       bool   `json:"advisory"`
	AdvisoryReason string `json:"advisory_reason,omitempty"`
	UpdatedAt      *Time  `json:"updated_at"`
}

// ClassCounts counts jobs per efficiency class.
type ClassCounts struct {
	Efficient   int64 `json:"efficient"`
	Acceptable  int64 `json:"acceptable"`
	Inefficient int64 `json:"inefficient"`
	Wasted      int64 `json:"wasted"`
	Short       int64 `json:"short"`
	Unknown     int64 `json:"unknown"`
}

// ClassShares are the judged jobs' shares per class, 0–1.
type ClassShares struct {
	Efficient   float64 `json:"efficient"`
	Acceptable  float64 `json:"acceptable"`
	Inefficient float64 `json:"inefficient"`
	Wasted      float64 `json:"wasted"`
}

// HistoryMapping returns the explicit Elasticsearch mapping of the history
// index.
func HistoryMapping() []byte { return mustMapping(reflect.TypeOf(History{})) }
