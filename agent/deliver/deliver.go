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
	"github.com/jobsight/jobsight/internal/privdir"
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

	mu         sync.Mutex
	lastReplay time.Time
	// sent is the last external version this process gave each document
	// (by index and id): versions only go up, even when the clock steps
	// back (see nextVersion). written is the version of what this process
	// stored, by index family and document id (writtenKey).
	sent, written map[string]int64
	// probed: the server was asked whether it honours external versions
	// (see probeVersions).
	probed bool
	// waitReason is why each store's items wait in the spool, from its
	// last try (see waitReason); empty when its last try went through.
	waitReason  map[string]string
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
		resolved: map[string]string{}, byIdentity: map[string]string{}, lastDropped: map[store.DocKind]uint64{},
		sent: map[string]int64{}, written: map[string]int64{}, waitReason: map[string]string{}}
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

// EnsureIndices makes sure of this month's job, result and node indices
// with their mappings (idempotent; adds fields a newer agent knows to
// existing indices), and has the client do the same for each other
// month's index before its first write there (see jobmodel's indices.go).
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
	now := time.Now()
	if err := o.es.EnsurePartitioned(ctx, o.cfg.Elasticsearch.JobIndex, jobmodel.JobMapping(), now); err != nil {
		return err
	}
	if err := o.es.EnsurePartitioned(ctx, o.cfg.Elasticsearch.ResultIndex, jobmodel.ResultMapping(), now); err != nil {
		return err
	}
	if err := o.es.EnsurePartitioned(ctx, o.cfg.Elasticsearch.NodeIndex, jobmodel.NodeMapping(), now); err != nil {
		return err
	}
	o.mu.Lock()
	o.indicesOK = true
	o.mu.Unlock()
	return nil
}

// PutTemplates puts the index templates of the job, result and node
// indices ("<base>" for "<base>-*", with the mapping), for the monthly
// indices something other than an agent creates. It needs the
// manage_index_templates cluster privilege, which agents do not need
// otherwise: `jobsight-agent setup` calls it, run with an administrator's
// credentials (docs/indices.md).
func (o *Outputs) PutTemplates(ctx context.Context) error {
	if o.es == nil {
		return errors.New("elasticsearch.urls: not configured")
	}
	for _, t := range []struct {
		base    string
		mapping []byte
	}{{o.cfg.Elasticsearch.JobIndex, jobmodel.JobMapping()}, {o.cfg.Elasticsearch.ResultIndex, jobmodel.ResultMapping()},
		{o.cfg.Elasticsearch.NodeIndex, jobmodel.NodeMapping()}} {
		if err := o.es.PutTemplate(ctx, t.base, t.mapping); err != nil {
			return err
		}
	}
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
	o.noteWaiting(targetProm, err)
	if serr := o.spool.EnqueueSamples(targetProm, payload); serr != nil {
		return errors.Join(err, serr)
	}
	o.updateSpoolMetrics()
	return fmt.Errorf("%w; %w", err, spool.ErrSpooled)
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
	index := doc.IndexOf(o.cfg.Elasticsearch.NodeIndex, time.Now())
	return o.write(ctx, store.Doc{Kind: store.KindNodeDoc, Index: index, ID: doc.DocID, Body: body,
		Version: o.nextVersion(index, doc.DocID, doc.UpdatedAt)})
}

// PutJob writes the job document: to Elasticsearch, or without one to a
// file in output_dir. A failed write returns an error; one that wraps
// spool.ErrSpooled says the document is safe in the spool.
func (o *Outputs) PutJob(ctx context.Context, job jobmodel.Job) error {
	body, err := json.MarshalIndent(job, "", "  ")
	if err != nil {
		return err
	}
	if o.es == nil {
		if !job.Final {
			return nil
		}
		return writePrivate(o.file(job.DocID), append(body, '\n'))
	}
	index := job.IndexOf(o.cfg.Elasticsearch.JobIndex, time.Now())
	return o.write(ctx, store.Doc{Kind: store.KindJobDoc, Index: index, ID: job.DocID, Body: body,
		Version: o.nextVersion(index, job.DocID, job.UpdatedAt)})
}

