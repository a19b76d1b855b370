// Package privdir makes and checks the agent's private directories (state,
// spool, log): owned by the agent's user, mode 0700, never a symbolic link
// or a directory another user owns, so that no file the agent writes
// (checkpoints name users, accounts and usage) can be read, replaced or
// redirected by anyone else.
package privdir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// Ensure creates dir (and missing parents, 0755) as a 0700 directory, or
// checks an existing one: a symbolic link, a non-directory or a directory
// owned by another user is refused with an error naming it; one of ours
// with looser permissions is tightened to 0700.
func Ensure(dir string) error {
	fi, err := os.Lstat(dir)
	if errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
			return fmt.Errorf("creating %s: %w", filepath.Dir(dir), err)
		}
		if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("creating %s: %w", dir, err)
		}
		fi, err = os.Lstat(dir)
	}
	if err != nil {
		return fmt.Errorf("checking %s: %w", dir, err)
	}
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		return fmt.Errorf("%s is a symbolic link: refusing to keep private files there", dir)
	case !fi.IsDir():
		return fmt.Errorf("%s is not a directory", dir)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("%s belongs to uid %d, not to this agent (uid %d): refusing to keep private files there", dir, st.Uid, os.Geteuid())
	}
	if fi.Mode().Perm() != 0o700 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("making %s private: %w", dir, err)
		}
	}
	return nil
}

// WriteFile writes data to path atomically and privately: a temporary file
// (mode 0600, named by pattern as os.CreateTemp names it) in path's
// directory, fsync, rename. A reader never sees half a file, and a symbolic
// link at path is replaced, not followed. The directory is not synced.
func WriteFile(path, pattern string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), pattern)
	if err != nil {
		return err
	}
	_, werr := tmp.Write(data)
	if werr == nil {
		werr = tmp.Sync()
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), path)
	}
	if werr != nil {
		_ = os.Remove(tmp.Name())
	}
	return werr
}
