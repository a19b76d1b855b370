package notify

import "time"

// Report is one job's rendered report, as handed over by the analysis.
// User, Cluster, Class, Subject and the other metadata come from the job
// and are treated as untrusted: they never reach a header unsanitised.
type Report struct {
	// JobDocID is the job's document id; a later report with the same id
	// replaces a pending one in the digest.
	JobDocID string
	// Cluster is the Slurm cluster name.
	Cluster string
	// JobID is the Slurm job id.
	JobID string
	// User is the job owner's Slurm user name; it selects the recipient.
	User string
	// Account is the Slurm account.
	Account string
	// Subject is the subject to use when the report is mailed alone; empty
	// gets a generated one.
	Subject string
	// Text is the plain-text rendering.
	Text string
	// HTML is the HTML rendering, a whole document or a fragment.
	HTML string
	// GPUJob is true for a job that had GPUs.
	GPUJob bool
	// Class is the efficiency class (see Classes); compared without case.
	Class string
	// EndTime is when the job ended.
	EndTime time.Time
}

// spoolVersion is the format version of spool files.
const spoolVersion = 1

// spoolEntry is one spool file: a report and when it was queued. Its JSON
// names are the on-disk format, independent of Report's Go names.
type spoolEntry struct {
	Version  int         `json:"version"`
	QueuedAt time.Time   `json:"queued_at"`
	Report   spoolReport `json:"report"`
}

// spoolReport is Report as stored on disk.
type spoolReport struct {
	JobDocID string    `json:"job_doc_id,omitempty"`
	Cluster  string    `json:"cluster,omitempty"`
	JobID    string    `json:"job_id,omitempty"`
	User     string    `json:"user"`
	Account  string    `json:"account,omitempty"`
	Subject  string    `json:"subject,omitempty"`
	Text     string    `json:"text,omitempty"`
	HTML     string    `json:"html,omitempty"`
	GPUJob   bool      `json:"gpu_job"`
	Class    string    `json:"class,omitempty"`
	EndTime  time.Time `json:"end_time"`
}

// toSpool converts a Report to its on-disk form.
func toSpool(r Report) spoolReport { return spoolReport(r) }

// report converts back from the on-disk form.
func (s spoolReport) report() Report { return Report(s) }
