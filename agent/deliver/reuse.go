package deliver

// reuse.go: the ids of reused Slurm job ids, and "never overwrite a newer
// version", decided against what the store holds.

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/internal/store"
	"github.com/jobsight/jobsight/internal/store/elasticsearch"
)

// olderThanStored reports whether a version of d at least as new is
// stored: a version at least d's written by this process (a search would
// not see a write of the last second), or, found in the store, a final
// document where d is not, else one updated at or after mine (d's
// updated_at). A final document is never replaced by a running one and
// always replaces one, whatever the clocks said.
func (o *Outputs) olderThanStored(ctx context.Context, d store.Doc, mine time.Time, final bool) (bool, error) {
	if mine.IsZero() {
		return false, nil
	}
	o.mu.Lock()
	ours := o.written[o.writtenKey(d)]
	o.mu.Unlock()
	if d.Version > 0 && ours >= d.Version {
		return true, nil
	}
	got, err := o.es.GetByIDs(ctx, o.readIndices(d.Index), []string{d.ID})
	if err != nil {
		if errors.Is(err, elasticsearch.ErrNotFound) {
			return false, nil
		}
		return false, err
	}
	if raw := got[d.ID]; raw != nil {
		var theirs stored
		switch {
		case json.Unmarshal(raw, &theirs) != nil:
		case theirs.Final != final:
			return theirs.Final, nil
		case !theirs.updated().IsZero() && !theirs.updated().Before(mine):
			return true, nil
		}
	}
	return false, nil
}

// ClaimDocID is where the agent asks which id a job is stored under, once
// per job: when its watch begins (create: on the job's first node, which
// also writes the job's running document) and when a stop finalizes a job
// that no agent watched. It returns job.DocID (the plain id), or the job's
// reuse id when an older job holds the plain id (see decideFrom); with create,
// the error is the running document's write (spooled then).
func (o *Outputs) ClaimDocID(ctx context.Context, job jobmodel.Job, since time.Time, create bool) (string, error) {
	who := holderOf{sluid: job.SLUID, start: since}
	if job.SubmitTime != nil {
		who.submit = job.SubmitTime.Time
	}
	if o.es == nil {
		if !create {
			return job.DocID, nil
		}
		return job.DocID, o.PutJob(ctx, job)
	}
	base := job.DocID
	id, held, err := o.resolveHolder(ctx, base, who)
	if err != nil {
		id, held = base, nil // asked again when the documents are written
	}
	job.DocID = id
	if !create {
		return job.DocID, nil
	}
	return o.createJob(ctx, job, held)
}

// holderOf is what tells one job of an id from another: Slurm's SLUID
// where the release gives one (26.05 on), else the submit time, else
// (neither known) the start.
type holderOf struct {
	sluid         string
	submit, start time.Time
}

// stored is what tells one job holding an id from another.
type stored struct {
	DocID      string         `json:"doc_id"`
	JobDocID   string         `json:"job_doc_id"`
	SLUID      string         `json:"sluid"`
	SubmitTime *jobmodel.Time `json:"submit_time"`
	StartTime  *jobmodel.Time `json:"start_time"`
	EndTime    *jobmodel.Time `json:"end_time"`
	UpdatedAt  *jobmodel.Time `json:"updated_at"`
	Final      bool           `json:"final"`
}

// updated is the document's updated_at, zero when it has none.
func (s stored) updated() time.Time {
	if s.UpdatedAt == nil {
		return time.Time{}
	}
	return s.UpdatedAt.Time
}

// identityKey is the resolution cache's key: the job's identity, not its
// id alone (one process may write for two jobs of one id: an earlier one
// it finishes as lost).
func identityKey(base string, who holderOf) string {
	switch {
	case who.sluid != "":
		return base + "|" + who.sluid
	case who.submit.IsZero() && who.start.IsZero():
		return base
	}
	return base + "|" + strconv.FormatInt(cmp.Or(who.submit, who.start).Unix(), 10)
}

// remember caches the id a job is stored under.
func (o *Outputs) remember(base string, who holderOf, id string) {
	o.mu.Lock()
	o.resolved[base] = id // the latest, for Where and NodeDocs
	o.byIdentity[identityKey(base, who)] = id
	o.mu.Unlock()
}

