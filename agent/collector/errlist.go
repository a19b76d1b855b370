package collector

import (
	"errors"
	"fmt"
	"os"
)

// errList keeps the first error of a pass and counts the rest, so a pass
// that fails in many places reports one clear cause without allocating a
// list.
type errList struct {
	first error
	more  int
}

func (e *errList) add(err error) {
	if err == nil {
		return
	}
	if e.first == nil {
		e.first = err
		return
	}
	e.more++
}

// err returns nil, the first error, or the first error with a count of the
// others, prefixed with the collector's name.
func (e *errList) err(name string) error {
	switch {
	case e.first == nil:
		return nil
	case e.more == 0:
		return fmt.Errorf("%s: %w", name, e.first)
	}
	return fmt.Errorf("%s: %w (and %d more errors)", name, e.first, e.more)
}

// readUint re-reads a single-number file. A file absent since the
// collector started (a kernel feature not there) is missing without error.
func readUint(f *kernFile, buf *[]byte, errs *errList) (uint64, bool) {
	b, ok := readFile(f, buf, errs)
	if !ok {
		return 0, false
	}
	v, err := parseUint(b)
	if err != nil {
		errs.add(fmt.Errorf("%s: %w", f.path, err))
		return 0, false
	}
	return v, true
}

// readKey re-reads a flat-keyed file and returns one key's value.
func readKey(f *kernFile, key string, buf *[]byte, errs *errList) (uint64, bool) {
	b, ok := readFile(f, buf, errs)
	if !ok {
		return 0, false
	}
	v, found, err := keyValue(b, key)
	if err != nil {
		errs.add(fmt.Errorf("%s: %w", f.path, err))
		return 0, false
	}
	if !found {
		errs.add(fmt.Errorf("%s: no %q line: %w", f.path, key, errSyntax))
		return 0, false
	}
	return v, true
}

// readCPUs re-reads a cpuset list file and counts its CPUs.
func readCPUs(f *kernFile, buf *[]byte, errs *errList) (uint32, bool) {
	b, ok := readFile(f, buf, errs)
	if !ok {
		return 0, false
	}
	v, err := parseCPUList(b)
	if err != nil {
		errs.add(fmt.Errorf("%s: %w", f.path, err))
		return 0, false
	}
	return v, true
}

// readFile re-reads f, recording why not when it cannot: a file that did
// not exist when the collector started is an absent feature, not an error.
func readFile(f *kernFile, buf *[]byte, errs *errList) ([]byte, bool) {
	if !f.ok() {
		if f.err != nil && !errors.Is(f.err, os.ErrNotExist) {
			errs.add(f.err)
		}
		return nil, false
	}
	b, err := f.read(buf)
	if err != nil {
		errs.add(err)
		return nil, false
	}
	return b, true
}
