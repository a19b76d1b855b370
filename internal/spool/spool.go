// Package spool keeps on the node's disk what a sink could not take, until
// it can: job and node documents for Elasticsearch and encoded sample
// batches for Prometheus. Nothing is lost while the spool has room; when it
// is over its byte budget it drops raw sample batches first (oldest first),
// then node documents (oldest first), and never a job document.
//
// Every item is one file, written to a temporary name, synced and renamed,
// so a process killed mid-write leaves either the whole item or a temporary
// file that is ignored and later removed. Several agent processes on one
// node may share the directory: enqueueing is serialized with a lock file,
// and one process at a time replays (a second Replay returns ErrBusy). An
// agent that dies leaves its items for the next one.
package spool

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jobsight/jobsight/internal/privdir"
	"github.com/jobsight/jobsight/internal/store"
)

// DefaultMaxBytes is the byte budget when Options.MaxBytes is zero.
const DefaultMaxBytes = 256 << 20

// staleTemp is how old a temporary file of a live process must be before
// it counts as abandoned.
const staleTemp = 10 * time.Minute

const (
	itemSuffix  = ".item"
	tempPrefix  = ".tmp-"
	corruptDir  = "corrupt"
	rejectDir   = "rejected"
	enqueueLock = ".enqueue.lock"
	replayLock  = ".replay.lock"
)

// ErrBusy is returned by Replay while another process (or goroutine)
// replays the same spool.
var ErrBusy = errors.New("spool is being replayed by another process")

// ErrKeep, wrapped in a Replay callback's error, keeps the item and lets the
// replay go on with the next one (e.g. the item is for a sink that is
// still down).
var ErrKeep = errors.New("keep item")

// ErrReject, wrapped in a Replay callback's error, says the sink refused
// the item for good: it is moved to the rejected/ subdirectory for a human
// to look at, counted, and the replay goes on.
var ErrReject = errors.New("item rejected by its sink")

// ErrSpooled, wrapped in a sink's write error, says that what the sink did
// not take is kept in the spool (durably written) and will be replayed: a
// caller may forget it. A write error without it means the data is not
// safe anywhere yet (e.g. the spool's disk is full).
var ErrSpooled = errors.New("kept in the spool for a later replay")

// Item is one spooled thing.
type Item struct {
	Kind   store.DocKind
	Target string // the sink it is for, e.g. "elasticsearch" or "prometheus"
	Index  string // documents only
	ID     string // documents only
	Body   []byte // the document's JSON, or an encoded sample batch
	// Version is a document's external version as first sent (0: none,
	// the sender derives one).
	Version int64

	// Set by Replay.
	Name     string    // file name in the spool directory
	Enqueued time.Time // when it was spooled
}

// Doc returns the item as a sink document.
func (it Item) Doc() store.Doc {
	return store.Doc{Kind: it.Kind, Index: it.Index, ID: it.ID, Body: it.Body, Version: it.Version}
}