// resolve is decideFrom behind a cache: the id of the job whose plain id is
// base, as decided the first time this process asked.
func (o *Outputs) resolve(ctx context.Context, base string, who holderOf) (string, error) {
	id, _, err := o.resolveHolder(ctx, base, who)
	return id, err
}

// resolveHolder is resolve that also says what it read: held is the
// stored document of base that decided, when this call asked the store
// (nil when it had decided before, or when nothing holds base).
func (o *Outputs) resolveHolder(ctx context.Context, base string, who holderOf) (id string, held *readHolder, err error) {
	key := identityKey(base, who)
	o.mu.Lock()
	id, ok := o.byIdentity[key]
	o.mu.Unlock()
	if ok {
		return id, nil, nil
	}
	h, err := o.holder(ctx, base)
	if err != nil {
		return "", nil, err
	}
	id, reused := decideFrom(h, base, who)
	if reused {
		o.log.Info("job id reused: storing under a new id so the older job's document stays", "id", base, "new_id", id)
	}
	o.remember(base, who, id)
	return id, &readHolder{doc: h}, nil
}

// readHolder is what the store held under a plain id when it was just
// asked: a job document, a node document of the id, or nothing (doc nil).
type readHolder struct{ doc *stored }

// finalJob reports whether what was read is the final job document of
// the job who, under id.
func (r *readHolder) finalJob(id string, who holderOf) bool {
	return r.doc != nil && r.doc.DocID == id && r.doc.JobDocID == "" && r.doc.Final && !otherJob(*r.doc, who)
}

// decideFrom is the one decision on a reused Slurm job id: the id of the job
// whose plain id is base is base, unless a different, older job holds it
// — a stored document with another SLUID, or (SLUIDs unknown) another
// submit time, or (submit times unknown too) a final one that ended
// before this job started — in which case it is jobmodel.ReuseDocID(base,
// submit, else start) and reused is true. Document ids stay
// <cluster>:<jobid>[@<submit>] whatever told the jobs apart, so a site's
// history stays continuous across a Slurm upgrade. holder is the stored
// document that holds base (holder; nil: none).
func decideFrom(holder *stored, base string, who holderOf) (id string, reused bool) {
	if holder == nil || !otherJob(*holder, who) {
		return base, false
	}
	return jobmodel.ReuseDocID(base, cmp.Or(who.submit, who.start)), true
}

// holder finds a stored document (job, else node) of the job id base.
func (o *Outputs) holder(ctx context.Context, base string) (*stored, error) {
	if s, err := o.storedJob(ctx, base); err != nil || s != nil {
		return s, err
	}
	q, _ := json.Marshal(map[string]any{"size": 1,
		"query": map[string]any{"bool": map[string]any{"filter": []any{map[string]any{"term": map[string]any{"job_doc_id": base}}}}}})
	raw, err := o.es.Search(ctx, jobmodel.SearchIndices(o.cfg.Elasticsearch.NodeIndex), q)
	if err != nil {
		if errors.Is(err, elasticsearch.ErrNotFound) {
			return nil, nil
		}
		return nil, err
	}
	var ans store.SearchAnswer[stored]
	if err := json.Unmarshal(raw, &ans); err != nil {
		return nil, err
	}
	for _, h := range ans.Hits.Hits {
		if h.Source.JobDocID == base {
			return &h.Source, nil
		}
	}
	return nil, nil
}

// otherJob reports whether the stored document s is another job's than
// who's: by SLUID when both have one (a controller reset or a clock step
// can give two jobs of one id one submit second; two SLUIDs never
// collide), else by submit time, else by s having ended before who
// started.
func otherJob(s stored, who holderOf) bool {
	if who.sluid != "" && s.SLUID != "" {
		return s.SLUID != who.sluid
	}
	if !who.submit.IsZero() && s.SubmitTime != nil {
		return s.SubmitTime.Unix() != who.submit.Unix()
	}
	return s.Final && s.EndTime != nil && !who.start.IsZero() && s.EndTime.Before(who.start)
}

