// Package deliver sends what the agent measures to its stores —
// Elasticsearch for documents, Prometheus remote write for series — and to
// the on-node spool whatever a store does not take, replaying it later.
// It also decides, at write time and against what the store holds, the id
// of a job whose Slurm id was reused (jobmodel.ReuseDocID), so an older
// job's document is never overwritten.
package deliver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/jobsight/jobsight/agent/config"
	"github.com/jobsight/jobsight/agent/monitor"
	"github.com/jobsight/jobsight/agent/sink"
	"github.com/jobsight/jobsight/agent/sink/elasticsearch"
	"github.com/jobsight/jobsight/agent/sink/promremote"
	"github.com/jobsight/jobsight/agent/spool"
	"github.com/jobsight/jobsight/pkg/jobmodel"
)

// Spool targets.
const (
	targetES   = "elasticsearch"
	targetProm = "prometheus"
)

// Outputs implements the agent's outputs (monitor.Sink and jobagent.Outputs).
type Outputs struct {
	cfg    config.Config
	es     *elasticsearch.Client // nil: Elasticsearch not configured
	rw     *promremote.Client    // nil: Prometheus not configured
	spool  *spool.Spool
	health *monitor.Health
	log    *slog.Logger

	mu          sync.Mutex
	lastReplay  time.Time
	written     map[string]time.Time // document id -> updated_at of what this process stored
	indicesOK   bool
	resolved    map[string]string // job document id as Slurm gives it -> id in the store
	lastDropped map[sink.DocKind]uint64
	// lastRejected and lastCorrupt are the spool's set-aside counts the
	// health metrics have seen.
	lastRejected, lastCorrupt uint64
	refusedLogged             map[string]bool
}

// New builds the outputs the config asks for. Credentials are read from
// their files here; errors name the option, never the secret.
func New(ctx context.Context, cfg config.Config, health *monitor.Health, log *slog.Logger) (*Outputs, error) {
	o := &Outputs{cfg: cfg, health: health, log: log.With("component", "deliver"),
		resolved: map[string]string{}, lastDropped: map[sink.DocKind]uint64{}, written: map[string]time.Time{}}
	if len(cfg.Elasticsearch.URLs) > 0 {
		pw, err := config.ReadSecret("elasticsearch.password_file", cfg.Elasticsearch.PasswordFile)
		if err != nil {
			return nil, err
		}
		o.es, err = elasticsearch.New(elasticsearch.Config{
			URLs: cfg.Elasticsearch.URLs, Username: cfg.Elasticsearch.Username, Password: pw,
			CACertFile: cfg.Elasticsearch.CAFile, Timeout: cfg.Elasticsearch.Timeout, Logger: o.log,
		})
		if err != nil {
			return nil, err
		}
	}
	if cfg.Prometheus.RemoteWriteURL != "" {
		token, err := config.ReadSecret("prometheus.bearer_token_file", cfg.Prometheus.BearerTokenFile)
		if err != nil {
			return nil, err
		}
		pw, err := config.ReadSecret("prometheus.password_file", cfg.Prometheus.PasswordFile)
		if err != nil {
			return nil, err
		}
		o.rw, err = promremote.New(promremote.Config{URL: cfg.Prometheus.RemoteWriteURL, BearerToken: token,
			Username: cfg.Prometheus.Username, Password: pw, Timeout: cfg.Prometheus.Timeout})
		if err != nil {
			return nil, err
		}
	}
	var err error
	o.spool, err = spool.Open(cfg.Spool.Dir, spool.Options{MaxBytes: int64(cfg.Spool.MaxBytes), Logger: o.log})
	if err != nil {
		return nil, fmt.Errorf("spool.dir: %w", err)
	}
	return o, nil
}

// Close releases the outputs.
func (o *Outputs) Close() {}

// EnsureIndices creates the job and node indices with their mappings
// (idempotent; adds fields a newer agent knows to existing indices).
func (o *Outputs) EnsureIndices(ctx context.Context) error {
	if o.es == nil {
		return errors.New("elasticsearch.urls: not configured")
	}
	o.mu.Lock()
	ok := o.indicesOK
	o.mu.Unlock()
	if ok {
		return nil
	}
	if err := o.es.EnsureIndex(ctx, o.cfg.Elasticsearch.JobIndex, jobmodel.JobMapping()); err != nil {
		return err
	}
	if err := o.es.EnsureIndex(ctx, o.cfg.Elasticsearch.ResultIndex, jobmodel.ResultMapping()); err != nil {
		return err
	}
	if err := o.es.EnsureIndex(ctx, o.cfg.Elasticsearch.NodeIndex, jobmodel.NodeMapping()); err != nil {
		return err
	}
	o.mu.Lock()
	o.indicesOK = true
	o.mu.Unlock()
	return nil
}