// writePrivate writes a job document file as the agent's other files are
// written: mode 0600, and its directory, when the agent creates it, 0700
// (job documents name users, accounts and usage). An existing directory
// keeps its mode — a site may share output_dir on purpose — but the file
// stays 0600 and owned by the agent's user. The file is written to a
// temporary name and renamed, so a reader never sees half a document and
// a symbolic link at the file's name is replaced, not followed.
func writePrivate(path string, data []byte) error {
	dir := filepath.Dir(path)
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("output_dir: %w", err)
		}
		// MkdirAll's mode is subject to the umask; make sure.
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("output_dir: %w", err)
		}
	}
	if err := privdir.WriteFile(path, ".jobsight-*.tmp", data); err != nil {
		return fmt.Errorf("output_dir: writing %s: %w", path, err)
	}
	return nil
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
	index := r.IndexOf(o.cfg.Elasticsearch.ResultIndex, time.Now())
	return o.write(ctx, store.Doc{Kind: store.KindJobDoc, Index: index, ID: r.DocID, Body: body,
		Version: o.nextVersion(index, r.DocID, r.UpdatedAt)})
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
	return fmt.Sprintf("Elasticsearch index %s, id %s", jobmodel.IndexPattern(o.cfg.Elasticsearch.JobIndex), id)
}

// readIndices is what a reader of index searches: for a job, result or
// node index (its base or one of its monthly indices), every monthly index
// and the pre-0.2 single index (jobmodel.SearchIndices); another index as
// it is.
func (o *Outputs) readIndices(index string) string {
	for _, base := range []string{o.cfg.Elasticsearch.JobIndex, o.cfg.Elasticsearch.NodeIndex, o.cfg.Elasticsearch.ResultIndex} {
		if _, monthly := jobmodel.MonthOfIndex(base, index); index == base || monthly {
			return jobmodel.SearchIndices(base)
		}
	}
	return index
}

func (o *Outputs) file(docID string) string {
	name := strings.NewReplacer(":", "_", "/", "_", "@", "_").Replace(docID)
	return filepath.Join(o.cfg.OutputDir, "jobsight-"+name+".json")
}

// nextVersion is the external version of a new write of the document id
// of index, updated at updated: its updated_at in microseconds, but always
// above the last version this process gave the document — a wall clock
// stepped back must not make a final document older than the running one
// it follows (the store would keep the running one and answer "superseded").
// 0 (no version) for a document without updated_at.
func (o *Outputs) nextVersion(index, id string, updated *jobmodel.Time) int64 {
	if updated == nil || updated.IsZero() {
		return 0
	}
	v := updated.UnixMicro()
	key := index + "\x00" + id
	o.mu.Lock()
	defer o.mu.Unlock()
	if last := o.sent[key]; v <= last {
		v = last + 1
	}
	o.sent[key] = v
	return v
}

// write stores one document, spooling it when the store does not take it.
// Spooled, the document keeps its version, and the error wraps
// spool.ErrSpooled; an error without it means the document is nowhere safe.
func (o *Outputs) write(ctx context.Context, d store.Doc) error {
	err := o.store(ctx, d)
	if err == nil {
		o.replaySoon(ctx)
		return nil
	}
	o.noteRefusal("elasticsearch", err)
	o.noteWaiting(targetES, err)
	if serr := o.spool.EnqueueDoc(targetES, d); serr != nil {
		return errors.Join(err, fmt.Errorf("spooling %s: %w", d.ID, serr))
	}
	o.updateSpoolMetrics()
	return fmt.Errorf("%w; %w", err, spool.ErrSpooled)
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
	o.probeVersions(ctx)
	d, version, skip, err := o.prepare(ctx, d, onlyIfNewer)
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
	o.noteWritten(d, version)
	return nil
}

// errBadDocument marks a document the agent cannot even read back (not
// JSON): the document's own fault, like a server's document-level error.
var errBadDocument = errors.New("the document is not valid JSON")

