package jobmodel

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Identity says which Slurm job a document belongs to. Slurm job ids are
// unique only within one cluster, so every id Jobsight writes is qualified
// by the cluster name.
type Identity struct {
	Cluster string
	// JobID is Slurm's own id for this job. Array tasks and heterogeneous
	// components each have one of their own (SLURM_JOB_ID).
	JobID uint64
	// ArrayJobID is the array's id when the job is an array task, else 0.
	ArrayJobID uint64
	// ArrayTaskID is the task's index; meaningful only when ArrayJobID != 0.
	ArrayTaskID uint64
	// HetJobID is the heterogeneous job's id when the job is one of its
	// components, else 0.
	HetJobID uint64
	// HetJobOffset is the component's offset; meaningful only when HetJobID != 0.
	HetJobOffset uint64
}

var clusterName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// Validate reports what is wrong with an identity, naming the field.
func (id Identity) Validate() error {
	if !clusterName.MatchString(id.Cluster) {
		return fmt.Errorf("cluster %q: must be 1-64 characters of letters, digits, '.', '_' or '-', starting with a letter or digit", id.Cluster)
	}
	if id.JobID == 0 && id.ArrayJobID == 0 && id.HetJobID == 0 {
		return errors.New("job id: missing (0)")
	}
	if id.ArrayJobID != 0 && id.HetJobID != 0 {
		return errors.New("job id: a job cannot be both an array task and a heterogeneous component")
	}
	return nil
}

// Key is the job's display form, the part of the document id after the
// cluster: "123" for a plain job, "123_4" for task 4 of array 123, "200+1"
// for component 1 of heterogeneous job 200. It is also the job_id field of
// documents and the job_id label of Prometheus series.
func (id Identity) Key() string {
	switch {
	case id.ArrayJobID != 0:
		return strconv.FormatUint(id.ArrayJobID, 10) + "_" + strconv.FormatUint(id.ArrayTaskID, 10)
	case id.HetJobID != 0:
		return strconv.FormatUint(id.HetJobID, 10) + "+" + strconv.FormatUint(id.HetJobOffset, 10)
	default:
		return strconv.FormatUint(id.JobID, 10)
	}
}

// DocID is the job document's id, "<cluster>:<key>". A job that reuses an
// id already held by an older job gets ReuseDocID instead.
func (id Identity) DocID() string { return id.Cluster + ":" + id.Key() }

// ReuseSeparator separates a document id from the submit-time suffix that
// keeps a reused Slurm job id from overwriting the older job.
const ReuseSeparator = "@"

// ReuseDocID is the document id of a job whose plain id is already taken by
// an older job (Slurm wraps job ids around and resets them with its state):
// "<cluster>:<key>@<submit time, UTC, yyyymmddThhmmssZ>".
func ReuseDocID(base string, submit time.Time) string {
	return base + ReuseSeparator + submit.UTC().Format("20060102T150405Z")
}

// RunLabel is the label that tells apart, in the job series, two jobs that
// held the same Slurm job id (DESIGN.md: series carry {cluster, job_id,
// node}; ids are reused after a wrap-around or a controller reset): its
// value is RunOf the job, one value per job, so it adds no series.
const RunLabel = "run"

// RunOf is a job's run identity in its series: its submit time in Unix
// seconds, or "" when the submit time is unknown (the series then carry no
// run label). Agent and datasource both derive it from the document.
func RunOf(submit *Time) string {
	if submit == nil || submit.IsZero() {
		return ""
	}
	return strconv.FormatInt(submit.Unix(), 10)
}

// RunMatcher is the PromQL label matcher, with a leading comma, that keeps
// the series of the job submitted at submit: its run, or no run label at
// all (series written by agents before runs were labelled); "" when the
// submit time is unknown. Run values are digits: nothing to escape.
func RunMatcher(submit *Time) string {
	run := RunOf(submit)
	if run == "" {
		return ""
	}
	return "," + RunLabel + `=~"` + run + `|"`
}

// NodeDocID is the id of the per-node document of a job on one node:
// "<job document id>/<node>".
func NodeDocID(jobDocID, node string) string { return jobDocID + "/" + node }

// ParseKey parses a job key ("123", "123_4", "200+1") for the given cluster.
func ParseKey(cluster, key string) (Identity, error) {
	id := Identity{Cluster: cluster}
	num := func(s, what string) (uint64, error) {
		if s == "" || len(s) > 20 {
			return 0, fmt.Errorf("job key %q: %s %q is not a number", key, what, s)
		}
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("job key %q: %s %q is not a number", key, what, s)
		}
		return v, nil
	}
	var err error
	switch {
	case strings.Contains(key, "_"):
		a, t, _ := strings.Cut(key, "_")
		if id.ArrayJobID, err = num(a, "array job id"); err != nil {
			return Identity{}, err
		}
		if id.ArrayTaskID, err = num(t, "array task id"); err != nil {
			return Identity{}, err
		}
	case strings.Contains(key, "+"):
		h, o, _ := strings.Cut(key, "+")
		if id.HetJobID, err = num(h, "heterogeneous job id"); err != nil {
			return Identity{}, err
		}
		if id.HetJobOffset, err = num(o, "heterogeneous component offset"); err != nil {
			return Identity{}, err
		}
	default:
		if id.JobID, err = num(key, "job id"); err != nil {
			return Identity{}, err
		}
	}
	return id, id.Validate()
}

// ParseDocID parses a job document id, with or without a reuse suffix, into
// the job's identity. Array and heterogeneous ids carry no JobID (Slurm's
// own id of the task); that is stored in the document's slurm_job_id field.
func ParseDocID(docID string) (Identity, error) {
	base, _, _ := strings.Cut(docID, ReuseSeparator)
	cluster, key, ok := strings.Cut(base, ":")
	if !ok {
		return Identity{}, fmt.Errorf("document id %q: want <cluster>:<job>", docID)
	}
	id, err := ParseKey(cluster, key)
	if err != nil {
		return Identity{}, fmt.Errorf("document id %q: %w", docID, err)
	}
	return id, nil
}
