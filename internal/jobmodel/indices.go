package jobmodel

// indices.go: which index a document goes to. Job, node and result
// documents live in monthly indices, "<base>-YYYY.MM", the month of the
// job's submit time (UTC), so an index holds a bounded stretch of history
// and retention deletes whole indices. Readers search every month and the
// single index of releases before 0.2 (SearchIndices).

import (
	"strings"
	"time"
)

// monthLayout is the month part of a monthly index name.
const monthLayout = "2006.01"

// MonthlyIndex is the index of base for the month of at (UTC):
// "jobsight-jobs-2026.11".
func MonthlyIndex(base string, at time.Time) string {
	return base + "-" + at.UTC().Format(monthLayout)
}

// PartitionTime is the time that places a job's documents in a month: its
// submit time, else its start time, else now. Every version of a document
// carries the same submit time (it is part of the job's identity, see
// ReuseDocID), so every rewrite of one document id goes to the same index;
// a job submitted on 31 October that runs into November stays in
// October's index. now is the fallback for a document that carries
// neither time, which the agent never writes.
func PartitionTime(submit, start *Time, now time.Time) time.Time {
	switch {
	case submit != nil && !submit.IsZero():
		return submit.Time
	case start != nil && !start.IsZero():
		return start.Time
	}
	return now
}

// IndexOf is the monthly index of base for a job document.
func (j Job) IndexOf(base string, now time.Time) string {
	return MonthlyIndex(base, PartitionTime(j.SubmitTime, j.StartTime, now))
}

// IndexOf is the monthly index of base for a node document: its job's
// submit time (which the agent copies into every node document), so a
// job's node documents sit in its job document's month.
func (n Node) IndexOf(base string, now time.Time) string {
	return MonthlyIndex(base, PartitionTime(n.SubmitTime, n.StartTime, now))
}

// IndexOf is the monthly index of base for a job's analysis, the month of
// its job document.
func (r Result) IndexOf(base string, now time.Time) string {
	return MonthlyIndex(base, PartitionTime(r.SubmitTime, r.StartTime, now))
}

// IndexPattern matches every monthly index of base: "jobsight-jobs-*".
// Index templates apply to it.
func IndexPattern(base string) string { return base + "-*" }

// SearchIndices is what readers search for base: every monthly index and
// the single index that releases before 0.2 wrote ("jobsight-jobs,
// jobsight-jobs-*"), so documents written before the upgrade stay
// readable until retention or an administrator removes that index.
func SearchIndices(base string) string { return base + "," + IndexPattern(base) }

// MonthOfIndex returns the month of a monthly index of base (its first
// instant, UTC) and whether name is one: exactly "<base>-YYYY.MM" with a
// month from 01 to 12. Any other name, an index that merely starts with
// the base among them, is not.
func MonthOfIndex(base, name string) (time.Time, bool) {
	rest, ok := strings.CutPrefix(name, base+"-")
	if !ok || len(rest) != len(monthLayout) {
		return time.Time{}, false
	}
	for i, c := range rest {
		if i == 4 {
			if c != '.' {
				return time.Time{}, false
			}
		} else if c < '0' || c > '9' {
			return time.Time{}, false
		}
	}
	t, err := time.Parse(monthLayout, rest)
	if err != nil {
		return time.Time{}, false
	}
	return t, true
}

// ExpiredIndices returns the monthly indices of base among names that
// retention of months deletes: it keeps the current month and the months
// before it, so at least months whole months of history stay. With
// months 12, on 2027-03-15 every index up to 2026.02 is expired and
// 2026.03 on is kept. The current and the previous month are never
// expired; months <= 0 keeps everything. Names that are not monthly
// indices of base ("<base>-YYYY.MM") are never returned.
func ExpiredIndices(base string, names []string, now time.Time, months int) []string {
	if months <= 0 {
		return nil
	}
	now = now.UTC()
	current := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	oldestKept := current.AddDate(0, -months, 0)
	var out []string
	for _, n := range names {
		if m, ok := MonthOfIndex(base, n); ok && m.Before(oldestKept) {
			out = append(out, n)
		}
	}
	return out
}

// OverlappingBases reports two bases of which the second starts with the
// first and a '-' ("jobsight-jobs" and "jobsight-jobs-gpu"): the first's
// pattern would match the second's monthly indices, and searches and
// retention of one would reach the other's documents.
func OverlappingBases(bases ...string) (a, b string, ok bool) {
	for _, x := range bases {
		for _, y := range bases {
			if x != "" && x != y && strings.HasPrefix(y, x+"-") {
				return x, y, true
			}
		}
	}
	return "", "", false
}
