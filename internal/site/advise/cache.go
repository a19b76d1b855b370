package advise

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Cache keeps a caller's history between submissions, in their own
// runtime directory (/run/user/UID: a tmpfs that systemd-logind makes
// for each logged-in user, mode 0700, gone at logout). Nothing is cached
// where that directory does not exist or is not the caller's alone: a
// setgid run never writes where another user could read or plant a file.
type Cache struct {
	// Dir is the runtime directory; RunDir(uid) in production.
	Dir string
	UID uint32
	TTL time.Duration
}

// RunDir is the runtime directory of uid.
func RunDir(uid uint32) string {
	return filepath.Join("/run/user", strconv.FormatUint(uint64(uid), 10))
}

type cached struct {
	Key  string    `json:"key"`
	At   time.Time `json:"at"`
	Jobs []Past    `json:"jobs"`
}

// cachePrefix begins the name of every cache file.
const cachePrefix = "jobsight-advise-"

// file is the cache file of key: one per query (account, partitions and
// the conditions of the request's kind: name, CPUs, memory, GPUs, nodes).
func (c Cache) file(key string) string {
	sum := sha256.Sum256([]byte(key))
	return filepath.Join(c.Dir, cachePrefix+hex.EncodeToString(sum[:8])+".json")
}

// private checks that fd is owned by the caller and reachable by no one
// else (for a directory: not writable by others either).
func (c Cache) private(f *os.File) error {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil { // #nosec G115 -- a file descriptor fits an int
		return err
	}
	if st.Uid != c.UID || st.Mode&0o077 != 0 {
		return fmt.Errorf("%s is not the caller's alone (owner %d, mode %o)", f.Name(), st.Uid, st.Mode&0o7777)
	}
	return nil
}

// Get returns the history cached for key, if it is younger than the TTL.
func (c Cache) Get(key string, now time.Time) ([]Past, bool) {
	if c.TTL <= 0 || c.Dir == "" {
		return nil, false
	}
	root, err := os.OpenRoot(c.Dir)
	if err != nil {
		return nil, false
	}
	defer root.Close()
	if d, err := root.Open("."); err != nil || c.private(d) != nil {
		if d != nil {
			d.Close()
		}
		return nil, false
	} else {
		d.Close()
	}
	f, err := root.OpenFile(filepath.Base(c.file(key)), os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	if c.private(f) != nil {
		return nil, false
	}
	var got cached
	if err := json.NewDecoder(io.LimitReader(f, 16<<20)).Decode(&got); err != nil || got.Key != key {
		return nil, false
	}
	if age := now.Sub(got.At); age < 0 || age > c.TTL {
		return nil, false
	}
	return got.Jobs, true
}

// Put caches jobs for key (written to a new file, then renamed into
// place, so a reader sees the old history or the new, never half).
func (c Cache) Put(key string, jobs []Past, now time.Time) error {
	if c.TTL <= 0 || c.Dir == "" {
		return nil
	}
	root, err := os.OpenRoot(c.Dir)
	if err != nil {
		return err
	}
	defer root.Close()
	d, err := root.Open(".")
	if err != nil {
		return err
	}
	err = c.private(d)
	d.Close()
	if err != nil {
		return err
	}
	b, err := json.Marshal(cached{Key: key, At: now, Jobs: jobs})
	if err != nil {
		return err
	}
	name := filepath.Base(c.file(key))
	tmp := name + ".new." + strconv.Itoa(os.Getpid())
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	_, werr := f.Write(b)
	if err := errors.Join(werr, f.Close()); err != nil {
		_ = root.Remove(tmp)
		return err
	}
	if err := root.Rename(tmp, name); err != nil {
		_ = root.Remove(tmp)
		return err
	}
	c.prune(root, name, time.Now())
	return nil
}

// prune removes the caller's other cached histories that have expired:
// the cache holds one file per kind of request, and a user who submits
// many kinds must not fill their runtime directory. Expiry is judged on
// the files' modification times, against the clock (now).
func (c Cache) prune(root *os.Root, keep string, now time.Time) {
	d, err := root.Open(".")
	if err != nil {
		return
	}
	ents, _ := d.ReadDir(-1)
	d.Close()
	for _, e := range ents {
		n := e.Name()
		if n == keep || !e.Type().IsRegular() || !strings.HasPrefix(n, cachePrefix) || !strings.HasSuffix(n, ".json") {
			continue
		}
		if fi, err := e.Info(); err == nil && now.Sub(fi.ModTime()) > c.TTL {
			_ = root.Remove(n)
		}
	}
}