// PushSeries sends series by remote write; a batch that fails for a reason
// that may pass is spooled as encoded. The series are not retained.
func (o *Outputs) PushSeries(ctx context.Context, series []monitor.Series) error {
	if o.rw == nil || len(series) == 0 {
		return nil
	}
	payload, err := promremote.Encode(series)
	if err != nil {
		return fmt.Errorf("encoding series: %w", err)
	}
	// Spooled batches go first: Prometheus refuses samples older than a
	// series' newest, so they must land before this newer batch.
	o.replayIfWaiting(ctx)
	err = o.rw.WriteEncoded(ctx, payload)
	if err == nil || errors.Is(err, promremote.ErrPermanent) {
		return err // Prometheus refused these samples for good (e.g. out of order)
	}
	o.noteRefusal("prometheus", err)
	if serr := o.spool.EnqueueSamples(targetProm, payload); serr != nil {
		return errors.Join(err, serr)
	}
	o.updateSpoolMetrics()
	return err
}

// PutNode writes a node document.
func (o *Outputs) PutNode(ctx context.Context, doc jobmodel.Node) error {
	if o.es == nil {
		return nil
	}
	body, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	return o.write(ctx, sink.Doc{Kind: sink.KindNodeDoc, Index: o.cfg.Elasticsearch.NodeIndex, ID: doc.DocID, Body: body})
}

// PutJob writes the job document: to Elasticsearch, or without one to a
// file in output_dir.
func (o *Outputs) PutJob(ctx context.Context, job jobmodel.Job) error {
	body, err := json.MarshalIndent(job, "", "  ")
	if err != nil {
		return err
	}
	if o.es == nil {
		if !job.Final {
			return nil
		}
		path := o.file(job.DocID)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("output_dir: %w", err)
		}
		return os.WriteFile(path, append(body, '\n'), 0o644)
	}
	return o.write(ctx, sink.Doc{Kind: sink.KindJobDoc, Index: o.cfg.Elasticsearch.JobIndex, ID: job.DocID, Body: body})
}

// PutResult writes a job's analysis to the results index (kept in the
// spool like a job document when the store is down). Without Elasticsearch
// the analysis is in the job document's file only.
func (o *Outputs) PutResult(ctx context.Context, r jobmodel.Result) error {
	if o.es == nil {
		return nil
	}
	body, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return o.write(ctx, sink.Doc{Kind: sink.KindJobDoc, Index: o.cfg.Elasticsearch.ResultIndex, ID: r.DocID, Body: body})
}

// Where says where a job's document went, for people.
func (o *Outputs) Where(docID string) string {
	if o.es == nil {
		return o.file(docID)
	}
	o.mu.Lock()
	id := o.resolved[docID]
	o.mu.Unlock()
	if id == "" {
		id = docID
	}
	return fmt.Sprintf("Elasticsearch index %s, id %s", o.cfg.Elasticsearch.JobIndex, id)
}

func (o *Outputs) file(docID string) string {
	name := strings.NewReplacer(":", "_", "/", "_", "@", "_").Replace(docID)
	return filepath.Join(o.cfg.OutputDir, "jobsight-"+name+".json")
}

// write stores one document, spooling it when the store does not take it.
func (o *Outputs) write(ctx context.Context, d sink.Doc) error {
	err := o.store(ctx, d)
	if err == nil {
		o.replaySoon(ctx)
		return nil
	}
	o.noteRefusal("elasticsearch", err)
	if serr := o.spool.EnqueueDoc(targetES, d); serr != nil {
		return errors.Join(err, fmt.Errorf("spooling %s: %w", d.ID, serr))
	}
	o.updateSpoolMetrics()
	return err
}

// store resolves the document's id and indexes it.
func (o *Outputs) store(ctx context.Context, d sink.Doc) error {
	return o.put(ctx, d, false)
}