// Options tune a spool.
type Options struct {
	// MaxBytes is the byte budget for item files; DefaultMaxBytes when 0.
	MaxBytes int64
	// Logger receives warnings about drops and corrupt files;
	// slog.Default() when nil.
	Logger *slog.Logger
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Stats describes the spool. Items, Bytes and the per-kind counts are what
// the directory holds now (all processes' items); the counters count what
// this Spool value dropped, set aside or replayed since Open.
type Stats struct {
	Items       int
	Bytes       int64
	ItemsByKind map[store.DocKind]int
	MaxBytes    int64
	// OverBudget is true when only job documents are left and they exceed
	// MaxBytes; they are kept anyway.
	OverBudget bool

	Dropped  map[store.DocKind]uint64 // dropped for room (KindJobDoc stays 0)
	Replaced uint64                   // node documents replaced by a newer version
	Corrupt  uint64                   // unreadable files moved to corrupt/
	Rejected uint64                   // items moved to rejected/ by Replay
	Pruned   uint64                   // set-aside files removed to keep rejected/ and corrupt/ bounded
	Replayed uint64                   // items delivered by Replay

	// RejectedFiles and CorruptFiles are what rejected/ and corrupt/
	// hold now (all processes'): rejected/ items can be sent again with
	// Restore once their cause is fixed.
	RejectedFiles, CorruptFiles int
}

// Spool is an on-disk spool in one directory.
type Spool struct {
	dir      string
	maxBytes int64
	log      *slog.Logger
	now      func() time.Time
	pid      int

	seq      atomic.Uint64
	replayMu sync.Mutex // one replay per process; the flock covers processes

	mu       sync.Mutex // guards the counters below
	dropped  map[store.DocKind]uint64
	replaced uint64
	corrupt  uint64
	rejected uint64
	// asidePruned counts set-aside files removed to keep rejected/ and
	// corrupt/ bounded.
	asidePruned uint64
	replayed    uint64
	overBudget  bool
}

// Open opens (creating it if needed) the spool in dir and removes the
// temporary files that processes killed mid-write left behind.
func Open(dir string, opts Options) (*Spool, error) {
	if dir == "" {
		return nil, errors.New("spool: empty directory name")
	}
	if err := privdir.Ensure(dir); err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	s := &Spool{
		dir:      dir,
		maxBytes: opts.MaxBytes,
		log:      opts.Logger,
		now:      opts.Now,
		pid:      os.Getpid(),
		dropped:  map[store.DocKind]uint64{},
	}
	if s.maxBytes <= 0 {
		s.maxBytes = DefaultMaxBytes
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.log = s.log.With("component", "spool", "dir", dir)
	if s.now == nil {
		s.now = time.Now
	}
	if err := s.removeAbandonedTemps(); err != nil {
		return nil, err
	}
	return s, nil
}

// Dir returns the spool directory.
func (s *Spool) Dir() string { return s.dir }

// EnqueueDoc spools a document for target. A node document replaces the
// spooled older versions of itself (same target, index and id).
func (s *Spool) EnqueueDoc(target string, doc store.Doc) error {
	return s.Enqueue(Item{Kind: doc.Kind, Target: target, Index: doc.Index, ID: doc.ID, Body: doc.Body, Version: doc.Version})
}

// EnqueueSamples spools an encoded sample batch for target, to be sent
// again verbatim.
func (s *Spool) EnqueueSamples(target string, batch []byte) error {
	return s.Enqueue(Item{Kind: store.KindSamples, Target: target, Body: batch})
}

// Enqueue spools it durably (written, synced and renamed into place), then
// removes older versions of a node document and enforces the byte budget.
func (s *Spool) Enqueue(it Item) error {
	if !validKind(it.Kind) {
		return fmt.Errorf("spool: item %q has unknown kind %d", it.ID, it.Kind)
	}
	if it.Kind != store.KindSamples && (it.Index == "" || it.ID == "") {
		return fmt.Errorf("spool: document %q for index %q lacks an index or id", it.ID, it.Index)
	}
	unlock, err := s.lock(enqueueLock, true)
	if err != nil {
		return err
	}
	defer unlock()

	name := s.newName(it)
	if err := s.writeFile(name, encodeItem(it)); err != nil {
		return err
	}
	if it.Kind == store.KindNodeDoc {
		s.removeOlderVersions(name, it)
	}
	s.enforceBudget()
	return nil
}

// newName returns a file name that sorts by enqueue time and is unique
// across processes: <unix ns>-<pid>-<seq>-<kind><key hash>.item. The key
// hash lets a node document find its older versions without reading files.
func (s *Spool) newName(it Item) string {
	return fmt.Sprintf("%019d-%010d-%08d-%c%016x%s",
		s.now().UnixNano(), s.pid, s.seq.Add(1)%1e8, kindLetter(it.Kind), keyHash(it), itemSuffix)
}

func kindLetter(k store.DocKind) byte {
	switch k {
	case store.KindSamples:
		return 's'
	case store.KindNodeDoc:
		return 'n'
	default:
		return 'j'
	}
}

func keyHash(it Item) uint64 {
	h := fnv.New64a()
	h.Write([]byte(it.Target))
	h.Write([]byte{0})
	h.Write([]byte(it.Index))
	h.Write([]byte{0})
	h.Write([]byte(it.ID))
	return h.Sum64()
}

// entry is an item file as its name and size describe it.
type entry struct {
	name     string
	size     int64
	kind     store.DocKind
	key      string // kind letter and key hash
	enqueued time.Time
}

// parseName reads an item file name; ok is false for names that are not
// spool item names.
func parseName(name string) (e entry, ok bool) {
	base, found := strings.CutSuffix(name, itemSuffix)
	if !found {
		return e, false
	}
	parts := strings.Split(base, "-")
	if len(parts) != 4 || len(parts[0]) != 19 || len(parts[3]) != 17 {
		return e, false
	}
	ns, err := strconv.ParseInt(parts[0], 10, 64)
	if err != nil {
		return e, false
	}
	for _, p := range parts[1:3] {
		if _, err := strconv.ParseUint(p, 10, 64); err != nil {
			return e, false
		}
	}
	if _, err := strconv.ParseUint(parts[3][1:], 16, 64); err != nil {
		return e, false
	}
	switch parts[3][0] {
	case 's':
		e.kind = store.KindSamples
	case 'n':
		e.kind = store.KindNodeDoc
	case 'j':
		e.kind = store.KindJobDoc
	default:
		return e, false
	}
	e.name, e.key, e.enqueued = name, parts[3], time.Unix(0, ns)
	return e, true
}

// writeFile writes data to name atomically: temporary file, fsync, rename,
// fsync of the directory.
func (s *Spool) writeFile(name string, data []byte) error {
	if err := privdir.WriteFile(filepath.Join(s.dir, name), tempPrefix+strconv.Itoa(s.pid)+"-*", data); err != nil {
		return fmt.Errorf("spool: writing %s: %w", name, err)
	}
	return s.syncDir()
}

func (s *Spool) syncDir() error {
	d, err := os.Open(s.dir)
	if err != nil {
		return fmt.Errorf("spool: opening %s: %w", s.dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("spool: syncing %s: %w", s.dir, err)
	}
	return nil
}

// scan lists the item files, oldest first. Files whose names are not item
// names are left alone, except that temporary files are skipped.
func (s *Spool) scan() ([]entry, error) {
	des, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("spool: listing %s: %w", s.dir, err)
	}
	out := make([]entry, 0, len(des))
	for _, de := range des {
		if !de.Type().IsRegular() {
			continue
		}
		e, ok := parseName(de.Name())
		if !ok {
			if strings.HasSuffix(de.Name(), itemSuffix) {
				s.setAside(de.Name(), corruptDir, "unknown file name")
			}
			continue
		}
		info, err := de.Info()
		if err != nil {
			continue // removed meanwhile by another process
		}
		e.size = info.Size()
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b entry) int { return strings.Compare(a.name, b.name) })
	return out, nil
}

// removeOlderVersions removes the node documents spooled before name with
// the same target, index and id as it.
func (s *Spool) removeOlderVersions(name string, it Item) {
	entries, err := s.scan()
	if err != nil {
		s.log.Warn("cannot look for older versions of a node document", "id", it.ID, "err", err)
		return
	}
	self, _ := parseName(name)
	for _, e := range entries {
		if e.name >= name || e.key != self.key {
			continue
		}
		old, err := s.read(e.name)
		if err != nil || old.Target != it.Target || old.Index != it.Index || old.ID != it.ID {
			continue // a hash collision, or gone, or corrupt (Replay deals with it)
		}
		if err := os.Remove(filepath.Join(s.dir, e.name)); err == nil {
			s.mu.Lock()
			s.replaced++
			s.mu.Unlock()
		}
	}
}

// enforceBudget drops sample batches, then node documents, oldest first,
// until the item files fit MaxBytes. Job documents are never dropped.
func (s *Spool) enforceBudget() {
	entries, err := s.scan()
	if err != nil {
		s.log.Warn("cannot check the spool's size", "err", err)
		return
	}
	var total int64
	for _, e := range entries {
		total += e.size
	}
	for _, kind := range []store.DocKind{store.KindSamples, store.KindNodeDoc} {
		for _, e := range entries {
			if total <= s.maxBytes {
				break
			}
			if e.kind != kind {
				continue
			}
			if err := os.Remove(filepath.Join(s.dir, e.name)); err != nil {
				continue // replayed and removed meanwhile, or not removable
			}
			total -= e.size
			s.mu.Lock()
			s.dropped[kind]++
			s.mu.Unlock()
			s.log.Warn("spool full: dropped an item", "kind", kind.String(), "file", e.name, "bytes", e.size)
		}
	}
	over := total > s.maxBytes
	s.mu.Lock()
	was := s.overBudget
	s.overBudget = over
	s.mu.Unlock()
	if over && !was {
		s.log.Warn("spool over its budget with job documents only; keeping them", "bytes", total, "max_bytes", s.maxBytes)
	}
}

// read reads and decodes one item file.
func (s *Spool) read(name string) (Item, error) {
	b, err := os.ReadFile(filepath.Join(s.dir, name))
	if err != nil {
		return Item{}, fmt.Errorf("spool: reading %s: %w", name, err)
	}
	it, err := decodeItem(b)
	if err != nil {
		return Item{}, fmt.Errorf("spool: %s: %w", name, err)
	}
	return it, nil
}

// MaxAsideFiles and MaxAsideBytes bound each of rejected/ and corrupt/:
// they keep the newest files for a human to look at, never growing without
// end (a store that refuses everything would otherwise fill the disk).
const (
	MaxAsideFiles = 1000
	MaxAsideBytes = 16 << 20
)

// pruneAside removes the oldest files of dir beyond MaxAsideFiles or
// MaxAsideBytes.
func (s *Spool) pruneAside(dir string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	type file struct {
		name string
		mod  time.Time
		size int64
	}
	var files []file
	var total int64
	for _, e := range ents {
		if info, err := e.Info(); err == nil && info.Mode().IsRegular() {
			files = append(files, file{e.Name(), info.ModTime(), info.Size()})
			total += info.Size()
		}
	}
	sort.Slice(files, func(i, j int) bool { return files[i].mod.Before(files[j].mod) })
	for i := 0; i < len(files) && (len(files)-i > MaxAsideFiles || total > MaxAsideBytes); i++ {
		if err := os.Remove(filepath.Join(dir, files[i].name)); err == nil {
			total -= files[i].size
			s.mu.Lock()
			s.asidePruned++
			s.mu.Unlock()
		}
	}
}

// setAside moves a file into the subdirectory sub (corrupt/ or rejected/)
// and counts it; the subdirectory keeps only its newest files.
func (s *Spool) setAside(name, sub, why string) {
	dst := filepath.Join(s.dir, sub)
	if err := os.MkdirAll(dst, 0o700); err != nil {
		s.log.Error("cannot create directory for set-aside files", "dir", dst, "err", err)
		return
	}
	if err := os.Rename(filepath.Join(s.dir, name), filepath.Join(dst, name)); err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			s.log.Error("cannot move a spool file aside", "file", name, "to", sub, "err", err)
		}
		return
	}
	s.mu.Lock()
	if sub == corruptDir {
		s.corrupt++
	} else {
		s.rejected++
	}
	s.mu.Unlock()
	s.log.Warn("moved a spool file aside", "file", name, "to", sub, "reason", why)
	s.pruneAside(dst)
}