// resolveDoc rewrites a job or node document (whose fields s holds) to its
// new id when its job id turned out to be reused.
func (o *Outputs) resolveDoc(ctx context.Context, d store.Doc, s stored) (store.Doc, error) {
	base := s.DocID
	if d.Kind == store.KindNodeDoc {
		base = s.JobDocID
	}
	if base == "" || strings.Contains(base, jobmodel.ReuseSeparator) {
		return d, nil
	}
	who := holderOf{sluid: s.SLUID}
	if s.SubmitTime != nil {
		who.submit = s.SubmitTime.Time
	}
	if s.StartTime != nil {
		who.start = s.StartTime.Time
	}
	id, err := o.resolve(ctx, base, who)
	if err != nil || id == base {
		return d, err
	}
	var body map[string]any
	if err := json.Unmarshal(d.Body, &body); err != nil {
		return d, err
	}
	if d.Kind == store.KindNodeDoc {
		body["job_doc_id"] = id
		body["doc_id"] = id + strings.TrimPrefix(s.DocID, base)
	} else {
		body["doc_id"] = id
	}
	d.ID, _ = body["doc_id"].(string)
	d.Body, err = json.Marshal(body)
	return d, err
}

// probeVersions asks the server, once per process and before the first
// job's first write, whether it honours external versions: a search of the
// job index for its newest documents, with their versions. A document
// whose stored _version is at least its updated_at in microseconds kept
// the external version an agent sent (Elasticsearch, OpenSearch); hits
// without a _version come from a server that ignores versions (ZincSearch
// sends none). No hits (an empty or missing index) leave it unknown, and
// the first versioned write's answer tells. Learning it only from an
// answer meant that an agent of one job (an exclusive node) never knew it
// in time for its job's first write. An unreachable server is asked again
// at the next write.
func (o *Outputs) probeVersions(ctx context.Context) {
	if o.es == nil {
		return
	}
	o.mu.Lock()
	probed := o.probed
	o.mu.Unlock()
	if _, known := o.es.VersionsKnown(); probed || known {
		return
	}
	q, _ := json.Marshal(map[string]any{
		"size": 5, "version": true, // newest first (documents without updated_at sort last)
		"sort": []any{map[string]any{"updated_at": map[string]any{"order": "desc"}}},
	})
	raw, err := o.es.Search(ctx, jobmodel.SearchIndices(o.cfg.Elasticsearch.JobIndex), q)
	if errors.Is(err, elasticsearch.ErrUnavailable) {
		return
	}
	o.mu.Lock()
	o.probed = true
	o.mu.Unlock()
	if err != nil {
		o.log.Debug("could not ask whether the server honours document versions", "err", err)
		return
	}
	var ans struct {
		Hits struct {
			Hits []struct {
				Version *int64 `json:"_version"`
				Source  stored `json:"_source"`
			} `json:"hits"`
		} `json:"hits"`
	}
	if err := json.Unmarshal(raw, &ans); err != nil || len(ans.Hits.Hits) == 0 {
		return
	}
	for _, h := range ans.Hits.Hits {
		if h.Version == nil {
			o.es.NoteVersions(false)
			return
		}
		if up := h.Source.updated(); !up.IsZero() && *h.Version >= up.UnixMicro() {
			o.es.NoteVersions(true)
			return
		}
	}
}

// CreateJob writes a job's first document. Unless the server is known to
// ignore versions (ZincSearch: then it is PutJob after ClaimDocID's id
// check), it is a create: the server, not a search, says whether a
// document with the id exists, and when one of another job does (a reused
// id the lookup missed), this job is stored under its reuse id instead.
// Whether the server honours versions is asked first (probeVersions); when
// that cannot be told (nothing stored yet) a create is still right: a
// server that ignores versions takes it as an index.
// It returns the id the job is stored under.
func (o *Outputs) CreateJob(ctx context.Context, job jobmodel.Job) (string, error) {
	if o.es == nil {
		return job.DocID, o.PutJob(ctx, job)
	}
	return o.createJob(ctx, job, nil)
}

