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
	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/internal/spool"
	"github.com/jobsight/jobsight/internal/store"
	"github.com/jobsight/jobsight/internal/store/elasticsearch"
	"github.com/jobsight/jobsight/internal/store/promremote"
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

	// order serialises replaying the spool and sending series: the
	// spooled batches of a series must reach Prometheus before newer
	// ones (it refuses out-of-order samples), and with several jobs on a
	// node a replay and a new push could otherwise overlap.
	order sync.Mutex

	mu          sync.Mutex
	lastReplay  time.Time
	written     map[string]time.Time // document id -> updated_at of what this process stored
	indicesOK   bool
	resolved    map[string]string // job document id as Slurm gives it -> id in the store (latest)
	byIdentity  map[string]string // the same by id and submit time
	lastDropped map[store.DocKind]uint64
	// lastRejected and lastCorrupt are the spool's set-aside counts the
	// health metrics have seen.
	lastRejected, lastCorrupt uint64
	refusedLogged             map[string]bool
}

// New builds the outputs the config asks for. Credentials are read from
// their files here; errors name the option, never the secret.
func New(ctx context.Context, cfg config.Config, health *monitor.Health, log *slog.Logger) (*Outputs, error) {
	o := &Outputs{cfg: cfg, health: health, log: log.With("component", "deliver"),
		resolved: map[string]string{}, byIdentity: map[string]string{}, lastDropped: map[store.DocKind]uint64{}, written: map[string]time.Time{}}
	if len(cfg.Elasticsearch.URLs) > 0 {
		var err error
		if o.es, err = elasticsearch.FromConfig(cfg.Elasticsearch.Elasticsearch, o.log); err != nil {
			return nil, err
		}
	}
	if cfg.Prometheus.RemoteWriteURL != "" {
		var err error
		if o.rw, err = promremote.FromConfig(cfg.Prometheus.RemoteWrite, o.log); err != nil {
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
	o.order.Lock()
	defer o.order.Unlock()
	if waiting := o.replayIfWaitingLocked(ctx); waiting > 0 {
		// Older batches are still spooled: this one queues behind them
		// (sent now, it would make Prometheus refuse them as out of order).
		err = fmt.Errorf("remote write: %d older batches still wait in the spool; queued behind them", waiting)
	} else {
		err = o.rw.WriteEncoded(ctx, payload)
	}
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
	return o.write(ctx, store.Doc{Kind: store.KindNodeDoc, Index: o.cfg.Elasticsearch.NodeIndex, ID: doc.DocID, Body: body})
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
	return o.write(ctx, store.Doc{Kind: store.KindJobDoc, Index: o.cfg.Elasticsearch.JobIndex, ID: job.DocID, Body: body})
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
	return o.write(ctx, store.Doc{Kind: store.KindJobDoc, Index: o.cfg.Elasticsearch.ResultIndex, ID: r.DocID, Body: body})
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
func (o *Outputs) write(ctx context.Context, d store.Doc) error {
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
func (o *Outputs) store(ctx context.Context, d store.Doc) error {
	return o.put(ctx, d, false)
}

// storeIfNewer is store for a spooled document: it is dropped, as
// superseded, when the store already holds a version of it at least as new
// (by updated_at) — written directly after the outage, or by the agent
// that finalized the job. Replaying it would overwrite newer data.
func (o *Outputs) storeIfNewer(ctx context.Context, d store.Doc) error {
	return o.put(ctx, d, true)
}

func (o *Outputs) put(ctx context.Context, d store.Doc, onlyIfNewer bool) error {
	if err := o.EnsureIndices(ctx); err != nil {
		return err
	}
	d, mine, skip, err := o.prepare(ctx, d, onlyIfNewer)
	if err != nil || skip {
		return err
	}
	// Through _bulk, the id travels in the JSON body: ids hold ':', '+'
	// and '/', which the document URL path would need escaped.
	failures, err := o.es.Bulk(ctx, []store.Doc{d})
	if err != nil {
		return err
	}
	if len(failures) > 0 {
		return failures[0].Err
	}
	o.noteWritten(d.ID, mine)
	return nil
}

// prepare resolves a document's id (a reused job id) and sets its
// version; skip is true when a spooled document is older than what the
// store holds (dropped as superseded).
func (o *Outputs) prepare(ctx context.Context, d store.Doc, onlyIfNewer bool) (_ store.Doc, mine time.Time, skip bool, err error) {
	var meta stored
	if err := json.Unmarshal(d.Body, &meta); err != nil {
		return d, mine, false, fmt.Errorf("document %s: %w", d.ID, err)
	}
	if d, err = o.resolveDoc(ctx, d, meta); err != nil {
		return d, mine, false, err
	}
	mine = meta.updated()
	if !mine.IsZero() {
		// The server decides where it can (Elasticsearch: a version at
		// least as new is kept, this write answered as superseded)...
		d.Version = mine.UnixMicro()
	}
	// ... and where it cannot (ZincSearch ignores versions), a replay is
	// checked against the stored version first.
	if onlyIfNewer && !o.es.HonoursVersions() {
		older, err := o.olderThanStored(ctx, d, mine)
		if older {
			o.log.Info("dropping a spooled document: the store holds a newer version", "id", d.ID)
		}
		return d, mine, older, err
	}
	return d, mine, false, nil
}

// noteWritten records the version of a document this process stored.
func (o *Outputs) noteWritten(id string, mine time.Time) {
	if mine.IsZero() {
		return
	}
	o.mu.Lock()
	if mine.After(o.written[id]) {
		o.written[id] = mine
	}
	o.mu.Unlock()
}

// PutNodes writes node documents (the running documents of every job on
// the node, at a flush) in one bulk request; what the store does not take
// is spooled, document by document.
func (o *Outputs) PutNodes(ctx context.Context, docs []jobmodel.Node) error {
	if o.es == nil || len(docs) == 0 {
		return nil
	}
	if len(docs) == 1 {
		return o.PutNode(ctx, docs[0])
	}
	batch := make([]store.Doc, 0, len(docs))
	versions := make([]time.Time, 0, len(docs))
	var errs []error
	spool := func(d store.Doc, err error) {
		o.noteRefusal("elasticsearch", err)
		if serr := o.spool.EnqueueDoc(targetES, d); serr != nil {
			err = errors.Join(err, fmt.Errorf("spooling %s: %w", d.ID, serr))
		}
		errs = append(errs, err)
	}
	ensured := o.EnsureIndices(ctx)
	for _, doc := range docs {
		body, err := json.Marshal(doc)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		d := store.Doc{Kind: store.KindNodeDoc, Index: o.cfg.Elasticsearch.NodeIndex, ID: doc.DocID, Body: body}
		if ensured != nil {
			spool(d, ensured)
			continue
		}
		pd, mine, _, err := o.prepare(ctx, d, false)
		if err != nil {
			spool(d, err)
			continue
		}
		batch, versions = append(batch, pd), append(versions, mine)
	}
	if len(batch) > 0 {
		failures, err := o.es.Bulk(ctx, batch)
		failed := map[string]bool{}
		for _, f := range failures {
			failed[f.Doc.ID] = true
			spool(f.Doc, f.Err)
		}
		for i, d := range batch {
			switch {
			case err != nil:
				spool(d, err)
			case !failed[d.ID]:
				o.noteWritten(d.ID, versions[i])
			}
		}
	}
	o.updateSpoolMetrics()
	if len(errs) == 0 {
		o.replaySoon(ctx)
	}
	return errors.Join(errs...)
}

// olderThanStored reports whether a version of d updated at or after mine
// (d's updated_at) is stored: written by this process (a search would not see a
// write of the last second), or found in the store.
// Pending is how many items wait in the node's spool.
// noteRefusal counts a store's refusal of the agent's credentials and says
// so once per store and process, at error level, with what to fix: it is
// a configuration problem, not an outage, and the data waits in the spool
// (within spool.max_bytes) until it is fixed.
// Replay sends what waits in the node's spool (left by this agent or by
// earlier ones). Another agent replaying at the same time is not an error.
// replayInterval bounds how often a running agent tries the spool.
// replaySoon replays the spool when something waits in it, at most every
// replayInterval, so that data spooled during an outage reaches the stores
// while the job still runs, not only when it ends: Prometheus refuses
// samples that come hours late.
// replayIfWaiting replays the spool when anything waits in it.
// updateSpoolMetrics mirrors the spool's size and drops in the health
// metrics.
// setSpoolMetrics sets the spool's health metrics from its stats.
// NodeDocs returns the stored node documents of a job.
// ResolveDocID returns the id under which the job is stored (see resolve);
// when the store cannot be asked now it returns base, and the id is
// resolved again when the documents are written.
// stored is what tells one job holding an id from another.
// updated is the document's updated_at, zero when it has none.
// resolve decides the id of the job whose plain id is base: base, unless a
// different, older job holds it — a stored document with another submit
// time, or (when submit times are unknown) a final one that ended before
// this job started — in which case it is jobmodel.ReuseDocID(base, submit).
// holder finds a stored document (job, else node) of the job id base.
// resolveDoc rewrites a job or node document (whose fields s holds) to its
// new id when its job id turned out to be reused.