// Sender delivers one spooled item to its target. A nil error delivers it;
// an error wrapping ErrReject refuses it for good (the item's fault); any
// other error means the target is down.
type Sender func(context.Context, Item) error

// ReplayTo replays the spool to its targets, each item through the sender
// of its target. A target found down is skipped for the rest of this
// replay (onDown, when set, is told once) while the other targets' items
// still go: one store's outage must not hold another's data back. A
// target whose sender is nil (not configured) keeps its items; an item for
// a target not in senders is rejected.
func (s *Spool) ReplayTo(ctx context.Context, senders map[string]Sender, onDown func(target string, err error)) error {
	down := map[string]error{}
	return s.Replay(ctx, func(ctx context.Context, it Item) error {
		if err := down[it.Target]; err != nil {
			return fmt.Errorf("%w: %v", ErrKeep, err)
		}
		send, ok := senders[it.Target]
		switch {
		case !ok:
			return fmt.Errorf("%w: unknown target %q", ErrReject, it.Target)
		case send == nil:
			return ErrKeep
		}
		err := send(ctx, it)
		if err == nil || errors.Is(err, ErrReject) {
			return err
		}
		down[it.Target] = err
		if onDown != nil {
			onDown(it.Target, err)
		}
		return fmt.Errorf("%w: %v", ErrKeep, err)
	})
}

