package slurm

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// This file reads the cluster-state collector's narrow squeue answer:
// `squeue --noheader --all -O <PollFields>`, one line per job record with
// every field followed by the unit separator (0x1F). It answers what the
// collector counts (state, partitions, CPUs, GPUs requested and held,
// nodes, start time, pending reason) for every release 22.05-26.05: the
// -O field names and their printing have not changed across them, unlike
// the JSON data parsers. At 10,000 jobs it is about 1/40 of the size of
// `squeue --json` on 26.05 and costs squeue a fraction of the time (no
// data parser, no detail flag: docs/performance.md).
//
// No field a user writes is asked for (no name, comment, command, path or
// user name): a field is Slurm's own vocabulary (states, partition and
// node names an admin set, TRES strings Slurm builds) or a number, and the
// reason (the last field, which may hold a description slurmctld or a
// site's job_submit plugin wrote) cannot shift the others. A record with
// a separator or a line break of its own has the wrong number of fields
// and refuses the whole answer: the collector keeps its last good state.

// pollSep ends every field of a line.
const pollSep = "\x1f"

// PollFields are squeue's -O fields of the narrow answer, in order.
var PollFields = []string{
	"JobId",        // numeric: an array task's and a het component's own id
	"JobArrayId",   // "123", "123_4", "123_[1-9%2]" (a pending array's tasks), "123+1"
	"State",        // job_state_string: a flag word where one is set
	"Partition",    // comma-separated while pending for several
	"NumCPUs",      // CPUs requested (pending) or allocated
	"NumNodes",     // nodes requested or allocated
	"NumTasks",     // tasks requested
	"tres-alloc",   // the allocated TRES, or the requested ones while pending
	"tres-per-job", // the GPU requests, "N/A" when unset
	"tres-per-node",
	"tres-per-socket",
	"tres-per-task",
	"StartTime", // Unix seconds under SLURM_TIME_FORMAT=%s; "N/A" when none
	"NodeList",
	"Reason", // last: a description may hold anything but the separator
}

// PollFormat is the -O argument for PollFields: width 0 (never cut) and
// the separator as each field's suffix.
func PollFormat() string {
	parts := make([]string, len(PollFields))
	for i, f := range PollFields {
		parts[i] = f + ":0" + pollSep
	}
	return strings.Join(parts, ",")
}

// PollEnv is the environment the narrow answer needs: start times as Unix
// seconds, and a pending array's task expression in full (squeue cuts it
// at 64 characters with "..." otherwise, which counts a sparse array as
// one job).
var PollEnv = []string{"SLURM_TIME_FORMAT=%s", "SLURM_BITSTR_LEN=0"}

// MaxPollLine bounds one line of the narrow answer; a longer one (a
// node list or TRES string of that size is not Slurm's) refuses the
// answer.
const MaxPollLine = 1 << 20

// DecodeSqueueText reads the narrow answer into job records (the same
// SqueueJob the JSON reader gives, with the fields the answer holds). Any
// line that is not a whole record of known shape refuses the answer, with
// an error naming the line and the field; an empty answer is no jobs.
func DecodeSqueueText(out []byte) (*SqueueAnswer, error) {
	a := &SqueueAnswer{Jobs: []SqueueJob{}}
	n := bytes.Count(out, []byte{'\n'})
	a.Jobs = make([]SqueueJob, 0, n+1)
	line := 0
	for len(out) > 0 {
		line++
		var l []byte
		if i := bytes.IndexByte(out, '\n'); i >= 0 {
			l, out = out[:i], out[i+1:]
		} else {
			l, out = out, nil
		}
		if len(l) == 0 {
			continue
		}
		if len(l) > MaxPollLine {
			return nil, fmt.Errorf("squeue line %d: %d bytes, more than a job record holds", line, len(l))
		}
		var j SqueueJob
		if err := j.readPollLine(string(l)); err != nil {
			return nil, fmt.Errorf("squeue line %d: %w", line, err)
		}
		a.Jobs = append(a.Jobs, j)
	}
	return a, nil
}