// createJob is CreateJob; held, when not nil, is what the store held
// under the job's plain id a moment ago (ClaimDocID's id check read it),
// which spares putUnlessFinal its read: on a slow store every request
// delays the job's first sample.
func (o *Outputs) createJob(ctx context.Context, job jobmodel.Job, held *readHolder) (string, error) {
	if strings.Contains(job.DocID, jobmodel.ReuseSeparator) {
		return job.DocID, o.putUnlessFinal(ctx, job, nil)
	}
	if err := o.EnsureIndices(ctx); err != nil {
		// Never write before the indices exist with their mappings: a
		// server that creates a missing index on a write (ZincSearch)
		// would map every field by guess. Unreachable: spooled there.
		return job.DocID, o.PutJob(ctx, job)
	}
	o.probeVersions(ctx)
	if honoured, known := o.es.VersionsKnown(); known && !honoured {
		return job.DocID, o.putUnlessFinal(ctx, job, held)
	}
	body, err := json.Marshal(job)
	if err != nil {
		return job.DocID, err
	}
	d := store.Doc{Kind: store.KindJobDoc, Index: job.IndexOf(o.cfg.Elasticsearch.JobIndex, time.Now()), ID: job.DocID, Body: body, Create: true}
	failures, err := o.es.Bulk(ctx, []store.Doc{d})
	if err == nil && len(failures) == 0 {
		return job.DocID, nil
	}
	if err != nil || !errors.Is(failures[0].Err, elasticsearch.ErrExists) {
		return job.DocID, o.PutJob(ctx, job) // an outage: spooled there
	}
	who := holderOfJob(job)
	held = nil // read before the create: the server has since said otherwise
	if h, err := o.holder(ctx, job.DocID); err == nil {
		if id, reused := decideFrom(h, job.DocID, who); reused {
			base := job.DocID
			job.DocID = id
			o.remember(base, who, job.DocID)
			o.log.Info("job id reused (the store refused to create it): storing under a new id so the older job's document stays",
				"id", base, "new_id", job.DocID)
		} else {
			held = &readHolder{doc: h} // what holds the id is this job's: putUnlessFinal needs no second read
		}
	}
	return job.DocID, o.putUnlessFinal(ctx, job, held)
}

// putUnlessFinal is PutJob for a job's running document, which must never
// replace the job's final one: a watch that begins after the job was
// finalized (a late or repeated start, a checkpoint resumed by a new
// agent) would otherwise turn a finished job back into a running one, in
// a store that ignores versions (ZincSearch) and in one that honours them
// alike (the running document is the newer). One read of the stored
// document, unless held is what the store held under this id a moment
// ago; when the store cannot answer, the document is written (or
// spooled, and its replay checks again: olderThanStored).
func (o *Outputs) putUnlessFinal(ctx context.Context, job jobmodel.Job, held *readHolder) error {
	if !job.Final {
		who := holderOfJob(job)
		if held == nil {
			s, err := o.storedJob(ctx, job.DocID)
			if err != nil {
				s = nil
			}
			held = &readHolder{doc: s}
		}
		if held.finalJob(job.DocID, who) {
			o.log.Info("the job's final document is stored already; its running document is not written",
				"doc_id", job.DocID, "final_updated_at", held.doc.updated())
			return nil
		}
	}
	return o.PutJob(ctx, job)
}

// storedJob reads the stored job document id; nil when there is none.
func (o *Outputs) storedJob(ctx context.Context, id string) (*stored, error) {
	got, err := o.es.GetByIDs(ctx, jobmodel.SearchIndices(o.cfg.Elasticsearch.JobIndex), []string{id})
	if err != nil {
		if errors.Is(err, elasticsearch.ErrNotFound) {
			return nil, nil
		}
		return nil, err
	}
	raw := got[id]
	if raw == nil {
		return nil, nil
	}
	var s stored
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("stored job document %s: %w", id, err)
	}
	return &s, nil
}

// holderOfJob is what tells job from another job of its id.
func holderOfJob(job jobmodel.Job) holderOf {
	who := holderOf{sluid: job.SLUID}
	if job.SubmitTime != nil {
		who.submit = job.SubmitTime.Time
	}
	if job.StartTime != nil {
		who.start = job.StartTime.Time
	}
	return who
}