// Replay calls fn with every spooled item, oldest first, and removes an
// item once fn returned nil for it. When fn's error wraps ErrKeep the item
// stays and the replay goes on; when it wraps ErrReject the item is moved
// to rejected/ and the replay goes on; any other error stops the replay,
// keeps the item, and is returned. Corrupt files are moved to corrupt/.
// Only one process replays at a time; others get ErrBusy at once.
// Items enqueued during a replay wait for the next one.
func (s *Spool) Replay(ctx context.Context, fn func(context.Context, Item) error) error {
	if !s.replayMu.TryLock() {
		return ErrBusy
	}
	defer s.replayMu.Unlock()
	unlock, err := s.lock(replayLock, false)
	if err != nil {
		return err
	}
	defer unlock()

	entries, err := s.scan()
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("spool: replay: %w", err)
		}
		it, err := s.read(e.name)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue // dropped or replaced meanwhile
		case errors.Is(err, ErrCorrupt):
			s.setAside(e.name, corruptDir, err.Error())
			continue
		case err != nil:
			return err
		}
		it.Name, it.Enqueued = e.name, e.enqueued
		ferr := fn(ctx, it)
		switch {
		case ferr == nil:
			if err := os.Remove(filepath.Join(s.dir, e.name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("spool: removing replayed %s: %w", e.name, err)
			}
			s.mu.Lock()
			s.replayed++
			s.mu.Unlock()
		case errors.Is(ferr, ErrReject):
			s.setAside(e.name, rejectDir, ferr.Error())
		case errors.Is(ferr, ErrKeep):
		default:
			return fmt.Errorf("spool: replaying %s: %w", e.name, ferr)
		}
	}
	return nil
}