// readPollLine fills j from one line of the narrow answer.
func (j *SqueueJob) readPollLine(l string) error {
	f := strings.Split(l, pollSep)
	if len(f) != len(PollFields)+1 || f[len(f)-1] != "" {
		return fmt.Errorf("%d fields, want %d each ended by 0x1F (a cut line, or another -O list)", len(f)-1, len(PollFields))
	}
	id, err := strconv.ParseUint(f[0], 10, 32)
	if err != nil || id == 0 {
		return fmt.Errorf("JobId %q: want a job id", clip(f[0]))
	}
	*j = SqueueJob{JobID: uint32(id), JobState: stateWithBase(f[2]), Partition: na(f[3]), Nodes: nodeList(f[13])}
	if err := j.readArrayID(f[1]); err != nil {
		return err
	}
	for _, c := range []struct {
		name string
		v    string
		to   *int64
	}{{"NumCPUs", f[4], &j.CPUs}, {"NumNodes", f[5], &j.NodeCount}, {"NumTasks", f[6], &j.Tasks}} {
		if c.v == "N/A" || c.v == "" {
			continue
		}
		n, err := strconv.ParseUint(c.v, 10, 32)
		if err != nil {
			return fmt.Errorf("%s %q: want a count", c.name, clip(c.v))
		}
		// 4294967294 (NO_VAL) and the like are "not set".
		if n < 1<<31 {
			*c.to = int64(n)
		}
	}
	// Only a job that has not started holds its request in tres-alloc.
	if baseState(j.JobState) == "PENDING" {
		j.TRESReq = na(f[7])
	} else {
		j.TRESAlloc = na(f[7])
	}
	j.TRESPerJob, j.TRESPerNode, j.TRESPerSocket, j.TRESPerTask = na(f[8]), na(f[9]), na(f[10]), na(f[11])
	if s := f[12]; s != "N/A" && s != "" && s != "Unknown" {
		t, err := strconv.ParseInt(s, 10, 64)
		if err != nil || t < 0 {
			return fmt.Errorf("StartTime %q: want Unix seconds (SLURM_TIME_FORMAT=%%s)", clip(s))
		}
		j.StartTime = t
	}
	j.StateReason = reasonWord(f[14])
	return nil
}

// readArrayID reads JobArrayId: "123" (a plain job), "123_4" (an array
// task), "123_[1-9%2]" (a pending array's tasks not yet split off),
// "123+1" (a het job's component).
func (j *SqueueJob) readArrayID(s string) error {
	bad := func() error { return fmt.Errorf("JobArrayId %q: want 123, 123_4, 123_[1-9] or 123+1", clip(s)) }
	num := func(v string) (uint32, bool) {
		n, err := strconv.ParseUint(v, 10, 32)
		return uint32(n), err == nil
	}
	if a, t, ok := strings.Cut(s, "_"); ok {
		aid, ok := num(a)
		if !ok {
			return bad()
		}
		j.ArrayJobID = aid
		if strings.HasPrefix(t, "[") && strings.HasSuffix(t, "]") {
			j.ArrayTaskString = t[1 : len(t)-1]
			if j.ArrayTaskString == "" {
				return bad()
			}
			return nil
		}
		tid, ok := num(t)
		if !ok {
			return bad()
		}
		v := int64(tid)
		j.ArrayTaskID = &v
		return nil
	}
	if h, o, ok := strings.Cut(s, "+"); ok {
		hid, ok1 := num(h)
		off, ok2 := num(o)
		if !ok1 || !ok2 || off > 1<<16 {
			return bad()
		}
		j.HetJobID, j.HetJobOffset = hid, int(off)
		return nil
	}
	if _, ok := num(s); !ok {
		return bad()
	}
	return nil
}

// flagBase is the base state of a job whose state squeue prints as a
// flag word (job_state_string prints a set flag instead of the base
// state): a job configuring, resizing or stopped holds its nodes; one
// requeued or held on a requeue or a deleted reservation waits. Other
// flag words (COMPLETING, STAGE_OUT, SIGNALING) belong to jobs on their
// way out and stay as they are, counted neither running nor pending.
var flagBase = map[string]string{
	"CONFIGURING": "RUNNING", "RESIZING": "RUNNING", "STOPPED": "RUNNING",
	"REQUEUED": "PENDING", "REQUEUE_HOLD": "PENDING", "REQUEUE_FED": "PENDING", "SPECIAL_EXIT": "PENDING",
	"RESV_DEL_HOLD": "PENDING", "EXPEDITING": "PENDING",
}

// stateWithBase writes a flag word as the JSON answer does, base state
// first ("RUNNING,CONFIGURING"), so that both answers read alike.
func stateWithBase(s string) string {
	s = strings.TrimSpace(s)
	if b, ok := flagBase[s]; ok {
		return b + "," + s
	}
	return s
}

// na is a field squeue prints as "N/A" (or "(null)") when unset.
func na(s string) string {
	if s == "N/A" || s == "(null)" {
		return ""
	}
	return s
}

// nodeList is a job's node list; squeue prints nothing, "(null)" or
// "N/A" before it has nodes.
func nodeList(s string) string { return na(strings.TrimSpace(s)) }

// reasonWord is a pending reason's name: squeue prints the description
// slurmctld wrote where it wrote one ("ReqNodeNotAvail, UnavailableNodes:n1"),
// whose first word is the reason's name as the JSON answer's state_reason
// gives it.
func reasonWord(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, ", :"); i >= 0 {
		s = s[:i]
	}
	return s
}
