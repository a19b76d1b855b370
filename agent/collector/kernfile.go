package collector

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/jobsight/jobsight/agent/rawio"
)

// maxFileSize bounds how far a kernel file's read buffer may grow; a file
// larger than this (a cgroup.procs of a million pids) is reported as an
// error rather than exhausting memory.
const maxFileSize = 16 << 20

// kernFile is a kernel-generated file (cgroupfs, procfs) opened once and
// re-read with pread at offset 0, which makes the kernel regenerate its
// contents. fd is -1 when the file could not be opened; err then says why.
type kernFile struct {
	path string
	fd   int
	err  error
	// mayWait: a read can wait on another process (openProcIO), so it is
	// an ordinary system call; every other kernel file is read raw.
	mayWait bool
}

// openKernFile opens path read-only. A missing file gives a kernFile whose
// err wraps os.ErrNotExist, one whose feature the kernel has switched off
// (EOPNOTSUPP) one whose err wraps errFeatureOff; callers decide whether
// that is an error or just an absent kernel feature.
func openKernFile(path string) kernFile {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return kernFile{path: path, fd: -1, err: fileError("opening", path, err)}
	}
	return kernFile{path: path, fd: fd}
}

// errFeatureOff says that the kernel has a file but the feature behind it
// switched off: the pressure (PSI) files of a kernel booted with psi=0
// answer EOPNOTSUPP (kernels before 6.1; later ones do not create them).
// Such a file is an absent feature, as if it did not exist.
var errFeatureOff = errors.New("kernel feature switched off")

// featureOff reports whether a system call's error says the kernel's
// feature behind a file is switched off.
func featureOff(err error) bool { return errors.Is(err, unix.EOPNOTSUPP) }

// switchOff closes a file whose read said its feature is switched off
// (err, from read, wraps errFeatureOff), so it is not read again: it stays
// missing, without an error, like an absent file.
func (f *kernFile) switchOff(err error) {
	f.close()
	f.err = err
}

// ok reports whether the file is open.
func (f *kernFile) ok() bool { return f.fd >= 0 }

// read re-reads the whole file into *buf (growing it when the contents fill
// it) and returns the bytes read. The returned slice aliases *buf.
func (f *kernFile) read(buf *[]byte) ([]byte, error) {
	if f.fd < 0 {
		if f.err != nil {
			return nil, f.err
		}
		return nil, fmt.Errorf("reading %s: file is closed: %w", f.path, os.ErrClosed)
	}
	for {
		n, err := f.pread(*buf)
		if err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return nil, fileError("reading", f.path, err)
		}
		if n < len(*buf) {
			return (*buf)[:n], nil
		}
		if len(*buf) >= maxFileSize {
			return nil, fmt.Errorf("reading %s: file larger than %d bytes", f.path, maxFileSize)
		}
		*buf = make([]byte, 2*len(*buf))
	}
}

// pread reads buf's length at offset 0. Kernel files the agent reads at
// every wake-up are read without telling the Go scheduler (agent/rawio):
// cgroupfs files and /proc/<pid>/stat, which the kernel fills in from its
// counters under short locks. /proc/<pid>/io is not: its read waits while
// the process is in the middle of an exec, and an exec closing a file on
// a hung NFS server can hold that for as long as the server is gone; an
// ordinary call lets the rest of the agent (its socket, its sender) go
// on meanwhile.
func (f *kernFile) pread(buf []byte) (int, error) {
	if f.mayWait {
		return unix.Pread(f.fd, buf, 0)
	}
	return rawPread(f.fd, buf)
}

// rawPread is rawio.Pread. A test (never a parallel one) may replace it to
// make a read fail as only a kernel's file does: the pressure files of a
// kernel booted with psi=0 answer EOPNOTSUPP.
var rawPread = rawio.Pread

// openProcIO opens a process's /proc/<pid>/io (read with an ordinary
// system call: see pread).
func openProcIO(path string) kernFile {
	f := openKernFile(path)
	f.mayWait = true
	return f
}

// close releases the descriptor; closing twice is harmless.
func (f *kernFile) close() error {
	if f.fd < 0 {
		return nil
	}
	err := unix.Close(f.fd)
	f.fd = -1
	f.err = nil
	if err != nil {
		return fmt.Errorf("closing %s: %w", f.path, err)
	}
	return nil
}

// fileError wraps a system call error on path. Errors that mean the cgroup
// or process is gone (ENOENT, ESRCH, ENODEV on a removed cgroup) also wrap
// os.ErrNotExist, so callers can test for a vanished job with errors.Is.
func fileError(op, path string, err error) error {
	if isGone(err) && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%s %s: %w: %w", op, path, os.ErrNotExist, err)
	}
	if featureOff(err) {
		return fmt.Errorf("%s %s: %w: %w", op, path, errFeatureOff, err)
	}
	return fmt.Errorf("%s %s: %w", op, path, err)
}

// isGone reports whether err says the file's cgroup or process no longer
// exists.
func isGone(err error) bool {
	return errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ESRCH) || errors.Is(err, unix.ENODEV)
}

// errGoneProc says a pid now names a different process than the one
// followed.
var errGoneProc = fmt.Errorf("process replaced: %w", os.ErrNotExist)

// newBuf returns a read buffer of the default size.
func newBuf() []byte { return make([]byte, 4096) }