// Stats returns the spool's current size and this Spool's counters.
func (s *Spool) Stats() (Stats, error) {
	entries, err := s.scan()
	if err != nil {
		return Stats{}, err
	}
	st := Stats{ItemsByKind: map[store.DocKind]int{}, MaxBytes: s.maxBytes, Dropped: map[store.DocKind]uint64{}}
	for _, e := range entries {
		st.Items++
		st.Bytes += e.size
		st.ItemsByKind[e.kind]++
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, v := range s.dropped {
		st.Dropped[k] = v
	}
	st.Replaced, st.Corrupt, st.Rejected, st.Replayed, st.Pruned = s.replaced, s.corrupt, s.rejected, s.replayed, s.asidePruned
	st.OverBudget = st.Bytes > s.maxBytes && st.ItemsByKind[store.KindSamples] == 0 && st.ItemsByKind[store.KindNodeDoc] == 0
	st.RejectedFiles, st.CorruptFiles = countFiles(filepath.Join(s.dir, rejectDir)), countFiles(filepath.Join(s.dir, corruptDir))
	return st, nil
}

// countFiles counts the regular files in dir (0 when it does not exist).
func countFiles(dir string) int {
	des, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	n := 0
	for _, de := range des {
		if de.Type().IsRegular() {
			n++
		}
	}
	return n
}

// Restore moves the items set aside in rejected/ back into the spool,
// under their own names (so they keep their place, oldest first), for the
// next replay to send again: what an admin does once the cause of a
// refusal is fixed (a mapping corrected, a server repaired). Files in
// rejected/ that are not item files stay. It returns how many items it
// moved back.
func (s *Spool) Restore() (int, error) {
	unlock, err := s.lock(enqueueLock, true)
	if err != nil {
		return 0, err
	}
	defer unlock()
	dir := filepath.Join(s.dir, rejectDir)
	des, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("spool: listing %s: %w", dir, err)
	}
	n := 0
	for _, de := range des {
		if _, ok := parseName(de.Name()); !ok || !de.Type().IsRegular() {
			continue
		}
		if err := os.Rename(filepath.Join(dir, de.Name()), filepath.Join(s.dir, de.Name())); err != nil {
			return n, fmt.Errorf("spool: moving %s back: %w", de.Name(), err)
		}
		n++
	}
	if n > 0 {
		if err := s.syncDir(); err != nil {
			return n, err
		}
		s.log.Info("moved set-aside items back into the spool", "items", n)
	}
	return n, nil
}

// lock takes the flock on the named lock file; wait false returns ErrBusy
// instead of waiting.
func (s *Spool) lock(name string, wait bool) (unlock func(), err error) {
	f, err := os.OpenFile(filepath.Join(s.dir, name), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("spool: opening lock %s: %w", name, err)
	}
	how := unix.LOCK_EX
	if !wait {
		how |= unix.LOCK_NB
	}
	for {
		err = unix.Flock(int(f.Fd()), how)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, ErrBusy
		}
		return nil, fmt.Errorf("spool: locking %s: %w", name, err)
	}
	return func() {
		_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
		f.Close()
	}, nil
}

// removeAbandonedTemps removes temporary files of processes that no longer
// run, and those older than staleTemp.
func (s *Spool) removeAbandonedTemps() error {
	des, err := os.ReadDir(s.dir)
	if err != nil {
		return fmt.Errorf("spool: listing %s: %w", s.dir, err)
	}
	for _, de := range des {
		name := de.Name()
		if !strings.HasPrefix(name, tempPrefix) || !de.Type().IsRegular() {
			continue
		}
		pidStr, _, _ := strings.Cut(strings.TrimPrefix(name, tempPrefix), "-")
		pid, perr := strconv.Atoi(pidStr)
		alive := perr == nil && pid > 0 && pid != s.pid && processAlive(pid)
		if alive {
			info, err := de.Info()
			if err != nil || s.now().Sub(info.ModTime()) < staleTemp {
				continue
			}
		}
		if err := os.Remove(filepath.Join(s.dir, name)); err == nil {
			s.log.Info("removed a partly written spool file", "file", name)
		}
	}
	return nil
}

func processAlive(pid int) bool {
	err := unix.Kill(pid, 0)
	return err == nil || errors.Is(err, unix.EPERM)
}