// storeIfNewer is store for a spooled document: it is dropped, as
// superseded, when the store already holds a version of it at least as new
// (by updated_at) — written directly after the outage, or by the agent
// that finalized the job. Replaying it would overwrite newer data.
func (o *Outputs) storeIfNewer(ctx context.Context, d sink.Doc) error {
	return o.put(ctx, d, true)
}

func (o *Outputs) put(ctx context.Context, d sink.Doc, onlyIfNewer bool) error {
	if err := o.EnsureIndices(ctx); err != nil {
		return err
	}
	var meta stored
	if err := json.Unmarshal(d.Body, &meta); err != nil {
		return fmt.Errorf("document %s: %w", d.ID, err)
	}
	d, err := o.resolveDoc(ctx, d, meta)
	if err != nil {
		return err
	}
	mine := meta.updated()
	if onlyIfNewer {
		older, err := o.olderThanStored(ctx, d, mine)
		if err != nil || older {
			if older {
				o.log.Info("dropping a spooled document: the store holds a newer version", "id", d.ID)
			}
			return err
		}
	}
	// Through _bulk, the id travels in the JSON body: ids hold ':', '+'
	// and '/', which the document URL path would need escaped.
	failures, err := o.es.Bulk(ctx, []sink.Doc{d})
	if err != nil {
		return err
	}
	if len(failures) > 0 {
		return failures[0].Err
	}
	if !mine.IsZero() {
		o.mu.Lock()
		if mine.After(o.written[d.ID]) {
			o.written[d.ID] = mine
		}
		o.mu.Unlock()
	}
	return nil
}

// olderThanStored reports whether a version of d updated at or after mine
// (d's updated_at) is stored: written by this process (a search would not see a
// write of the last second), or found in the store.
func (o *Outputs) olderThanStored(ctx context.Context, d sink.Doc, mine time.Time) (bool, error) {
	if mine.IsZero() {
		return false, nil
	}
	o.mu.Lock()
	ours := o.written[d.ID]
	o.mu.Unlock()
	if !ours.Before(mine) {
		return true, nil
	}
	got, err := o.es.GetByIDs(ctx, d.Index, []string{d.ID})
	if err != nil {
		if errors.Is(err, elasticsearch.ErrNotFound) {
			return false, nil
		}
		return false, err
	}
	if raw := got[d.ID]; raw != nil {
		var theirs stored
		if json.Unmarshal(raw, &theirs) == nil && !theirs.updated().IsZero() && !theirs.updated().Before(mine) {
			return true, nil
		}
	}
	return false, nil
}

// Pending is how many items wait in the node's spool.
func (o *Outputs) Pending() int {
	st, err := o.spool.Stats()
	if err != nil {
		return 0
	}
	return st.Items
}

// noteRefusal counts a store's refusal of the agent's credentials and says
// so once per store and process, at error level, with what to fix: it is
// a configuration problem, not an outage, and the data waits in the spool
// (within spool.max_bytes) until it is fixed.
func (o *Outputs) noteRefusal(store string, err error) {
	if !errors.Is(err, sink.ErrAccessDenied) {
		return
	}
	if o.health != nil {
		o.health.SinkRefused.WithLabelValues(store).Inc()
	}
	o.mu.Lock()
	first := !o.refusedLogged[store]
	if o.refusedLogged == nil {
		o.refusedLogged = map[string]bool{}
	}
	o.refusedLogged[store] = true
	o.mu.Unlock()
	if first {
		o.log.Error(store+" refuses the agent's credentials: check "+store+".username and password_file (or the token); the data waits in the spool", "err", err)
	}
}

