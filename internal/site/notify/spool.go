package notify

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
)

// Spool layout: <dir>/pending holds reports waiting for their digest;
// <dir>/failed holds reports a server refused permanently and unreadable
// files, for an administrator to look at. Files are named
// <queued unix ns, 20 digits>-<sequence, 10 digits>-<random>.json so that
// name order is queue order.
const (
	pendingDir  = "pending"
	failedDir   = "failed"
	spoolSuffix = ".json"
	tmpPrefix   = ".tmp-"
	// maxSpoolFile bounds a spool file (and so a report).
	maxSpoolFile = 4 << 20
)

// spool stores one file per pending report.
type spool struct {
	pending, failed string
	seq             atomic.Uint64
}

// spooled is a pending report read back from the spool.
type spooled struct {
	name  string
	entry spoolEntry
}

// openSpool creates (or tightens) the spool directories with mode 0700,
// removes temporary files left by a crash and continues the sequence.
func openSpool(dir string) (*spool, error) {
	s := &spool{pending: filepath.Join(dir, pendingDir), failed: filepath.Join(dir, failedDir)}
	for _, d := range []string{dir, s.pending, s.failed} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("spool: %w", err)
		}
		if err := os.Chmod(d, 0o700); err != nil {
			return nil, fmt.Errorf("spool: %w", err)
		}
	}
	var maxSeq uint64
	for _, d := range []string{s.pending, s.failed} {
		ents, err := os.ReadDir(d)
		if err != nil {
			return nil, fmt.Errorf("spool: %w", err)
		}
		for _, e := range ents {
			name := e.Name()
			if strings.HasPrefix(name, tmpPrefix) {
				if err := os.Remove(filepath.Join(d, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return nil, fmt.Errorf("spool: removing leftover: %w", err)
				}
				continue
			}
			if seq, ok := nameSeq(name); ok && seq > maxSeq {
				maxSeq = seq
			}
		}
	}
	s.seq.Store(maxSeq)
	return s, nil
}

// nameSeq extracts the sequence number from a spool file name.
func nameSeq(name string) (uint64, bool) {
	parts := strings.Split(strings.TrimSuffix(name, spoolSuffix), "-")
	if len(parts) != 3 || !strings.HasSuffix(name, spoolSuffix) {
		return 0, false
	}
	n, err := strconv.ParseUint(parts[1], 10, 64)
	return n, err == nil
}

// put writes an entry durably: to a 0600 temporary file, synced, renamed
// into place, and the directory synced. It returns the file's name.
func (s *spool) put(e spoolEntry) (string, error) {
	data, err := json.Marshal(e)
	if err != nil {
		return "", fmt.Errorf("spool: encoding report: %w", err)
	}
	if len(data) > maxSpoolFile {
		return "", fmt.Errorf("spool: report is %d bytes encoded, more than %d", len(data), maxSpoolFile)
	}
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	name := fmt.Sprintf("%020d-%010d-%s%s", max(e.QueuedAt.UnixNano(), 0), s.seq.Add(1), hex.EncodeToString(rnd[:]), spoolSuffix)
	tmp := filepath.Join(s.pending, tmpPrefix+name)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fmt.Errorf("spool: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err := f.Chmod(0o600); err != nil {
		return "", fmt.Errorf("spool: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		return "", fmt.Errorf("spool: writing %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		return "", fmt.Errorf("spool: syncing %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("spool: closing %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, filepath.Join(s.pending, name)); err != nil {
		return "", fmt.Errorf("spool: %w", err)
	}
	ok = true
	if err := syncDir(s.pending); err != nil {
		return name, err
	}
	return name, nil
}

// syncDir makes renames and removals in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("spool: syncing %s: %w", dir, err)
	}
	return nil
}

// names lists pending files in queue order.
func (s *spool) names() ([]string, error) {
	ents, err := os.ReadDir(s.pending)
	if err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	var names []string
	for _, e := range ents {
		n := e.Name()
		if e.Type().IsRegular() && !strings.HasPrefix(n, ".") && strings.HasSuffix(n, spoolSuffix) {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names, nil
}

// read loads one pending file.
func (s *spool) read(name string) (spoolEntry, error) {
	var e spoolEntry
	data, err := readLimited(filepath.Join(s.pending, name), maxSpoolFile)
	if err != nil {
		return e, fmt.Errorf("spool: %w", err)
	}
	if err := json.Unmarshal(data, &e); err != nil {
		return e, fmt.Errorf("spool: %s: %w", name, err)
	}
	if e.Version != spoolVersion {
		return e, fmt.Errorf("spool: %s: unknown format version %d", name, e.Version)
	}
	return e, nil
}

// remove deletes a pending file (sent, or dropped).
func (s *spool) remove(name string) error {
	if err := os.Remove(filepath.Join(s.pending, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("spool: %w", err)
	}
	return nil
}

// quarantine moves a pending file to the failed directory.
func (s *spool) quarantine(name string) error {
	if err := os.Rename(filepath.Join(s.pending, name), filepath.Join(s.failed, name)); err != nil {
		return fmt.Errorf("spool: moving %s to %s: %w", name, failedDir, err)
	}
	return nil
}