// prepare resolves a document's id (a reused job id) and makes sure it has
// a version: the one given when it was first written (nextVersion), else,
// for an item spooled by an older agent, its updated_at; skip is true when
// a spooled document is older than what the store holds (dropped as
// superseded).
func (o *Outputs) prepare(ctx context.Context, d store.Doc, onlyIfNewer bool) (_ store.Doc, version int64, skip bool, err error) {
	var meta stored
	if err := json.Unmarshal(d.Body, &meta); err != nil {
		return d, 0, false, fmt.Errorf("document %s: %w: %v", d.ID, errBadDocument, err)
	}
	if d, err = o.resolveDoc(ctx, d, meta); err != nil {
		return d, 0, false, err
	}
	mine := meta.updated()
	if d.Version == 0 && !mine.IsZero() {
		d.Version = mine.UnixMicro()
	}
	// The server decides where it can (Elasticsearch: a version at least
	// as new is kept, this write answered as superseded); where it cannot
	// (ZincSearch ignores versions), a replay is checked against the
	// stored version first.
	if onlyIfNewer && !o.es.HonoursVersions() {
		older, err := o.olderThanStored(ctx, d, mine, meta.Final)
		if older {
			o.log.Info("dropping a spooled document: the store holds a newer version", "id", d.ID)
		}
		return d, d.Version, older, err
	}
	return d, d.Version, false, nil
}

// noteWritten records the version of a document this process stored.
func (o *Outputs) noteWritten(d store.Doc, version int64) {
	if version <= 0 {
		return
	}
	k := o.writtenKey(d)
	o.mu.Lock()
	if version > o.written[k] {
		o.written[k] = version
	}
	o.mu.Unlock()
}

// writtenKey is a document's key in written: its index family (a job's,
// node's or result's indices, monthly or not) and its id. A job document
// and its analysis share the id; keyed by id alone, an analysis written
// after an outage made the job's spooled final document look superseded,
// and the replay dropped it.
func (o *Outputs) writtenKey(d store.Doc) string {
	return o.readIndices(d.Index) + "\x00" + d.ID
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
	versions := make([]int64, 0, len(docs))
	var errs []error
	allSpooled := true // every failed document is safe in the spool
	spoolDoc := func(d store.Doc, err error) {
		o.noteRefusal("elasticsearch", err)
		o.noteWaiting(targetES, err)
		if serr := o.spool.EnqueueDoc(targetES, d); serr != nil {
			err = errors.Join(err, fmt.Errorf("spooling %s: %w", d.ID, serr))
			allSpooled = false
		}
		errs = append(errs, err)
	}
	ensured := o.EnsureIndices(ctx)
	o.probeVersions(ctx)
	for _, doc := range docs {
		body, err := json.Marshal(doc)
		if err != nil {
			errs, allSpooled = append(errs, err), false
			continue
		}
		index := doc.IndexOf(o.cfg.Elasticsearch.NodeIndex, time.Now())
		d := store.Doc{Kind: store.KindNodeDoc, Index: index, ID: doc.DocID, Body: body,
			Version: o.nextVersion(index, doc.DocID, doc.UpdatedAt)}
		if ensured != nil {
			spoolDoc(d, ensured)
			continue
		}
		pd, version, _, err := o.prepare(ctx, d, false)
		if err != nil {
			spoolDoc(d, err)
			continue
		}
		batch, versions = append(batch, pd), append(versions, version)
	}
	if len(batch) > 0 {
		failures, err := o.es.Bulk(ctx, batch)
		failed := map[string]bool{}
		for _, f := range failures {
			failed[f.Doc.ID] = true
			spoolDoc(f.Doc, f.Err)
		}
		for i, d := range batch {
			switch {
			case err != nil:
				spoolDoc(d, err)
			case !failed[d.ID]:
				o.noteWritten(d, versions[i])
			}
		}
	}
	o.updateSpoolMetrics()
	if len(errs) == 0 {
		o.replaySoon(ctx)
		return nil
	}
	if allSpooled {
		return fmt.Errorf("%w; %w", errors.Join(errs...), spool.ErrSpooled)
	}
	return errors.Join(errs...)
}