// Replay sends what waits in the node's spool (left by this agent or by
// earlier ones). Another agent replaying at the same time is not an error.
func (o *Outputs) Replay(ctx context.Context) {
	defer o.updateSpoolMetrics()
	// A target found down is skipped for the rest of this replay, and the
	// other target's items still go: one store's outage must not hold the
	// other's data back (Prometheus would then refuse it as too old).
	down := map[string]error{}
	err := o.spool.Replay(ctx, func(ctx context.Context, it spool.Item) error {
		if err := down[it.Target]; err != nil {
			return fmt.Errorf("%w: %v", spool.ErrKeep, err)
		}
		var err error
		switch it.Target {
		case targetES:
			if o.es == nil {
				return spool.ErrKeep
			}
			err = o.storeIfNewer(ctx, it.Doc())
			if errors.Is(err, sink.ErrAccessDenied) {
				o.noteRefusal("elasticsearch", err) // not the document's fault: keep it
			} else if err != nil && !errors.Is(err, elasticsearch.ErrUnavailable) {
				return fmt.Errorf("%w: %v", spool.ErrReject, err)
			}
		case targetProm:
			if o.rw == nil {
				return spool.ErrKeep
			}
			err = o.rw.WriteEncoded(ctx, it.Body)
			if errors.Is(err, promremote.ErrPermanent) {
				return fmt.Errorf("%w: %v", spool.ErrReject, err)
			}
			o.noteRefusal("prometheus", err)
		default:
			return fmt.Errorf("%w: unknown target %q", spool.ErrReject, it.Target)
		}
		if err != nil {
			down[it.Target] = err
			o.log.Info("spool replay: store still down; keeping its items", "target", it.Target, "err", err)
			return fmt.Errorf("%w: %v", spool.ErrKeep, err)
		}
		return nil
	})
	if err != nil && !errors.Is(err, spool.ErrBusy) {
		o.log.Info("spool replay stopped; will retry", "err", err)
	}
}

// replayInterval bounds how often a running agent tries the spool.
const replayInterval = 10 * time.Second

// replaySoon replays the spool when something waits in it, at most every
// replayInterval, so that data spooled during an outage reaches the stores
// while the job still runs, not only when it ends: Prometheus refuses
// samples that come hours late.
func (o *Outputs) replaySoon(ctx context.Context) {
	o.mu.Lock()
	due := time.Since(o.lastReplay) >= replayInterval
	o.mu.Unlock()
	if due {
		o.replayIfWaiting(ctx)
	}
}

// replayIfWaiting replays the spool when anything waits in it.
func (o *Outputs) replayIfWaiting(ctx context.Context) {
	o.mu.Lock()
	o.lastReplay = time.Now()
	o.mu.Unlock()
	st, err := o.spool.Stats()
	switch {
	case err != nil:
	case st.Items > 0:
		o.Replay(ctx) // refreshes the spool metrics when done
	default:
		o.setSpoolMetrics(st) // the spool may have been emptied by another agent
	}
}

// updateSpoolMetrics mirrors the spool's size and drops in the health
// metrics.
func (o *Outputs) updateSpoolMetrics() {
	if st, err := o.spool.Stats(); err == nil {
		o.setSpoolMetrics(st)
	}
}

// setSpoolMetrics sets the spool's health metrics from its stats.
func (o *Outputs) setSpoolMetrics(st spool.Stats) {
	if o.health == nil {
		return
	}
	o.health.SpoolBytes.Set(float64(st.Bytes))
	o.health.SpoolItems.Set(float64(st.Items))
	o.mu.Lock()
	defer o.mu.Unlock()
	for kind, n := range st.Dropped {
		if d := n - o.lastDropped[kind]; d > 0 {
			o.health.SpoolDropped.WithLabelValues(kind.String()).Add(float64(d))
			o.lastDropped[kind] = n
		}
	}
	if d := st.Rejected - o.lastRejected; d > 0 {
		o.health.SpoolSetAside.WithLabelValues("rejected").Add(float64(d))
		o.lastRejected = st.Rejected
	}
	if d := st.Corrupt - o.lastCorrupt; d > 0 {
		o.health.SpoolSetAside.WithLabelValues("corrupt").Add(float64(d))
		o.lastCorrupt = st.Corrupt
	}
}

// NodeDocs returns the stored node documents of a job.
func (o *Outputs) NodeDocs(ctx context.Context, jobDocID string) ([]jobmodel.Node, error) {
	if o.es == nil {
		return nil, nil
	}
	o.mu.Lock()
	if id := o.resolved[jobDocID]; id != "" {
		jobDocID = id
	}
	o.mu.Unlock()
	q, _ := json.Marshal(map[string]any{
		"size":  1000,
		"query": map[string]any{"bool": map[string]any{"filter": []any{map[string]any{"term": map[string]any{"job_doc_id": jobDocID}}}}},
	})
	raw, err := o.es.Search(ctx, o.cfg.Elasticsearch.NodeIndex, q)
	if err != nil {
		return nil, err
	}
	var ans struct {
		Hits struct {
			Hits []struct {
				Source jobmodel.Node `json:"_source"`
			} `json:"hits"`
		} `json:"hits"`
	}
	if err := json.Unmarshal(raw, &ans); err != nil {
		return nil, fmt.Errorf("node documents of %s: %w", jobDocID, err)
	}
	out := make([]jobmodel.Node, 0, len(ans.Hits.Hits))
	for _, h := range ans.Hits.Hits {
		if h.Source.JobDocID == jobDocID {
			out = append(out, h.Source)
		}
	}
	return out, nil
}

