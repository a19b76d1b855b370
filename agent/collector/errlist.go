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

// readKey re-reads a flat-keyed file and returns one key's value; a file
// without the key is an error.
func readKey(f *kernFile, key string, buf *[]byte, errs *errList) (uint64, bool) {
	return readKeyOf(f, key, true, buf, errs)
}

// readKeyOf is readKey, where a file without the key (a line older kernels
// do not write) is an error only when required; otherwise the key is
// missing without one.
func readKeyOf(f *kernFile, key string, required bool, buf *[]byte, errs *errList) (uint64, bool) {
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
		if required {
			errs.add(fmt.Errorf("%s: no %q line: %w", f.path, key, errSyntax))
		}
		return 0, false
	}
	return v, true
}

// readPressure re-reads a pressure (PSI) file and returns its "some" and
// "full" stall totals in nanoseconds. needFull: a file without a "full"
// line is an error (memory.pressure and io.pressure have had one since PSI
// began; cpu.pressure only since Linux 5.13).
func readPressure(f *kernFile, needFull bool, buf *[]byte, errs *errList) (some, full uint64, ok bool) {
	b, ok := readFile(f, buf, errs)
	if !ok {
		return 0, 0, false
	}
	some, full, hasFull, err := parsePressure(b)
	if err == nil && needFull && !hasFull {
		err = fmt.Errorf("no \"full\" line: %w", errSyntax)
	}
	if err != nil {
		errs.add(fmt.Errorf("%s: %w", f.path, err))
		return 0, 0, false
	}
	return some, full, true
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
// not exist when the collector started, or whose feature the kernel has
// switched off (errFeatureOff), is an absent feature, not an error.
func readFile(f *kernFile, buf *[]byte, errs *errList) ([]byte, bool) {
	if !f.ok() {
		if f.err != nil && !errors.Is(f.err, os.ErrNotExist) && !errors.Is(f.err, errFeatureOff) {
			errs.add(f.err)
		}
		return nil, false
	}
	b, err := f.read(buf)
	if err != nil {
		if featureOff(err) {
			f.switchOff(err)
			return nil, false
		}
		errs.add(err)
		return nil, false
	}
	return b, true
}