// ResolveDocID returns the id under which the job is stored (see resolve);
// when the store cannot be asked now it returns base, and the id is
// resolved again when the documents are written.
func (o *Outputs) ResolveDocID(ctx context.Context, base string, submit, start time.Time) string {
	if o.es == nil {
		return base
	}
	id, err := o.resolve(ctx, base, submit, start)
	if err != nil {
		return base
	}
	return id
}

// stored is what tells one job holding an id from another.
type stored struct {
	DocID      string         `json:"doc_id"`
	JobDocID   string         `json:"job_doc_id"`
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

// resolve decides the id of the job whose plain id is base: base, unless a
// different, older job holds it — a stored document with another submit
// time, or (when submit times are unknown) a final one that ended before
// this job started — in which case it is jobmodel.ReuseDocID(base, submit).
func (o *Outputs) resolve(ctx context.Context, base string, submit, start time.Time) (string, error) {
	o.mu.Lock()
	id, ok := o.resolved[base]
	o.mu.Unlock()
	if ok {
		return id, nil
	}
	id = base
	holder, err := o.holder(ctx, base)
	if err != nil {
		return "", err
	}
	if holder != nil && otherJob(*holder, submit, start) {
		when := submit
		if when.IsZero() {
			when = start
		}
		id = jobmodel.ReuseDocID(base, when)
		o.log.Info("job id reused: storing under a new id so the older job's document stays", "id", base, "new_id", id)
	}
	o.mu.Lock()
	o.resolved[base] = id
	o.mu.Unlock()
	return id, nil
}

// holder finds a stored document (job, else node) of the job id base.
func (o *Outputs) holder(ctx context.Context, base string) (*stored, error) {
	got, err := o.es.GetByIDs(ctx, o.cfg.Elasticsearch.JobIndex, []string{base})
	if err != nil && !errors.Is(err, elasticsearch.ErrNotFound) {
		return nil, err
	}
	if raw := got[base]; raw != nil {
		var s stored
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("stored job document %s: %w", base, err)
		}
		return &s, nil
	}
	q, _ := json.Marshal(map[string]any{"size": 1,
		"query": map[string]any{"bool": map[string]any{"filter": []any{map[string]any{"term": map[string]any{"job_doc_id": base}}}}}})
	raw, err := o.es.Search(ctx, o.cfg.Elasticsearch.NodeIndex, q)
	if err != nil {
		if errors.Is(err, elasticsearch.ErrNotFound) {
			return nil, nil
		}
		return nil, err
	}
	var ans struct {
		Hits struct {
			Hits []struct {
				Source stored `json:"_source"`
			} `json:"hits"`
		} `json:"hits"`
	}
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

func otherJob(s stored, submit, start time.Time) bool {
	if !submit.IsZero() && s.SubmitTime != nil {
		return s.SubmitTime.Unix() != submit.Unix()
	}
	return s.Final && s.EndTime != nil && !start.IsZero() && s.EndTime.Before(start)
}

// resolveDoc rewrites a job or node document (whose fields s holds) to its
// new id when its job id turned out to be reused.
func (o *Outputs) resolveDoc(ctx context.Context, d sink.Doc, s stored) (sink.Doc, error) {
	base := s.DocID
	if d.Kind == sink.KindNodeDoc {
		base = s.JobDocID
	}
	if base == "" || strings.Contains(base, jobmodel.ReuseSeparator) {
		return d, nil
	}
	var submit, start time.Time
	if s.SubmitTime != nil {
		submit = s.SubmitTime.Time
	}
	if s.StartTime != nil {
		start = s.StartTime.Time
	}
	id, err := o.resolve(ctx, base, submit, start)
	if err != nil || id == base {
		return d, err
	}
	var body map[string]any
	if err := json.Unmarshal(d.Body, &body); err != nil {
		return d, err
	}
	if d.Kind == sink.KindNodeDoc {
		body["job_doc_id"] = id
		body["doc_id"] = id + strings.TrimPrefix(s.DocID, base)
	} else {
		body["doc_id"] = id
	}
	d.ID, _ = body["doc_id"].(string)
	d.Body, err = json.Marshal(body)
	return d, err
}
